"""Issue 39 red team (round 4): model answers holding characters that break lines.

A model server chooses its answers. One scripted generate run whose answers each hold one
hostile character (every character `str.splitlines` breaks at, NUL, a 2 MB line), then
every tool that reads the run's trail: the trail itself (responses.jsonl, codes.jsonl),
`view`, `annotate export`, `pack` and `verify`, `report`, and `model=replay`. Then the trail
damaged by hand (invalid UTF-8, a cut last line, a NUL byte, an empty file) given to the
readers, and a server answering a lone surrogate (`"\\ud800"` in its JSON).

The safe outcome: every answer read back exactly as the model wrote it, every tool exit 0;
a trail damaged on disk is one error line (exit 2) naming the file, never a traceback.
Before issue 39 item 3 (one trail reader splitting on "\\n" only) the trail readers split
lines on U+2028 and the like, and these cases failed; they pass now, with no mark."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import finished_run, page_data, read_jsonl, spec_and_operator
from tests.unit.hostile._cases import error_lines

TRAIL = "issue 39 item 3 (trail split only on \\n), fixed on branch wt-trail"

BREAKS: dict[str, str] = {
    "LF": "\n", "CR": "\r", "CRLF": "\r\n", "VT": "\x0b", "FF": "\x0c", "FS": "\x1c", "GS": "\x1d", "RS": "\x1e",
    "NEL": "\x85", "LS": "\u2028", "PS": "\u2029", "NUL": "\x00", "BOM": "\ufeff", "RLO": "\u202e",
}
HUGE = "huge " * 400_000  # a 2 MB line


def _answer(name: str) -> str:
    return f"Answer {name}: first{BREAKS[name]}second{BREAKS[name]}" if name in BREAKS else HUGE


NAMES = [*BREAKS, "HUGE"]


def _spec() -> str:
    rows = "\n".join(f"    - {{id: s{i}, statement: {json.dumps('Item ' + n + ' x')}, category: c{i % 2}}}"
                     for i, n in enumerate(NAMES))
    replies = "\n".join(f"      {json.dumps('Item ' + n + ' x')}: {json.dumps(_answer(n))}" for n in NAMES)
    return f"""
audit: {{name: rt4-trail, method: label_rates}}
stimuli:
  inline:
{rows}
  id_field: id
probe: {{kind: generate, max_tokens: 20, prompt: "{{{{ statement }}}}"}}
coding:
  refusal:
    coder: rules
    labels: [refuse, answer]
    otherwise: answer
    rules: [{{keywords: ["second"], label: refuse}}]
    expect_dominant: true
metrics:
  - {{name: label_rate, id: refusal_rate, layer: refusal, labels: [refuse]}}
