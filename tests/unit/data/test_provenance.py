"""The loader checks a published stimuli file against its folder's provenance.json, and
the run carries the provenance forward (issue 37, section 1)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from biasaudit.data import load_stimuli, readers
from biasaudit.data.provenance import read_provenance
from biasaudit.errors import DataError
from biasaudit.spec import StimuliSpec
from biasaudit.spec.models import SampleSpec
from tests.unit.data._fixtures import (
    COMMIT,
    crows_csv,
    file_entry,
    provenance,
    sha256,
    write_folder,
)


def _spec(path: Path, **more: object) -> StimuliSpec:
    return StimuliSpec(source=str(path), format="crows_pairs", **more)  # type: ignore[arg-type]


def test_listed_file_loads_with_its_provenance(tmp_path: Path) -> None:
    data = crows_csv(12)
    folder = write_folder(tmp_path / "toy", {"pairs.csv": data}, records={"pairs.csv": 12})
    s = load_stimuli(_spec(folder / "pairs.csv"), None)
    p = s.provenance
    assert p is not None
    assert (p.benchmark, p.title, p.licence, p.source_repo, p.commit) == (
        "toy_pairs", "Toy-Pairs", "CC BY-SA 4.0", "example-org/toy-pairs", COMMIT)
    assert (p.source_path, p.path, p.records, p.checked) == ("data/pairs.csv", "pairs.csv", 12, "sha256")
    assert p.sha256 == s.sha256 == sha256(data)


def test_a_changed_file_is_refused_with_one_line(tmp_path: Path) -> None:
    """Before: a published file edited by hand (one pair's direction flipped) loaded as if
    it were the published data, and the report cited nothing."""
    data = crows_csv(12)
    folder = write_folder(tmp_path / "toy", {"pairs.csv": data})
    changed = data.replace(b"antistereo", b"stereo", 1)
    (folder / "pairs.csv").write_bytes(changed)
    with pytest.raises(DataError) as ei:
        load_stimuli(_spec(folder / "pairs.csv"), None)
    line = ei.value.one_line()
    assert "\n" not in line and str(folder / "pairs.csv") in line and "stimuli.source" in line
    assert sha256(data)[:12] in line and sha256(changed)[:12] in line
    assert "does not match" in line and "restore" in line


def test_a_file_the_provenance_does_not_list_is_not_checked(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "toy", {"pairs.csv": crows_csv(4)})
    (folder / "mine.csv").write_bytes(crows_csv(3, "x"))
    s = load_stimuli(_spec(folder / "mine.csv"), None)
    assert s.provenance is None and len(s.stimuli) == 3


def test_provenance_of_a_parent_folder_covers_a_file_in_a_subfolder(tmp_path: Path) -> None:
    data = crows_csv(5)
    folder = write_folder(tmp_path / "toy", {"model_a/pairs.csv": data})
    assert load_stimuli(_spec(folder / "model_a" / "pairs.csv"), None).provenance is not None
    (folder / "model_a" / "pairs.csv").write_bytes(crows_csv(5, "!"))
    with pytest.raises(DataError, match="does not match"):
        load_stimuli(_spec(folder / "model_a" / "pairs.csv"), None)


def test_a_symlink_to_a_published_file_is_checked(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "toy", {"pairs.csv": crows_csv(4)})
    (tmp_path / "link.csv").symlink_to(folder / "pairs.csv")
    assert load_stimuli(_spec(tmp_path / "link.csv"), None).provenance is not None
    (folder / "pairs.csv").write_bytes(crows_csv(4, "?"))
    with pytest.raises(DataError, match="does not match"):
        load_stimuli(_spec(tmp_path / "link.csv"), None)


def test_an_unobtained_file_is_checked_against_its_git_blob_id(tmp_path: Path) -> None:
    """A file the project could not ship records the source tree's git blob id; once
    fetched it is checked against that id (computed here by git itself)."""
    data = crows_csv(6)
    (tmp_path / "probe.csv").write_bytes(data)
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    blob = subprocess.run([git, "hash-object", str(tmp_path / "probe.csv")], capture_output=True, text=True,
                          check=True).stdout.strip()
    doc = provenance(unobtained=[{"source_path": "data/dev.csv", "git_blob_sha1": blob, "sha256": None,
                                  "url": "https://example.org/dev.csv", "why": "too large here"}])
    folder = write_folder(tmp_path / "toy", {"dev.csv": data}, doc=doc)
    s = load_stimuli(_spec(folder / "dev.csv"), None)
    assert s.provenance is not None and s.provenance.checked == "git_blob_sha1"
    (folder / "dev.csv").write_bytes(crows_csv(6, "#"))
    with pytest.raises(DataError) as ei:
        load_stimuli(_spec(folder / "dev.csv"), None)
    assert "git blob SHA-1" in ei.value.one_line() and blob[:12] in ei.value.one_line()
    assert "biasaudit data fetch toy_pairs" in ei.value.one_line()  # it has a URL: the fix is to fetch it


BAD = {
    "an unknown key": ({"licence_typo": "x"}, None, "licence_typo", "unknown key"),
    "a short sha256": (None, {"sha256": "abc"}, "files.0.sha256", "pattern"),
    "a path out of the folder": (None, {"path": "../evil.csv"}, "files.0.path", "'..'"),
    "an absolute path": (None, {"path": "/etc/passwd"}, "files.0.path", "relative"),
    "compressed without .gz": (None, {"compressed": True}, "files.0", "compressed"),
    "a file:// url": (None, {"url": "file:///proc/self/environ"}, "files.0.url", "http(s)"),
    "a url with credentials": (None, {"url": "https://u:p@example.org/x"}, "files.0.url", "credentials"),
    "a short commit": ({"commit": "abc123"}, None, "commit", "pattern"),
    "no licence": ({"licence": ""}, None, "licence", "at least 1"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_malformed_provenance_is_one_line(tmp_path: Path, case: str) -> None:
    top, per_file, key, words = BAD[case]
    data = crows_csv(3)
    entry = {**file_entry("pairs.csv", data), **(per_file or {})}
    doc = {**provenance(files=[entry]), **(top or {})}
    folder = write_folder(tmp_path / "toy", {"pairs.csv": data}, doc=doc)
    with pytest.raises(DataError) as ei:
        load_stimuli(_spec(folder / "pairs.csv"), None)
    line = ei.value.one_line()
    assert "\n" not in line and str(folder / "provenance.json") in line and f": {key}: " in line, line
    assert words in line and "docs/data.md" in line


def test_a_provenance_that_is_not_json_is_one_line(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "toy", {"pairs.csv": crows_csv(2)})
    (folder / "provenance.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="not valid JSON"):
        load_stimuli(_spec(folder / "pairs.csv"), None)


def test_the_shared_format_of_the_data_helpers_is_read(tmp_path: Path) -> None:
    """The keys the shipped provenance files use (licence_source, note, unobtained with
    why, git_blob_sha1 per file) are part of the model, not refused."""
    data = crows_csv(2)
    doc = provenance(files=[file_entry("pairs.csv", data, 2, git_blob_sha1="a" * 40)], licence_source="LICENSE",
                     note="n", unobtained=[{"source_path": "data/big.jsonl", "url": "https://example.org/big.jsonl",
                                            "git_blob_sha1": "b" * 40, "sha256": None, "why": "too large"},
                                           {"source_path": None, "url": "https://example.org/hub/dataset",
                                            "git_blob_sha1": None, "sha256": None, "why": "on a dataset hub"}])
    folder = write_folder(tmp_path / "toy", {"pairs.csv": data}, doc=doc)
    prov = read_provenance(folder / "provenance.json")
    assert [e.path for e in prov.entries()] == ["pairs.csv", "big.jsonl", ""]  # the last names no file
    assert load_stimuli(_spec(folder / "pairs.csv"), None).provenance is not None


def test_a_file_is_hashed_once_per_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = readers.hash_stream

    def counting(f, size):  # type: ignore[no-untyped-def]
        calls.append(size)
        return real(f, size)

    monkeypatch.setattr(readers, "hash_stream", counting)
    folder = write_folder(tmp_path / "toy", {"pairs.csv": crows_csv(8)})
    for _ in range(3):
        load_stimuli(_spec(folder / "pairs.csv"), None)
    assert len(calls) == 1
    plain = tmp_path / "plain.csv"
    plain.write_bytes(crows_csv(4, "a"))
    load_stimuli(_spec(plain), None)
    load_stimuli(_spec(plain), None)
    assert len(calls) == 2
    st = plain.stat()
    plain.write_bytes(crows_csv(4, "b"))  # same size, and the old mtime put back: only the ctime tells
    os.utime(plain, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert load_stimuli(_spec(plain), None).sha256 == sha256(crows_csv(4, "b"))
    assert len(calls) == 3


def test_sample_records_n_of_n_after_where_and_the_seed(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "toy", {"pairs.csv": crows_csv(30)})
    s = load_stimuli(_spec(folder / "pairs.csv", where={"direction": ["stereo"]}, sample=SampleSpec(n=5, seed=3)), None)
    assert s.n_total == 30 and s.selected == 20 and len(s.stimuli) == 5
    assert s.sample is not None and (s.sample.n, s.sample.of, s.sample.seed, s.sample.drawn) == (5, 20, 3, True)
    all_of = load_stimuli(_spec(folder / "pairs.csv", sample=SampleSpec(n=50, seed=1)), None)
    assert all_of.sample is not None and not all_of.sample.drawn and len(all_of.stimuli) == 30


def test_the_shipped_data_verifies() -> None:
    """Every provenance.json under specs/data parses and every file it lists as shipped is
    there with its recorded digest (re-run by the coordinator once the data lands)."""
    from biasaudit._util.paths import REPO_ROOT
    from biasaudit.data.provenance import file_status, find_provenance_files

    for pj in find_provenance_files([REPO_ROOT / "specs" / "data"]):
        prov = read_provenance(pj)
        for e in prov.entries():
            st = file_status(pj.parent, e)
            assert not st.problem, f"{pj.parent.name}/{e.path}: {st.state}"
            assert json.loads(pj.read_text(encoding="utf-8"))["benchmark"] == prov.benchmark
