"""Cross-run comparison (`biasaudit compare`): side by side, paired, ranked."""
