"""Ed25519 signatures of a pack's MANIFEST.json, with the `cryptography` package. The
operator names the private key (a PEM file, or an environment variable holding the PEM);
the pack holds the signature and the public key, and `verify --public-key` checks the
signature against the key the reviewer trusts."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from biasaudit._util.fileio import read_capped
from biasaudit._util.secrets import watch_value
from biasaudit.errors import BiasAuditError

_MAX_KEY_BYTES = 64 * 1024
_KEY_HINT = ("an unencrypted Ed25519 private key in PEM (PKCS#8), e.g. `openssl genpkey -algorithm ed25519 "
             "-out key.pem`")


def _private_from_pem(pem: bytes, where: str, key: str) -> Ed25519PrivateKey:
    try:
        k = serialization.load_pem_private_key(pem, password=None)
    except TypeError:
        raise BiasAuditError("the signing key is encrypted", file=where, key=key, hint=_KEY_HINT) from None
    except (ValueError, UnsupportedAlgorithm):
        raise BiasAuditError("not a PEM private key", file=where, key=key, hint=_KEY_HINT) from None
    if not isinstance(k, Ed25519PrivateKey):
        raise BiasAuditError(f"the signing key is {type(k).__name__.removeprefix('_')}, not Ed25519", file=where,
                             key=key, hint=_KEY_HINT)
    return k


def _watch_pem(text: str) -> None:
    """The key's PEM text and each of its base64 lines are secrets (the armour lines are not)."""
    watch_value(text.strip())
    for line in text.splitlines():
        if not line.startswith("-----"):
            watch_value(line.strip())


def load_signing_key(path: str | None, env: str | None) -> Ed25519PrivateKey | None:
    """The operator's private key (None: the pack is not signed). Its PEM text is scrubbed
    from everything written from now on, like an API key."""
    if path is None and env is None:
        return None
    if path is not None and env is not None:
        raise BiasAuditError("both --sign-key and --sign-key-env given", key="--sign-key", hint="give one")
    if env is not None:
        pem = os.environ.get(env)
        if not pem:
            raise BiasAuditError(f"the environment variable {env} is not set or empty", key="--sign-key-env",
                                 hint=f"export {env} with the PEM text of an Ed25519 private key")
        _watch_pem(pem)
        return _private_from_pem(pem.encode("utf-8"), f"${env}", "--sign-key-env")
    assert path is not None
    raw = read_capped(Path(path).expanduser(), _MAX_KEY_BYTES, key="--sign-key", what="signing key",
                      error=BiasAuditError, hint=_KEY_HINT)
    _watch_pem(raw.decode("utf-8", errors="replace"))
    return _private_from_pem(raw, path, "--sign-key")


def public_pem(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def fingerprint(key: Ed25519PublicKey) -> str:
    """SHA-256 of the raw 32-byte public key."""
    return hashlib.sha256(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)).hexdigest()


def load_public_key(pem: bytes, where: str, key: str | None = None) -> Ed25519PublicKey:
    try:
        k = serialization.load_pem_public_key(pem)
    except (ValueError, UnsupportedAlgorithm):
        raise BiasAuditError("not a PEM public key", file=where, key=key,
                             hint="give the Ed25519 public key in PEM (`openssl pkey -in key.pem -pubout`)") from None
    if not isinstance(k, Ed25519PublicKey):
        raise BiasAuditError("the public key is not an Ed25519 key", file=where, key=key,
                             hint="give the Ed25519 public key the pack was signed with")
    return k


def read_public_key(path: str) -> Ed25519PublicKey:
    raw = read_capped(Path(path).expanduser(), _MAX_KEY_BYTES, key="--public-key", what="public key",
                      error=BiasAuditError, hint="give the Ed25519 public key in PEM")
    return load_public_key(raw, path, "--public-key")


def sign(key: Ed25519PrivateKey, data: bytes) -> bytes:
    return key.sign(data)


def signature_ok(key: Ed25519PublicKey, signature: bytes, data: bytes) -> bool:
    try:
        key.verify(signature, data)
    except InvalidSignature:
        return False
    return True
