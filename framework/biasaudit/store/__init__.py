"""Persistent store: response cache keyed by request hash, run records, measured throughput."""

from biasaudit.store.sqlite import Store, Throughput, speed_key

__all__ = ["Store", "Throughput", "speed_key"]
