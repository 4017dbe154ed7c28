"""The coders shipped with biasaudit: rules, choice, judge_panel, classifier, claims,
embedding, human. Each module registers its coder (`CODERS.add`) when imported, as a
plug-in's module does; core code reads a coder only through its `CoderDef`."""

from biasaudit.coding.coders import choice, claims, classifier, embedding, human, judge_panel, rules

__all__ = ["choice", "claims", "classifier", "embedding", "human", "judge_panel", "rules"]
