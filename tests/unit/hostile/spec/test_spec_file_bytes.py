"""A fresh round on the spec surface (issue 26): the bytes and the YAML shape of a spec
file. Encodings (BOM, CRLF, CR, UTF-16, latin-1, NUL), documents that are not a mapping
of sections (a JSON array, a scalar, two documents, comments only), keys that are not
names (null, a list, an int, control characters), sections of the wrong kind, tags,
YAML 1.1 words, and sizes (a 10 MB scalar, a 2 MB comment). Each ends with exit code 0,
or one line with a hint and exit code 2; never a traceback, never a run folder."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.helpers import tp_spec
from tests.unit.hostile._cases import BASE, Case, run_case

B = BASE.encode("utf-8")


def _raw(data: bytes) -> Callable[[Path], list[str]]:
    def build(w: Path) -> list[str]:
        tp_spec(w, 3)
        p = w / "raw.yaml"
        p.write_bytes(data)
        return [f"spec={p}"]
    return build


CASES: dict[str, Case] = {
    # -- encodings and line ends ---------------------------------------------------------------
    "BOM and CRLF": Case("ENC", _raw(b"\xef\xbb\xbf" + B.replace(b"\n", b"\r\n"))),
    "CR line ends only": Case("ENC", _raw(B.replace(b"\n", b"\r"))),
    "NUL in a comment": Case("ENC", _raw(B + b"# a \x00 b\n"), ["unacceptable character #x0000"]),
    "latin-1 byte in a comment": Case("ENC", _raw(B + b"# caf\xe9\n"), ["not UTF-8 text (invalid byte on line 9)"]),
    "UTF-16 with its BOM": Case("ENC", _raw(BASE.encode("utf-16")), ["not UTF-8 text"]),
    "UTF-32": Case("ENC", _raw(BASE.encode("utf-32")), ["not UTF-8 text"]),
    "NBSP as indentation": Case("ENC", _raw(B.replace(b"  kind", "\u00a0 kind".encode())), ["YAML syntax error"]),
    "zero-width space in a value": Case("ENC", _raw(B.replace(b"mode: ar_full", "mode: ar_\u200bfull".encode())),
                                        ["metrics[0].mode", "did you mean 'ar_full'"]),
    # -- documents that are not a mapping of sections ---------------------------------------------
    "a JSON array": Case("DOC", _raw(b"[1, 2, 3]\n"), ["(root)", "not a sequence"]),
    "the spec as one JSON object": Case("DOC", _raw(json.dumps(yaml.safe_load(BASE)).encode())),
    "a bare scalar": Case("DOC", _raw(b"hello\n"), ["(root)", "not a scalar"]),
    "comments only": Case("DOC", _raw(b"# nothing\n# here\n"), ["the spec file is empty"]),
    "two YAML documents": Case("DOC", _raw(B + b"---\n" + B), ["found another document"]),
    "a tab as indentation": Case("DOC", _raw(B.replace(b"  kind", b"\tkind")), ["cannot start any token"]),
    "a top-level key twice": Case("DOC", _raw(B + b"audit: {name: u, method: token_probability}\n"),
                                  ["duplicate key 'audit'"]),
    # -- keys that are not names ---------------------------------------------------------------------
    "a null key": Case("KEY", _raw(B + b"report: {null: 1}\n"), ["report", "a key must be a name, not null"]),
    "a tilde key": Case("KEY", _raw(B + b"report: {~: 1}\n"), ["a key must be a name, not null"]),
    "a list as a key": Case("KEY", _raw(B + b"? [a, b]\n: c\n"), ["a key must be a name, not a sequence"]),
    "a mapping as a key": Case("KEY", _raw(B + b"report: {? {a: 1} : x}\n"), ["a key must be a name, not a mapping"]),
    "an integer factor name": Case("KEY", _raw(B + b"factors: {1: {a: {}, b: {}}}\n"), ["(got 1)"]),
    "a control character in a key": Case("KEY", _raw(B + b'report: {"a\\nb": 1}\n'), ["unknown key 'a\\nb'"]),
    "a 100k-character key": Case("KEY", _raw(B + b"report: {" + b"k" * 100_000 + b": 1}\n"), ["YAML syntax error"]),
    "yes as a key": Case("KEY", _raw(B + b"yes: 1\n"), ["'yes' is read as True by YAML 1.1"]),
    # -- sections of the wrong kind ----------------------------------------------------------------------
    "report as a list": Case("KIND", _raw(B + b"report: [1]\n"), ["report", "must be a mapping, not a list"]),
    "validity as a list": Case("KIND", _raw(B + b"validity: [0.5]\n"), ["validity", "must be a mapping, not a list"]),
    "report formats as a mapping": Case("KIND", _raw(B + b"report: {formats: {html: 1}}\n"),
                                        ["a list stands where a mapping belongs"]),
    "report as null": Case("KIND", _raw(B + b"report: null\n"), ["report", "(got None)"]),
    "binary tag": Case("KIND", _raw(B + b"report: {title: !!binary aGVsbG8=}\n"), ["tag", "is not allowed"]),
    "set tag": Case("KIND", _raw(B + b"report: {formats: !!set {html: null}}\n"), ["tag", "is not allowed"]),
    "omap tag": Case("KIND", _raw(B + b"report: !!omap [{title: x}]\n"), ["tag", "is not allowed"]),
    # -- sizes ---------------------------------------------------------------------------------------------
    "a 10 MB scalar": Case("SIZE", _raw(B + b"report: {title: '" + b"x" * 10_000_000 + b"'}\n"),
                           ["larger than 8388608 bytes"]),
    "a 2 MB comment": Case("SIZE", _raw(B + b"# " + b"y" * 2_000_000 + b"\n")),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_spec_file(workdir: Path, cli, monkeypatch: pytest.MonkeyPatch, name: str) -> None:  # type: ignore[no-untyped-def]
    run_case(CASES[name], workdir, cli, monkeypatch)
