"""`biasaudit data fetch`'s download, against a local HTTP server serving fixtures: the
digest decides what is kept, sizes are bounded, redirects stay on the host, nothing is
read from the environment and nothing is written outside the destination."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from biasaudit.data import load_stimuli
from biasaudit.data.fetch import FetchOptions, _next_url, fetch_benchmark
from biasaudit.errors import DataError
from biasaudit.spec import StimuliSpec
from tests.unit.data._fixtures import (
    Route,
    crows_csv,
    http_server,
    provenance,
    sha256,
    write_folder,
)

GOOD = crows_csv(20)
OTHER = GOOD.replace(b"Less", b"LESS")  # the same size, other bytes


def _entry(url: str, data: bytes = GOOD, path: str = "pairs.csv") -> dict[str, object]:
    return {"path": path, "source_path": f"data/{path}", "sha256": sha256(data), "bytes": len(data),
            "records": 20, "url": url}


def _folder(tmp_path: Path, url: str, data: bytes = GOOD) -> Path:
    return write_folder(tmp_path / "published", {}, doc=provenance(files=[_entry(url, data)]))


def _fetch(folder: Path, dest: Path | None = None, **opts: object) -> list[object]:
    return fetch_benchmark("toy_pairs", dest=dest, extra=[folder], opts=FetchOptions(**opts))  # type: ignore[arg-type]


def _left(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != "provenance.json")


@pytest.fixture(autouse=True)
def _no_shipped_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIASAUDIT_SPECS", str(tmp_path / "no-specs"))


def test_fetch_writes_the_file_once_its_digest_matches(tmp_path: Path) -> None:
    with http_server({"/pairs.csv": Route(GOOD)}) as srv:
        folder = _folder(tmp_path, srv.url("/pairs.csv"))
        got = _fetch(folder)
        assert (folder / "pairs.csv").read_bytes() == GOOD and _left(folder) == ["pairs.csv"]
        assert len(got) == 1
        again = _fetch(folder)  # in place with its digest: nothing downloaded
        assert srv.hits == ["/pairs.csv"] and again[0].already  # type: ignore[attr-defined]
    s = load_stimuli(StimuliSpec(source=str(folder / "pairs.csv"), format="crows_pairs"), None)
    assert s.provenance is not None and s.provenance.sha256 == sha256(GOOD)


def test_a_wrong_digest_writes_nothing(tmp_path: Path) -> None:
    with http_server({"/pairs.csv": Route(OTHER)}) as srv:
        folder = _folder(tmp_path, srv.url("/pairs.csv"))
        with pytest.raises(DataError) as ei:
            _fetch(folder)
    line = ei.value.one_line()
    assert "does not match" in line and sha256(GOOD)[:12] in line and sha256(OTHER)[:12] in line
    assert "nothing was written" in line and _left(folder) == []  # no file, no temporary file


@pytest.mark.parametrize("content_length", [True, False])
def test_an_oversize_download_is_refused(tmp_path: Path, content_length: bool) -> None:
    """More bytes than the provenance records: refused (before reading when the server
    says its length, as soon as the count passes the size otherwise); nothing written."""
    big = GOOD + b"x" * 5_000_000
    with http_server({"/pairs.csv": Route(big, content_length=content_length)}) as srv:
        folder = _folder(tmp_path, srv.url("/pairs.csv"))
        with pytest.raises(DataError, match=f"larger than {len(GOOD)} bytes"):
            _fetch(folder)
    assert _left(folder) == []


def test_max_bytes_bounds_a_file_of_unrecorded_size(tmp_path: Path) -> None:
    doc = provenance(unobtained=[{"source_path": "data/pairs.csv", "sha256": sha256(GOOD), "url": "http://x/"}])
    with http_server({"/pairs.csv": Route(GOOD)}) as srv:
        doc["unobtained"][0]["url"] = srv.url("/pairs.csv")
        folder = write_folder(tmp_path / "published", {}, doc=doc)
        with pytest.raises(DataError, match="larger than 100 bytes"):
            _fetch(folder, max_bytes=100)
        assert _left(folder) == []
        _fetch(folder)
    assert (folder / "pairs.csv").read_bytes() == GOOD


def test_redirects_stay_on_the_host_unless_allowed(tmp_path: Path) -> None:
    with http_server({"/pairs.csv": Route(GOOD)}) as srv:
        srv.routes["/same"] = Route(status=302, headers={"Location": "/pairs.csv"})
        srv.routes["/other"] = Route(status=301, headers={"Location": srv.url("/pairs.csv", host="localhost")})
        folder = _folder(tmp_path, srv.url("/other"))
        with pytest.raises(DataError) as ei:
            _fetch(folder)
        assert "redirect to another host (localhost) not followed" in ei.value.one_line()
        assert "--allow-redirect-host localhost" in ei.value.one_line() and _left(folder) == []
        assert "/pairs.csv" not in srv.hits
        _fetch(folder, allow_hosts=frozenset({"localhost"}))
        assert (folder / "pairs.csv").read_bytes() == GOOD
        (folder / "pairs.csv").unlink()
        same = _folder(tmp_path / "b", srv.url("/same"))
        _fetch(same)
        assert (same / "pairs.csv").read_bytes() == GOOD


def test_a_redirect_loop_ends(tmp_path: Path) -> None:
    with http_server({"/loop": Route(status=302, headers={"Location": "/loop"})}) as srv:
        folder = _folder(tmp_path, srv.url("/loop"))
        with pytest.raises(DataError, match="more than 5 redirects"):
            _fetch(folder)


def test_redirect_rules() -> None:
    none: frozenset[str] = frozenset()
    assert _next_url("https://a.org/x", "/y", none, "k") == "https://a.org/y"
    for bad, words in [("http://a.org/y", "https to http"), ("file:///etc/passwd", "http(s)"),
                       ("https://b.org/y", "another host"), ("https://a.org:444/y", "another host")]:
        with pytest.raises(DataError, match=words.replace("(", r"\(").replace(")", r"\)")):
            _next_url("https://a.org/x", bad, none, "k")


def test_http_errors_and_timeouts_are_one_line(tmp_path: Path) -> None:
    with http_server({"/slow": Route(GOOD, delay=3.0)}) as srv:
        folder = _folder(tmp_path, srv.url("/missing"))
        with pytest.raises(DataError, match="HTTP 404"):
            _fetch(folder)
        slow = _folder(tmp_path / "s", srv.url("/slow"))
        with pytest.raises(DataError, match=r"no response within 0\.5 s"):
            _fetch(slow, timeout=0.5)
    assert _left(folder) == [] and _left(slow) == []


def test_the_environment_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Proxy variables and a .netrc are ignored (trust_env=False): a proxy that does not
    exist would fail the download, a netrc would send its password to the server."""
    (tmp_path / "netrc").write_text("machine 127.0.0.1 login me password s3cret-netrc\n", encoding="utf-8")
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    for var in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    seen: list[str | None] = []
    with http_server({"/pairs.csv": Route(GOOD)}) as srv:
        folder = _folder(tmp_path, srv.url("/pairs.csv"))
        _fetch(folder)
        seen.extend(srv.hits)
    assert (folder / "pairs.csv").read_bytes() == GOOD and seen == ["/pairs.csv"]


