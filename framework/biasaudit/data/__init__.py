"""Stimulus loading: csv / jsonl / inline, published-format adapters, sampling."""

from biasaudit.data.adapters import ADAPTERS, Adapter
from biasaudit.data.load import load_stimuli, resolve_source
from biasaudit.data.readers import file_sha256, read_csv, read_jsonl
from biasaudit.data.records import Stimulus, StimulusSet

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
