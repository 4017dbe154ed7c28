"""Hostile data files (issue 26, class 1: "a spec reads any file into stderr"). Every
source a spec or an override can name is an untrusted input file, read through one
helper (`fileio.open_input` / `read_capped`): stimulus sources, calibration control
sets, the replay backend's recorded responses, crosswalk files and the spec itself.
Each is a regular file (no /proc, /sys, /dev, FIFO, socket or directory; symlinks
resolved and the target checked), bounded in size before it is read; and an error
quotes the file's content only as a short scrubbed excerpt (at most
`fileio.EXCERPT_CHARS` printable characters, secrets redacted).

Before the fix `stimuli.source=/proc/self/environ` printed the whole environment (API
keys included) in the "the file has <columns>" error, and a header or value holding a
key was echoed whole."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import tp_spec, write_spec
from tests.unit.hostile._cases import BASE, KEY_ENV, SECRET, assert_no_leak, error_lines, leak_forms

EXCERPT_CHARS = 40  # fileio.EXCERPT_CHARS (checked below); imported late so the old code can be tried
# A value planted in the environment: /proc/self/environ would show it.
SENTINEL_ENV, SENTINEL = "H26_FS_SENTINEL", "environ-sentinel-2f1c9a"

RULES_CAL = """
audit: {name: lr, method: label_rates}
stimuli:
  inline:
    - {id: s1, statement: "Group X is lazy."}
    - {id: s2, statement: "Group Y is rude."}
  id_field: id
probe: {kind: generate, max_tokens: 20, prompt: "{{ statement }}"}
coding:
  stance:
    coder: rules
    labels: [agree, disagree, unclear]
    otherwise: unclear
    rules:
      - {pattern: '^yes', label: agree}
      - {pattern: '^no', label: disagree}
    calibration: {source: control.csv, text: answer, gold: gold}
metrics:
  - {name: label_rate, id: agree_rate, layer: stance, labels: [agree]}