def test_dest_gets_the_file_and_a_copy_of_the_provenance(tmp_path: Path) -> None:
    with http_server({"/pairs.csv": Route(GOOD)}) as srv:
        folder = _folder(tmp_path, srv.url("/pairs.csv"))
        dest = tmp_path / "mine" / "toy"
        _fetch(folder, dest=dest)
    assert _left(folder) == [] and sorted(p.name for p in dest.iterdir()) == ["pairs.csv", "provenance.json"]
    assert json.loads((dest / "provenance.json").read_text()) == json.loads((folder / "provenance.json").read_text())
    s = load_stimuli(StimuliSpec(source=str(dest / "pairs.csv"), format="crows_pairs"), None)
    assert s.provenance is not None  # checked there too


def test_nothing_is_written_outside_the_destination(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    with http_server({"/pairs.csv": Route(GOOD)}) as srv:
        doc = provenance(files=[_entry(srv.url("/pairs.csv"), path="sub/pairs.csv")])
        folder = write_folder(tmp_path / "published", {}, doc=doc)
        (folder / "sub").symlink_to(outside)  # a symlinked sub-folder leading out
        with pytest.raises(DataError, match="outside the destination folder"):
            _fetch(folder)
    assert list(outside.iterdir()) == []
    bad = provenance(files=[_entry("http://127.0.0.1:9/x", path="../escape.csv")])
    write_folder(tmp_path / "evil", {}, doc=bad)
    with pytest.raises(DataError, match=r"files\.0\.path"):
        fetch_benchmark("toy_pairs", extra=[tmp_path / "evil"])
    assert not (tmp_path / "escape.csv").exists()


def test_a_file_with_another_digest_in_place_needs_force(tmp_path: Path) -> None:
    with http_server({"/pairs.csv": Route(GOOD)}) as srv:
        folder = _folder(tmp_path, srv.url("/pairs.csv"))
        (folder / "pairs.csv").write_bytes(OTHER)
        with pytest.raises(DataError, match="--force"):
            _fetch(folder)
        assert (folder / "pairs.csv").read_bytes() == OTHER
        _fetch(folder, force=True)
    assert (folder / "pairs.csv").read_bytes() == GOOD


def test_an_unobtained_file_is_verified_by_its_git_blob_id(tmp_path: Path) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    (tmp_path / "probe").write_bytes(GOOD)
    blob = subprocess.run([git, "hash-object", str(tmp_path / "probe")], capture_output=True, text=True,
                          check=True).stdout.strip()
    with http_server({"/good": Route(GOOD), "/other": Route(OTHER)}) as srv:
        doc = provenance(unobtained=[{"source_path": "data/dev.csv", "git_blob_sha1": blob, "sha256": None,
                                      "url": srv.url("/other"), "why": "not here"}])
        folder = write_folder(tmp_path / "published", {}, doc=doc)
        with pytest.raises(DataError, match="git blob SHA-1"):
            _fetch(folder)
        assert _left(folder) == []
        fetch_benchmark("toy_pairs", extra=[folder], url=srv.url("/good"))
    assert (folder / "dev.csv").read_bytes() == GOOD


def test_no_digest_no_download(tmp_path: Path) -> None:
    doc = provenance(unobtained=[{"source_path": "data/dev.csv", "url": "http://127.0.0.1:9/dev.csv"}])
    folder = write_folder(tmp_path / "published", {}, doc=doc)
    with pytest.raises(DataError, match="no digest"):
        _fetch(folder)
