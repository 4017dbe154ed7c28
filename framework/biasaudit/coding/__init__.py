"""The coding stage: named layers turn responses into codes (labels or values), each by
a registered coder; reliability pairs compare layers. See docs/architecture.md."""

from biasaudit.coding import coders as _shipped  # noqa: F401  (each shipped coder registers itself)
from biasaudit.coding.base import Answers, CallEstimate, Coder, CoderDef, CoderEnv, CodingRequest
from biasaudit.records.codes import ABSTAIN, Code, CodeDetail, CodeStatus, Unit
from biasaudit.registry import CODERS

__all__ = [
    "ABSTAIN",
    "Answers",
    "CODERS",
    "CallEstimate",
    "Code",
    "CodeDetail",
    "CodeStatus",
    "Coder",
    "CoderDef",
    "CoderEnv",
    "CodingRequest",
    "Unit",
]
