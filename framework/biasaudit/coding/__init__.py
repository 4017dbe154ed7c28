"""The coding stage: named layers turn responses into codes (labels or values), each by
a registered coder; reliability pairs compare layers. See docs/architecture.md."""

from biasaudit.coding.base import (
    ABSTAIN,
    Answers,
    CallEstimate,
    Code,
    Coder,
    CoderDef,
    CoderEnv,
    CodeStatus,
    CodingRequest,
    Unit,
)
from biasaudit.coding.coders import SHIPPED
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
