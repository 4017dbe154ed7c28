"""Stimulus loading: csv / jsonl / inline, published-format adapters, sampling."""

from .adapters import ADAPTERS, Adapter
from .load import load_stimuli, resolve_source
from .readers import file_sha256, read_csv, read_jsonl
from .records import Stimulus, StimulusSet

__all__ = [
    "ADAPTERS",
    "Adapter",
    "Stimulus",
    "StimulusSet",
    "file_sha256",
    "load_stimuli",
    "read_csv",
    "read_jsonl",
    "resolve_source",
]
