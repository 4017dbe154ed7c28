"""`biasaudit pack` and `biasaudit verify`: help text and one-line errors on bad input
(the packs themselves: tests/integration/test_evidence_pack.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.cli.app import main


@pytest.mark.parametrize(("cmd", "words"), [("pack", ["--sign-key-env", "MANIFEST.json", "Annex IV", "--force"]),
                                             ("verify", ["--public-key", "byte-identical", "Exit code 0"])])
def test_help(cmd: str, words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([cmd, "--help"])
    assert exc.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert all(w in out for w in words), out


def test_bad_inputs_are_one_line_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", str(tmp_path / "missing"), "-o", str(tmp_path / "a.zip")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such folder" in err and not (tmp_path / "a.zip").exists()
    (tmp_path / "key.pem").write_text("not a key")
    assert main(["pack", str(tmp_path), "-o", str(tmp_path / "a.zip"), "--sign-key", str(tmp_path / "key.pem")]) == 2
    assert "not a PEM private key" in capsys.readouterr().err
    assert main(["pack", str(tmp_path), "-o", str(tmp_path / "a.zip"), "--sign-key-env", "BIASAUDIT_NO_SUCH_VAR"]) == 2
    assert "BIASAUDIT_NO_SUCH_VAR is not set" in capsys.readouterr().err
    (tmp_path / "x.zip").write_bytes(b"PK\x03\x04 broken")
    assert main(["verify", str(tmp_path / "x.zip")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a zip file" in err


def test_signing_keys_that_cannot_sign_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    pem = serialization.Encoding.PEM
    pkcs8 = serialization.PrivateFormat.PKCS8
    (tmp_path / "ec.pem").write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        pem, pkcs8, serialization.NoEncryption()))
    (tmp_path / "locked.pem").write_bytes(Ed25519PrivateKey.generate().private_bytes(
        pem, pkcs8, serialization.BestAvailableEncryption(b"passphrase")))
    for name, why in (("ec.pem", "not Ed25519"), ("locked.pem", "the signing key is encrypted")):
        assert main(["pack", str(tmp_path), "-o", str(tmp_path / "a.zip"), "--sign-key", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and why in err and "--sign-key" in err
    assert not (tmp_path / "a.zip").exists()