"""
CONTROL = "answer,gold\n" + "".join(f"{'yes' if i % 2 else 'no'} {i},{'agree' if i % 2 else 'disagree'}\n"
                                    for i in range(6))


@pytest.fixture(autouse=True)
def _planted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.setenv(SENTINEL_ENV, SENTINEL)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A folder with a short path (a UNIX socket path is limited to ~107 bytes)."""
    d = Path(tempfile.mkdtemp(prefix="h26", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


# -- where a path can be named: the command and arguments that read it ---------------------------

def _spec(w: Path) -> str:
    tp_spec(w, 3)
    return f"spec={write_spec(w / 's.yaml', BASE)}"


def _cal(w: Path) -> str:
    (w / "control.csv").write_text(CONTROL, encoding="utf-8")
    return f"spec={write_spec(w / 'cal.yaml', RULES_CAL)}"


Slot = tuple[str, Callable[[Path, str], list[str]], str]
SLOTS: dict[str, Slot] = {
    "stimuli.source": ("validate", lambda w, p: [_spec(w), f"stimuli.source={p}"], "stimuli.source"),
    "calibration.source": ("calibrate", lambda w, p: [_cal(w), "model=scripted",
                                                      f"coding.stance.calibration.source={p}"],
                           "coding.stance.calibration.source"),
    "model.responses (replay)": ("validate", lambda w, p: [_spec(w), "model=replay", f"model.responses={p}"],
                                 "model.responses"),
    "report.crosswalk": ("validate", lambda w, p: [_spec(w), f"+report.crosswalk={p}"], "report.crosswalk"),
    "spec": ("validate", lambda w, p: [f"spec={p}"], "spec"),
}


# -- what the path is -----------------------------------------------------------------------------

def _fifo(w: Path, d: Path) -> str:
    os.mkfifo(w / "pipe.csv")
    return str(w / "pipe.csv")


def _socket(w: Path, d: Path) -> str:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(d / "s.csv"))
    s.close()
    return str(d / "s.csv")


def _link(target: str) -> Callable[[Path, Path], str]:
    def build(w: Path, d: Path) -> str:
        (w / "link.csv").symlink_to(target)
        return str(w / "link.csv")
    return build


def _chain(w: Path, d: Path) -> str:
    (w / "c1.csv").symlink_to("/dev/zero")
    (w / "c2.csv").symlink_to(w / "c1.csv")
    (w / "c3.csv").symlink_to("c2.csv")
    return str(w / "c3.csv")


def _loop(w: Path, d: Path) -> str:
    (w / "a.csv").symlink_to(w / "b.csv")
    (w / "b.csv").symlink_to(w / "a.csv")
    return str(w / "a.csv")


def _dir(w: Path, d: Path) -> str:
    (w / "folder.csv").mkdir()
    return str(w / "folder.csv")


def _up_to_proc(w: Path, d: Path) -> str:
    """A relative path that climbs out of the spec's folder into /proc."""
    return "../" * (len(w.parts) + 2) + "proc/self/environ"


def _sys_file(w: Path, d: Path) -> str:
    for p in ("/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/uevent_seqnum", "/sys/power/state"):
        if os.path.isfile(p):
            return p
    pytest.skip("no readable /sys file here")


TARGETS: dict[str, tuple[Callable[[Path, Path], str], str]] = {
    "/proc/self/environ": (lambda w, d: "/proc/self/environ", "kernel pseudo file system"),
    "/proc/self/cmdline": (lambda w, d: "/proc/self/cmdline", "kernel pseudo file system"),
    "/proc/self/root/proc/self/environ": (lambda w, d: "/proc/self/root/proc/self/environ",
                                          "kernel pseudo file system"),
    "relative path up into /proc": (_up_to_proc, "kernel pseudo file system"),
    "/sys file": (_sys_file, "kernel pseudo file system"),
    "/dev/zero": (lambda w, d: "/dev/zero", "not a regular file"),
    "/dev/urandom": (lambda w, d: "/dev/urandom", "not a regular file"),
    "/dev/stdin": (lambda w, d: "/dev/stdin", "not a regular file"),
    "FIFO": (_fifo, "not a regular file"),
    "socket": (_socket, "not a regular file"),
    "directory": (_dir, "a directory"),
    "symlink to /proc/self/environ": (_link("/proc/self/environ"), "kernel pseudo file system"),
    "symlink chain to /dev/zero": (_chain, "not a regular file"),
    "symlink loop": (_loop, "loop"),
}
ENVIRON_LIKE = {"/proc/self/environ", "/proc/self/root/proc/self/environ", "relative path up into /proc",
                "symlink to /proc/self/environ"}


# a spec path is taken relative to the working folder, not to a spec: no "up from the
# spec's folder" case for the spec itself
CASES = [(slot, target) for slot in SLOTS for target in TARGETS
         if not (slot == "spec" and target == "relative path up into /proc")]


@pytest.mark.parametrize(("slot", "target"), CASES)
def test_a_source_is_a_regular_file_never_a_pseudo_file_device_or_pipe(
        workdir: Path, cli, short_dir: Path, slot: str, target: str) -> None:  # type: ignore[no-untyped-def]
    command, args, key = SLOTS[slot]
    build, why = TARGETS[target]
    path = build(workdir, short_dir)
    code, out, err = cli(command, *args(workdir, path))
    assert "Traceback" not in err, err
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "hint:" in lines[0], err
    assert key in lines[0] and why in lines[0], lines[0]
    assert SENTINEL not in out + err and "PATH=" not in err  # nothing of the environment
    assert_no_leak(workdir, out, err)


# -- content quoted in errors: short, scrubbed --------------------------------------------------

def _header_case(header: str) -> Callable[[Path], list[str]]:
    def build(w: Path) -> list[str]:
        row = ",".join(["v"] * (header.count(",") + 1))  # as many fields as the header: the columns are checked
        (w / "data.csv").write_text(f"{header}\n{row}\n", encoding="utf-8")
        return [_spec(w), f"stimuli.source={w / 'data.csv'}"]
    return build


def _value_case(value: str) -> Callable[[Path], list[str]]:
    """A crows_pairs row whose direction cell holds `value` (the adapter quotes it)."""
    def build(w: Path) -> list[str]:
        (w / "data.csv").write_text(",sent_more,sent_less,stereo_antistereo,bias_type\n"
                                    f"0,A x.,B x.,{value},race\n", encoding="utf-8")
        return [_spec(w), f"stimuli.source={w / 'data.csv'}"]
    return build


def _where_case(value: str) -> Callable[[Path], list[str]]:
    def build(w: Path) -> list[str]:
        (w / "data.csv").write_text(",sent_more,sent_less,stereo_antistereo,bias_type\n"
                                    f"0,A x.,B x.,stereo,{value}\n", encoding="utf-8")
        return [_spec(w), f"stimuli.source={w / 'data.csv'}", "+stimuli.where={bias_type: [nothing]}"]
    return build


def _control_header(header: str) -> Callable[[Path], list[str]]:
    def build(w: Path) -> list[str]:
        spec = _cal(w)
        (w / "control.csv").write_text(header + "\nyes,agree\n", encoding="utf-8")
        return [spec, "model=scripted"]
    return build


LONG = "column_" + "x" * 400
TOKEN = "ghp_" + "Ab9" * 12  # a generated-looking key no variable holds
ECHO: dict[str, tuple[Callable[[Path], list[str]], str, list[str]]] = {
    # name: (build, command, text that must not appear in the error)
    "API key as a column name": (_header_case(f"{SECRET},other"), "validate", [SECRET, SECRET[:12]]),
    "password assignment in the header": (_header_case("password=hunter2hunter2,x"), "validate", ["hunter2"]),
    "token assignment in the header": (_header_case("auth_token: s3cr3t-value-here,x"), "validate",
                                       ["s3cr3t-value"]),
    "generated key in the header": (_header_case(f"{TOKEN},x"), "validate", [TOKEN[:20]]),
    "400-character header": (_header_case(LONG), "validate", ["x" * EXCERPT_CHARS]),
    "API key as a cell value": (_value_case(SECRET), "validate", [SECRET, SECRET[:12]]),
    "400-character cell value": (_value_case("v" * 400), "validate", ["v" * 200]),
    "API key among `where` values": (_where_case(SECRET), "validate", [SECRET, SECRET[:12]]),
    "API key in a control set header": (_control_header(f"{SECRET},gold"), "calibrate", [SECRET, SECRET[:12]]),
}


@pytest.mark.parametrize("name", list(ECHO))
def test_errors_quote_file_content_only_as_a_short_scrubbed_excerpt(workdir: Path, cli, name: str) -> None:  # type: ignore[no-untyped-def]
    build, command, never = ECHO[name]
    code, out, err = cli(command, *build(workdir))
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and "hint:" in lines[0], err
    for text in never:
        assert text not in lines[0], lines[0]
    assert not [f for f in leak_forms() if f in out + err], err  # the data file holds it: only the output


def test_the_size_is_checked_before_reading(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A sparse file of 64 GiB: refused from its size, with no byte read (before the fix
    the limit's worth was read first)."""
    big = workdir / "big.csv"
    with big.open("wb") as f:
        f.truncate(64 * 2**30)
    code, _, err = cli("validate", _spec(workdir), f"stimuli.source={big}")
    [line] = error_lines(err)
    assert code == 2 and f"({64 * 2**30} bytes)" in line and "runtime.limits.max_data_bytes" in line, line


def test_the_size_cap_binds_the_replayed_responses(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    trail = workdir / "responses.jsonl"
    trail.write_text('{"status": "failed"}\n' * 100, encoding="utf-8")
    code, _, err = cli("run", _spec(workdir), "model=replay", f"model.responses={trail}",
                       "runtime.limits.max_data_bytes=1000",  # the stimuli fit, the 2,100-byte trail does not
                       f"runtime.cache={workdir / 'c.sqlite'}", f"runtime.reports_dir={workdir / 'reports'}",
                       "runtime.progress=false")
    [line] = error_lines(err)
    assert code == 2 and "model.responses" in line and "larger than 1000 bytes" in line, line


@pytest.mark.parametrize("line", ["[1, 2]", '{"status": "ok"}', '{"status": "ok", "request": 3}'])
def test_a_recorded_response_of_the_wrong_shape_is_one_line(workdir: Path, cli, line: str) -> None:  # type: ignore[no-untyped-def]
    """Before the fix a JSON line that is not a recorded response was a traceback (exit 70)."""
    trail = workdir / "responses.jsonl"
    trail.write_text(line + "\n", encoding="utf-8")
    code, _, err = cli("run", _spec(workdir), "model=replay", f"model.responses={trail}",
                       f"runtime.cache={workdir / 'c.sqlite'}", f"runtime.reports_dir={workdir / 'reports'}",
                       "runtime.progress=false")
    [msg] = error_lines(err)
    assert code == 2 and "line 1" in msg and "model.responses" in msg, err


# -- the helpers themselves ----------------------------------------------------------------------

def test_excerpt_is_short_printable_and_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    from biasaudit._util import fileio
    from biasaudit._util.fileio import excerpt, names_excerpt

    assert fileio.EXCERPT_CHARS == EXCERPT_CHARS
    text = f"a\x00b\x1b[31m {SECRET} " + "z" * 200
    out = excerpt(text)
    assert len(out) <= EXCERPT_CHARS and out.isprintable() and SECRET[:8] not in out
    assert excerpt("key = abcdefgh12") == "key = [REDACTED]"
    assert names_excerpt(["sent_more", "sent_less"]) == "sent_more, sent_less"
    assert names_excerpt([f"c{i}" for i in range(40)]).endswith("(40 in all)")


def test_read_capped_refuses_a_pseudo_file_mounted_elsewhere(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose size reads 0 but which has content (procfs at another mount point)."""
    import biasaudit._util.fileio as fileio
    from biasaudit._util.fileio import read_capped

    f = tmp_path / "fake.csv"
    f.write_text("a,b\n")
    real_fstat = os.fstat

    def zero_size(fd: int) -> os.stat_result:
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, 0,
                               int(st.st_atime), int(st.st_mtime), int(st.st_ctime)))

    monkeypatch.setattr(fileio.os, "fstat", zero_size)
    with pytest.raises(fileio.DataError, match="size reads 0"):
        read_capped(f, 100)
