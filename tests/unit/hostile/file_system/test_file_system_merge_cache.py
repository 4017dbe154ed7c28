"""File system (issue 26, class 6): `merge-cache` and the sweep's own merge never merge a
cache into itself, whatever path leads to it. A target inside a source folder, the
target named through a symlink or a hard link, the target's SQLite journal picked up by
a shell glob: refused before the target is created or touched, one line naming the
source. After a sweep, a main cache that lies in the job-caches folder (and matches
`job-*.sqlite`) is neither merged into itself nor removed with the merged job files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from biasaudit.plan import Request
from biasaudit.records.responses import Response
from biasaudit.runner.sweep_caches import merge_job_caches
from biasaudit.store import Store
from tests.unit.hostile._cases import error_lines


def cache(path: Path, *keys: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    store = Store(path)
    for k in keys:
        store.put(Request(key=k, kind="generate", messages=[{"role": "user", "content": k}]),
                  Response(key=k, status="ok", output={"text": k}))
    store.close()
    return path


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _folder_holding_target(w: Path) -> list[str]:
    cache(w / "caches" / "job-0.sqlite", "a")
    return [str(w / "caches" / "all.sqlite"), str(w / "caches")]


def _existing_target_in_folder(w: Path) -> list[str]:
    cache(w / "caches" / "job-0.sqlite", "a")
    cache(w / "caches" / "all.sqlite", "b")
    return [str(w / "caches" / "all.sqlite"), str(w / "caches")]


def _glob_with_target(w: Path) -> list[str]:
    cache(w / "caches" / "job-0.sqlite", "a")
    cache(w / "caches" / "all.sqlite", "b")
    return [str(w / "caches" / "all.sqlite"), *sorted(str(p) for p in (w / "caches").iterdir())]


def _symlink_to_target(w: Path) -> list[str]:
    cache(w / "all.sqlite", "b")
    (w / "link.sqlite").symlink_to(w / "all.sqlite")
    return [str(w / "all.sqlite"), str(cache(w / "j.sqlite", "a")), str(w / "link.sqlite")]


def _target_through_symlink(w: Path) -> list[str]:
    cache(w / "all.sqlite", "b")
    (w / "link.sqlite").symlink_to(w / "all.sqlite")
    return [str(w / "link.sqlite"), str(w / "all.sqlite")]


def _hard_link(w: Path) -> list[str]:
    cache(w / "all.sqlite", "b")
    os.link(w / "all.sqlite", w / "hard.sqlite")
    return [str(w / "all.sqlite"), str(w / "hard.sqlite")]


def _journal(w: Path) -> list[str]:
    cache(w / "all.sqlite", "b")
    (w / "all.sqlite-journal").write_bytes(b"")
    return [str(w / "all.sqlite"), str(cache(w / "j.sqlite", "a")), str(w / "all.sqlite-journal")]


def _wal(w: Path) -> list[str]:
    cache(w / "all.sqlite", "b")
    (w / "all.sqlite-wal").write_bytes(b"\0" * 32)
    return [str(w / "all.sqlite"), str(w / "all.sqlite-wal")]


def _dotdot(w: Path) -> list[str]:
    cache(w / "all.sqlite", "b")
    (w / "sub").mkdir()
    return [str(w / "all.sqlite"), str(w / "sub" / ".." / "all.sqlite")]


def _twice_by_two_paths(w: Path) -> list[str]:
    cache(w / "j.sqlite", "a")
    (w / "sub").mkdir()
    return [str(w / "new.sqlite"), str(w / "j.sqlite"), str(w / "sub" / ".." / "j.sqlite")]


CASES = {
    "target inside a source folder": (_folder_holding_target, "a directory"),
    "existing target inside a source folder": (_existing_target_in_folder, "a directory"),
    "shell glob that includes the target": (_glob_with_target, "merged into itself"),
    "symlink to the target among the sources": (_symlink_to_target, "merged into itself"),
    "target named through a symlink": (_target_through_symlink, "merged into itself"),
    "hard link of the target": (_hard_link, "merged into itself"),
    "the target's journal": (_journal, "the target's SQLite journal"),
    "the target's WAL": (_wal, "the target's SQLite journal"),
    "the target by a path with ..": (_dotdot, "merged into itself"),
    "one source by two paths": (_twice_by_two_paths, "given twice"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_cache_is_never_merged_into_itself(tmp_path: Path, cli, name: str) -> None:  # type: ignore[no-untyped-def]
    build, must = CASES[name]
    args = build(tmp_path)
    before = snapshot(tmp_path)
    code, out, err = cli("merge-cache", *args)
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and must in lines[0] and "hint:" in lines[0], err
    assert snapshot(tmp_path) == before  # nothing created, nothing touched


def test_the_files_of_a_folder_merge_by_name(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """What the refusal's hint says works: the job files named, the target left out."""
    for i in range(3):
        cache(tmp_path / "caches" / f"job-{i}.sqlite", f"k{i}", "shared")
    code, out, err = cli("merge-cache", str(tmp_path / "caches" / "all.sqlite"),
                         *sorted(str(p) for p in (tmp_path / "caches").glob("job-*.sqlite")))
    assert code == 0, err
    store = Store(tmp_path / "caches" / "all.sqlite")
    assert store.count() == 4
    store.close()


def test_the_sweeps_merge_skips_a_main_cache_in_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "job-caches" / "t"
    main = cache(folder / "job-main.sqlite", "m")
    for i in range(2):
        cache(folder / f"job-{i}.sqlite", f"k{i}")
    files, added = merge_job_caches(main, folder)
    assert (files, added) == (2, 2)
    assert main.is_file() and not (folder / "job-0.sqlite").exists()  # the main cache is kept
    store = Store(main)
    assert store.count() == 3
    store.close()
