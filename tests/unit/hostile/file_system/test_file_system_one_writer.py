"""Issue 39, "one writer" (items 2 and 4): every file biasaudit writes outside its store
goes through `biasaudit._util.fileio`, which never writes through a symlink (refused;
with --force the link itself is replaced, its target left alone), refuses a directory,
FIFO, socket or device, leaves an existing file it did not write alone unless --force,
and writes atomically (temporary file in the same folder + rename).

Before the fix: `view RUN --out out.html` with out.html -> victim overwrote the victim; a
received run folder whose viewer.html is a link had the link's target overwritten by a
plain `view RUN`; `--out` replaced an unrelated file silently; `annotate export -o
sheet.csv --force` wrote through a link to its target."""

from __future__ import annotations

import errno
import os
import shutil
import socket
from pathlib import Path

import pytest

from biasaudit._util import fileio
from biasaudit.errors import BiasAuditError
from tests.helpers import VIEWER_SPEC, finished_run, spec_and_operator
from tests.unit.hostile._cases import error_lines

VICTIM = "the victim's own content\n"


def _victim(tmp: Path) -> Path:
    v = tmp / "victim.txt"
    v.write_text(VICTIM, encoding="utf-8")
    return v


def _one_line(code: int, err: str, *must: str) -> None:
    assert "Traceback" not in err, err
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "hint:" in lines[0], err
    for m in must:
        assert m in lines[0], (m, lines[0])


def _no_temporaries(folder: Path) -> None:
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []


# -- the writer itself -------------------------------------------------------------------------

def test_a_link_is_refused_and_with_force_replaced_as_a_link(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    (tmp_path / "out.txt").symlink_to(victim)
    with pytest.raises(BiasAuditError) as exc:
        fileio.write_output_file(tmp_path / "out.txt", "page", key="--out", ours=True)
    msg = exc.value.one_line()
    assert "symbolic link" in msg and str(tmp_path / "out.txt") in msg and "--force" in msg
    assert victim.read_text(encoding="utf-8") == VICTIM and (tmp_path / "out.txt").is_symlink()
    fileio.write_output_file(tmp_path / "out.txt", "page", key="--out", force=True)
    assert not (tmp_path / "out.txt").is_symlink() and (tmp_path / "out.txt").read_text() == "page"
    assert victim.read_text(encoding="utf-8") == VICTIM
    _no_temporaries(tmp_path)


def test_a_dangling_link_is_refused_and_its_target_not_made(tmp_path: Path) -> None:
    (tmp_path / "out.txt").symlink_to(tmp_path / "made.txt")
    with pytest.raises(BiasAuditError, match="symbolic link"):
        fileio.write_output_file(tmp_path / "out.txt", "x", key="k", ours=True)
    assert not (tmp_path / "made.txt").exists()


def test_fifo_socket_directory_and_devices_are_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(tmp_path / "sock"))
    s.close()
    (tmp_path / "dir").mkdir()
    for name, why in (("fifo", "a FIFO"), ("sock", "a socket"), ("dir", "a directory")):
        with pytest.raises(BiasAuditError, match=why):  # never opened: a FIFO would block
            fileio.write_output_file(tmp_path / name, "x", key="k", force=True)
    # devices are classified, never opened or replaced: only /dev/null and a terminal are streams
    with pytest.raises(BiasAuditError, match="a device"):
        fileio.check_output_file("/dev/zero", key="k", force=True)
    with pytest.raises(BiasAuditError, match="a device"):
        fileio.check_output_file("/dev/null", key="k", streams=False)
    assert fileio.check_output_file("/dev/null", key="k").device
    assert fileio.check_output_file("/dev/stdout", key="k").stream == 1
    with pytest.raises(BiasAuditError, match="pseudo file system"):
        fileio.check_output_file("/proc/self/new.txt", key="k")


def test_an_unrelated_file_is_kept_unless_forced(tmp_path: Path) -> None:
    mine = tmp_path / "notes.html"
    mine.write_text("my notes", encoding="utf-8")
    with pytest.raises(BiasAuditError) as exc:
        fileio.write_output_file(mine, "page", key="--out", ours=fileio.HTML_MARKER)
    assert "not a file biasaudit wrote" in exc.value.one_line() and "pass --force to replace it" in exc.value.one_line()
    assert mine.read_text(encoding="utf-8") == "my notes"
    fileio.write_output_file(mine, "page", key="--out", force=True)
    assert mine.read_text(encoding="utf-8") == "page"


