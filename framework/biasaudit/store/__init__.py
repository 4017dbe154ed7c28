"""Persistent store: response cache keyed by request hash, and run records."""

from .sqlite import Store

__all__ = ["Store"]
