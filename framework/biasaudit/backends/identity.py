"""Model identity for request hashing and the manifest: content hashes of weight files."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

_MEMO_FILE = Path(os.environ.get("BIASAUDIT_HASH_MEMO", Path.home() / ".cache" / "biasaudit" / "file-hashes.json"))


def sha256_file(path: Path) -> str:
    """SHA-256 of a file, memoised by (path, size, mtime) so large weights hash once."""
    st = path.stat()
    memo_key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    memo: dict[str, str] = {}
    try:
        memo = json.loads(_MEMO_FILE.read_text())
    except (OSError, ValueError):
        memo = {}
    if memo_key in memo:
        return memo[memo_key]
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    digest = h.hexdigest()
    memo[memo_key] = digest
    from biasaudit._util.fileio import atomic_write
    from biasaudit.errors import BiasAuditError

    with contextlib.suppress(BiasAuditError):  # a memo only: a failed write costs a re-hash
        atomic_write(_MEMO_FILE, json.dumps(memo), key="BIASAUDIT_HASH_MEMO", what="hash memo")
    return digest


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".json", ".model", ".txt")


def directory_digest(path: Path) -> str:
    """One digest over the weight, config and tokenizer files of a model directory."""
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        if f.is_file() and f.suffix in WEIGHT_SUFFIXES and ".cache" not in f.parts:
            h.update(str(f.relative_to(path)).encode())
            h.update(sha256_file(f).encode())
    return h.hexdigest()