def test_its_own_file_is_refreshed(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    fileio.write_output_file(page, f"<head>{fileio.HTML_MARKER.decode()}</head>one", key="--out", ours=fileio.HTML_MARKER)
    fileio.write_output_file(page, f"<head>{fileio.HTML_MARKER.decode()}</head>two", key="--out", ours=fileio.HTML_MARKER)
    assert page.read_text(encoding="utf-8").endswith("two")
    fixed = tmp_path / "summary.json"  # a fixed name in a folder biasaudit owns
    fixed.write_text("old")
    fileio.write_output_file(fixed, "new", key="run", ours=True)
    assert fixed.read_text() == "new"
    _no_temporaries(tmp_path)


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "report.html"
    target.write_text("old report", encoding="utf-8")

    def full(*a: object, **k: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fileio.os, "replace", full)
    with pytest.raises(BiasAuditError, match="the disk is full"):
        fileio.write_output_file(target, "new report", key="run", ours=True)
    monkeypatch.undo()
    assert target.read_text(encoding="utf-8") == "old report"
    _no_temporaries(tmp_path)
    # an error while the block writes: the same
    with pytest.raises(RuntimeError), fileio.open_output(target, "w", key="run", ours=True) as f:
        f.write("half")
        raise RuntimeError("stopped half way")
    assert target.read_text(encoding="utf-8") == "old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_a_link_planted_at_the_destination_meanwhile_is_not_written_through(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    with pytest.raises(BiasAuditError, match="symbolic link"), \
            fileio.open_output(tmp_path / "out.csv", "w", key="-o", ours=True) as f:
        f.write("rows")
        (tmp_path / "out.csv").symlink_to(victim)  # after the first check, before the rename
    assert victim.read_text(encoding="utf-8") == VICTIM
    _no_temporaries(tmp_path)


def test_append_never_follows_a_link(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    (tmp_path / "calls.log").symlink_to(victim)
    with pytest.raises(BiasAuditError, match="symbolic link"), fileio.open_append(tmp_path / "calls.log", key="k") as f:
        f.write("x\n")
    assert victim.read_text(encoding="utf-8") == VICTIM
    for line in ("a\n", "b\n"):
        with fileio.open_append(tmp_path / "new.log", key="k") as f:
            f.write(line)
    assert (tmp_path / "new.log").read_text() == "a\nb\n"


# -- item 2: biasaudit view -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of the viewer's spec, plain texts (line-break characters in answers
    are the trail's class, item 3, tested with the trail)."""
    import json

    from biasaudit.cli.app import main

    workdir = tmp_path_factory.mktemp("one-writer")
    (workdir / "reports").mkdir()
    body = VIEWER_SPEC
    for k in ("STATEMENT1", "STATEMENT2", "STATEMENT3", "ANSWER1", "ANSWER2", "LONG"):
        body = body.replace(k, json.dumps(f"plain {k.lower()}"))
    spec, ops = spec_and_operator(workdir / "plain.yaml", body)
    return finished_run(workdir, lambda *a: (main(list(a)), "", ""), spec, ops, "report.formats=[html]")


def test_view_out_at_a_symlink_leaves_its_target(run: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    victim = _victim(tmp_path)
    (tmp_path / "out.html").symlink_to(victim)
    code, _, err = cli("view", str(run), "--out", str(tmp_path / "out.html"))
    _one_line(code, err, str(tmp_path / "out.html"), "symbolic link", "--force")
    assert victim.read_text(encoding="utf-8") == VICTIM
    code, _, err = cli("view", str(run), "--out", str(tmp_path / "out.html"), "--force")
    assert code == 0, err
    assert victim.read_text(encoding="utf-8") == VICTIM  # the link was replaced, not followed
    assert not (tmp_path / "out.html").is_symlink() and "biasaudit viewer" in (tmp_path / "out.html").read_text()


def test_a_received_run_folder_whose_viewer_is_a_link(run: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    received = tmp_path / "received"
    shutil.copytree(run, received)
    (received / "viewer.html").unlink(missing_ok=True)
    victim = _victim(tmp_path)
    (received / "viewer.html").symlink_to(victim)
    code, _, err = cli("view", str(received))
    _one_line(code, err, "viewer.html", "symbolic link")
    assert victim.read_text(encoding="utf-8") == VICTIM


def test_view_out_keeps_an_unrelated_file_and_refreshes_its_own(run: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    mine = tmp_path / "out.html"
    mine.write_text("<p>my own page</p>", encoding="utf-8")
    code, _, err = cli("view", str(run), "--out", str(mine))
    _one_line(code, err, str(mine), "not a file biasaudit wrote", "--force")
    assert mine.read_text(encoding="utf-8") == "<p>my own page</p>"
    code, _, err = cli("view", str(run), "--out", str(mine), "--force")
    assert code == 0, err
    code, _, err = cli("view", str(run), "--out", str(mine))  # now the page is ours: refreshed
    assert code == 0, err
    received = tmp_path / "received"  # and a plain `view RUN` refreshes the folder's own page
    shutil.copytree(run, received)
    (received / "viewer.html").write_text("stale", encoding="utf-8")
    code, _, err = cli("view", str(received))
    assert code == 0, err
    assert "biasaudit viewer" in (received / "viewer.html").read_text(encoding="utf-8")
    _no_temporaries(received)


# -- item 4: annotate export --force ------------------------------------------------------------

def test_annotate_export_force_replaces_a_link_never_its_target(run: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    victim = _victim(tmp_path)
    sheet = tmp_path / "sheet.csv"
    sheet.symlink_to(victim)
    code, _, err = cli("annotate", "export", str(run), "--layer", "refusal", "--n", "4", "-o", str(sheet), "--force")
    assert victim.read_text(encoding="utf-8") == VICTIM  # before the fix: the sheet went into the victim
    assert code == 0, err
    assert not sheet.is_symlink() and sheet.read_text(encoding="utf-8").startswith("\"unit_id\"")
    sheet.unlink()
    Path(f"{sheet}.sample.json").unlink()  # its sampling record
    sheet.symlink_to(victim)  # without --force: one line naming the link
    code, _, err = cli("annotate", "export", str(run), "--layer", "refusal", "--n", "4", "-o", str(sheet))
    _one_line(code, err, str(sheet), "symbolic link")
    assert victim.read_text(encoding="utf-8") == VICTIM


def test_pack_force_replaces_a_link_never_its_target(run: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    victim = _victim(tmp_path)
    (tmp_path / "pack.zip").symlink_to(victim)
    code, _, err = cli("pack", str(run), "-o", str(tmp_path / "pack.zip"), "--force")
    assert victim.read_text(encoding="utf-8") == VICTIM, err
    assert code == 0, err
    assert not (tmp_path / "pack.zip").is_symlink()
