"""The audit spec language: Pydantic models, validation with located errors, JSON Schema."""

from typing import Any

from biasaudit.spec.load import ConfigErrors, read_yaml, validate_config
from biasaudit.spec.model_configs import (
    AnthropicConfig,
    BaseModelConfig,
    HFCausalConfig,
    HFMaskedConfig,
    ModelConfig,
    ModelPrice,
    OpenAICompatConfig,
    OracleConfig,
    ReplayConfig,
    ScriptedConfig,
    model_config,
)
from biasaudit.spec.models import (
    PROBE_KINDS,
    AuditConfig,
    AuditMeta,
    BatchConfig,
    BudgetConfig,
    CalibrationSpec,
    CodingLayerSpec,
    DesignSpec,
    EmbedderConfig,
    GenerateSpec,
    JudgePanelConfig,
    JudgeSpec,
    LevelSpec,
    MetricSpec,
    NLIConfig,
    ProbeSpec,
    ReliabilityPairSpec,
    ReportSpec,
    RuntimeConfig,
    RuntimeLimits,
    SequentialConfig,
    StimuliSpec,
    ThresholdSpec,
    ValiditySpec,
)


def json_schema() -> dict[str, Any]:
    """JSON Schema of the composed configuration (spec sections + run-time groups)."""
    return AuditConfig.model_json_schema()


__all__ = [
    "PROBE_KINDS",
    "AuditConfig",
    "AuditMeta",
    "BaseModelConfig",
    "HFCausalConfig",
    "HFMaskedConfig",
    "ModelPrice",
    "OpenAICompatConfig",
    "AnthropicConfig",
    "OracleConfig",
    "ReplayConfig",
    "ScriptedConfig",
    "model_config",
    "CalibrationSpec",
    "CodingLayerSpec",
    "ConfigErrors",
    "DesignSpec",
    "EmbedderConfig",
    "JudgePanelConfig",
    "JudgeSpec",
    "GenerateSpec",
    "LevelSpec",
    "MetricSpec",
    "ModelConfig",
    "NLIConfig",
    "ProbeSpec",
    "ReliabilityPairSpec",
    "ReportSpec",
    "ValiditySpec",
    "BatchConfig",
    "RuntimeConfig",
    "RuntimeLimits",
    "BudgetConfig",
    "SequentialConfig",
    "StimuliSpec",
    "ThresholdSpec",
    "json_schema",
    "read_yaml",
    "validate_config",
]
