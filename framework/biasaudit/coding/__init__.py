"""The coding stage: named layers turn responses into codes (labels or values), each by
a registered coder; reliability pairs compare layers. See docs/architecture.md."""

from biasaudit.coding.base import Answers, CallEstimate, Coder, CoderDef, CoderEnv, CodingRequest
from biasaudit.coding.coders import SHIPPED
from biasaudit.records.codes import ABSTAIN, Code, CodeStatus, Unit
from biasaudit.registry import CODERS

for _name, _coder in SHIPPED.items():
    CODERS.add(_name, _coder)

__all__ = [
    "ABSTAIN",
    "Answers",
    "CODERS",
    "CallEstimate",
    "Code",
    "CodeStatus",
    "Coder",
    "CoderDef",
    "CoderEnv",
    "CodingRequest",
    "Unit",
]
