"""The evidence pack's `MANIFEST.json`: the SHA-256 digest of every file in the pack, what
it was made from, and the key its signature (`MANIFEST.sig`) was made with. Written by
`biasaudit pack`, read back (as untrusted input) by `biasaudit verify`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.records.upgrade import validated

PACK_FORMAT: Literal["biasaudit-evidence-pack/2"] = "biasaudit-evidence-pack/2"
"""The layout this biasaudit writes (records/upgrade/pack.py reads the earlier ones)."""
MANIFEST_NAME = "MANIFEST.json"
SIGNATURE_NAME = "MANIFEST.sig"
PUBLIC_KEY_NAME: Literal["MANIFEST.pub"] = "MANIFEST.pub"


class _Strict(BaseModel):
    # read back from an untrusted zip: an unknown key is a pack this version did not write
    model_config = ConfigDict(extra="forbid", frozen=True)


class PackedFile(_Strict):
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size: int = Field(ge=0)


class PackSigning(_Strict):
    algorithm: Literal["Ed25519"] = "Ed25519"
    public_key_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """SHA-256 of the raw 32-byte public key (its fingerprint)."""
    public_key_file: Literal["MANIFEST.pub"] = PUBLIC_KEY_NAME


class PackManifest(_Strict):
    format: Literal["biasaudit-evidence-pack/2"] = PACK_FORMAT
    created: str
    biasaudit: str
    """The biasaudit version that made the pack."""
    source: Literal["run", "suite"]
    runs: list[str]
    """The run folders under `runs/` (one for a run, one per member run for a suite)."""
    files: dict[str, PackedFile]
    """Every file of the pack but MANIFEST.json and MANIFEST.sig."""
    signing: PackSigning | None = None
    notes: list[str] = Field(default_factory=list)
    """What the pack lacks and why (no PDF, no self-test...), and redactions made."""

    @classmethod
    def read_raw(cls, raw: object, *, file: str) -> tuple[PackManifest, int]:
        """MANIFEST.json as read, any earlier version upgraded, and the version it was."""
        return validated("pack", cls, raw, file=file, name=file)
