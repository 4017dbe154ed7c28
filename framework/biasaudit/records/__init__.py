"""Typed records passed between the stages (responses, codes, metric results, execution counts,
the run summary): data only, importing nothing else of biasaudit."""