model:
  backend: scripted
  name: subject
  script:
    replies:
{replies}
"""


def _cli(*args: str) -> tuple[int, str, str]:
    from biasaudit.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@dataclass(frozen=True)
class Trail:
    run: Path
    work: Path
    ops: list[str]
    spec: Path


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> Trail:
    w = tmp_path_factory.mktemp("rt4-trail")
    (w / "reports").mkdir()
    spec, ops = spec_and_operator(w / "trail.yaml", _spec())
    run = finished_run(w, _cli, spec, ops, "runtime.limits.max_coding_chars=3000000")
    return Trail(run, w, ops, spec)


@pytest.fixture(autouse=True)
def _no_chromium(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIASAUDIT_CHROMIUM", "/nonexistent")


def _row(rows: list[dict[str, object]], name: str) -> dict[str, object]:
    i = NAMES.index(name)
    return next(r for r in rows if f"s{i}" == str(r.get("stimulus_id", r.get("unit_id", ""))).split("|")[0]
                or f"Item {name} x" in json.dumps(r, ensure_ascii=False))


def _texts(obj: object) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _texts(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _texts(v)


@pytest.mark.parametrize("name", NAMES)
def test_the_answer_is_stored_in_the_trail_exactly(trail: Trail, name: str) -> None:
    rows = read_jsonl(trail.run / "responses.jsonl")
    assert len(rows) == len(NAMES)
    assert _answer(name) in set(_texts(rows)), f"the {name} answer is not in responses.jsonl as written"


@pytest.mark.parametrize("name", NAMES)
def test_the_answer_is_coded_once(trail: Trail, name: str) -> None:
    codes = read_jsonl(trail.run / "codes.jsonl")
    assert len(codes) == len(NAMES)
    expected = "answer" if name == "HUGE" else "refuse"
    mine = [c for c in codes if str(NAMES.index(name)) in json.dumps(c) and expected in json.dumps(c)]
    assert mine, f"no {expected} code for the {name} answer"


@pytest.fixture(scope="module")
def viewer(trail: Trail, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, str]:
    out = tmp_path_factory.mktemp("rt4-view") / "page.html"
    code, _, err = _cli("view", str(trail.run), "--out", str(out))
    return code, out.read_text(encoding="utf-8") if out.exists() else "", err


@pytest.mark.parametrize("name", NAMES)
def test_the_viewer_shows_the_answer_exactly(viewer: tuple[int, str, str], name: str) -> None:
    code, html, err = viewer
    assert "Traceback" not in err and code == 0, err
    texts = set(_texts(page_data(html)))
    want = _answer(name)
    assert want in texts or (name == "HUGE" and any(t and HUGE.startswith(t[:1000]) for t in texts)), name


@pytest.fixture(scope="module")
def sheet(trail: Trail, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, list[dict[str, object]], str]:
    out = tmp_path_factory.mktemp("rt4-sheet") / "sheet.jsonl"
    code, _, err = _cli("annotate", "export", str(trail.run), "--layer", "refusal", "-o", str(out))
    return code, read_jsonl(out) if out.exists() else [], err


@pytest.mark.parametrize("name", NAMES)
def test_the_review_sheet_holds_the_answer_exactly(sheet: tuple[int, list[dict[str, object]], str], name: str) -> None:
    code, rows, err = sheet
    assert "Traceback" not in err and code == 0, err
    assert _answer(name) in set(_texts(rows)) or (name == "HUGE" and any(HUGE[:1000] in t for t in _texts(rows)))


def test_the_run_packs_and_the_pack_verifies(trail: Trail, tmp_path: Path) -> None:
    code, _, err = _cli("pack", str(trail.run), "-o", str(tmp_path / "a.zip"))
    assert "Traceback" not in err and code == 0, err
    code, out, err = _cli("verify", str(tmp_path / "a.zip"))
    assert code == 0, out + err


def test_the_trail_replays_to_the_same_answers(trail: Trail, tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    code, _, err = _cli("run", "--fail-on", "never", f"spec={trail.spec}", "model=replay",
                        f"model.responses={trail.run / 'responses.jsonl'}", "runtime.limits.max_coding_chars=3000000",
                        *isolation(tmp_path))
    assert "Traceback" not in err and code == 0, err
    [again] = run_dirs(tmp_path)
    got = set(_texts(read_jsonl(again / "responses.jsonl")))
    assert all(_answer(n) in got for n in NAMES)


def test_the_report_rebuilds_from_the_store(trail: Trail, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(trail.run, copy)
    code, _, err = _cli("report", str(copy))
    assert "Traceback" not in err and code in (0, 1, 3), err


# -- a trail damaged on disk ---------------------------------------------------------------------

def _damaged(trail: Trail, d: Path, member: str, how: str) -> Path:
    copy = d / "run"
    shutil.copytree(trail.run, copy)
    p = copy / member
    data = p.read_bytes()
    first, _, rest = data.partition(b"\n")
    if how == "invalid UTF-8":
        data = first.replace(b"Answer", b"Ans\xff\xfewer", 1) + b"\n" + rest
    elif how == "cut last line":
        data = data.rstrip(b"\n")[:-25]
    elif how == "NUL byte":
        data = first[:10] + b"\x00" + first[10:] + b"\n" + rest
    elif how == "empty file":
        data = b""
    elif how == "a JSON list line":
        data = b"[1, 2]\n" + data
    elif how == "UTF-16":
        data = data.decode("utf-8").encode("utf-16")
    p.write_bytes(data)
    return copy


DAMAGE = ["invalid UTF-8", "cut last line", "NUL byte", "empty file", "a JSON list line", "UTF-16"]
READERS = {
    "view": lambda r, d: ["view", str(r), "--out", str(d / "p.html")],
    "annotate": lambda r, d: ["annotate", "export", str(r), "--layer", "refusal", "-o", str(d / "s.csv")],
    "pack": lambda r, d: ["pack", str(r), "-o", str(d / "a.zip")],
}


@pytest.mark.parametrize("member", ["responses.jsonl", "codes.jsonl"])
@pytest.mark.parametrize("how", DAMAGE)
@pytest.mark.parametrize("reader", list(READERS))
def test_a_damaged_trail_is_one_error_line(trail: Trail, tmp_path: Path, reader: str, how: str, member: str) -> None:
    run = _damaged(trail, tmp_path, member, how)
    code, out, err = _cli(*READERS[reader](run, tmp_path))
    assert "Traceback" not in err, err
    if code != 0:
        lines = error_lines(err)
        assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "hint:" in lines[0], err
    if reader == "pack":  # a pack must never hold a trail it cannot verify
        assert code == 2 or _cli("verify", str(tmp_path / "a.zip"))[0] == 0


# -- a server answering a lone surrogate ---------------------------------------------------------------

class _Surrogate(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b'{"choices": [{"message": {"role": "assistant", "content": "half \\ud800 a pair \\udfff x"},' \
               b' "finish_reason": "stop"}]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def surrogate_server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Surrogate)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_a_lone_surrogate_from_the_server_is_stored_and_read_back(surrogate_server: str, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """JSON may escape half a UTF-16 pair; Python decodes it to a str UTF-8 cannot encode.
    The run must finish (the answer kept in some form, or the call failed with a reason),
    the trail must be valid UTF-8 JSON lines, and the viewer must read it."""
    monkeypatch.setenv("RT4_KEY", "sk-round4-none")
    (tmp_path / "reports").mkdir()
    body = _spec().split("model:\n")[0]
    spec = tmp_path / "s.yaml"
    spec.write_text(body, encoding="utf-8")
    code, _, err = _cli("run", "--fail-on", "never", f"spec={spec}", "model=openai_compat",
                        f"model.base_url={surrogate_server}", "model.api_key_env=RT4_KEY", "model.max_retries=0",
                        *isolation(tmp_path))
    assert "Traceback" not in err and code in (0, 1, 3, 4), err
    [run] = run_dirs(tmp_path)
    raw = (run / "responses.jsonl").read_bytes()
    raw.decode("utf-8")  # strict: no surrogate bytes written
    assert len(read_jsonl(run / "responses.jsonl")) == len(NAMES)
    code, _, err = _cli("view", str(run), "--out", str(tmp_path / "p.html"))
    assert "Traceback" not in err and code == 0, err
