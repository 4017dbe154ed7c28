"""The shipped coders: rules, choice, judge_panel, classifier, claims, embedding, human."""

from biasaudit.coding.coders.choice import CHOICE
from biasaudit.coding.coders.claims import CLAIMS
from biasaudit.coding.coders.classifier import CLASSIFIER
from biasaudit.coding.coders.embedding import EMBEDDING
from biasaudit.coding.coders.human import HUMAN
from biasaudit.coding.coders.judge_panel import JUDGE_PANEL
from biasaudit.coding.coders.rules import RULES

SHIPPED = {
    "rules": RULES,
    "choice": CHOICE,
    "judge_panel": JUDGE_PANEL,
    "classifier": CLASSIFIER,
    "claims": CLAIMS,
    "embedding": EMBEDDING,
    "human": HUMAN,
}

__all__ = ["SHIPPED"]
