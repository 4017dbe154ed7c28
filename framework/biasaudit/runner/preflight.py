"""Checks made before a run writes anything: the cache and the reports folder."""

from __future__ import annotations


def check_outputs(cache: str, reports_dir: str) -> None:
    """The cache is a file (or can be made) and the reports folder can be written,
    checked before Hydra makes a run folder or SQLite opens anything (the output-path
    rule of `fileio`: symlinks followed, no device, FIFO or pseudo file system)."""
    from pathlib import Path

    from biasaudit._util.fileio import check_output_dir
    from biasaudit.errors import StoreError
    from biasaudit.store.sqlite import check_cache_path

    check_cache_path(cache)
    if Path(cache).exists():
        from biasaudit.store import Store

        Store(cache, readonly=True).close()  # SQLite can read it, and it is a biasaudit cache
    check_output_dir(reports_dir, key="runtime.reports_dir", what="reports folder", error=StoreError)


__all__ = ["check_outputs"]
