"""Acceptance 4 of issue 30: `biasaudit pack` of a real run (the scripted backend, 8
CrowS-Pairs items) verifies; a tampered byte, a removed file, an added file, a wrong
public key or a changed signed manifest each fail naming the file; the estimates and
verdicts re-compute identically from the pack, and a tampered store slice whose digest
was updated is caught by the re-computation. A planted API key never lands in the pack."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from biasaudit._util.secrets import derived_forms, forget_all
from tests.conftest import isolation, run_dirs
from tests.helpers import write_crows_subset, write_spec

pytestmark = pytest.mark.slow

SPEC = """
audit: {name: pack-test, method: token_probability}
stimuli: {source: crows.csv, format: crows_pairs}
probe: {kind: sequence_logprob, inputs: {more: "{{ more }}", less: "{{ less }}"}}
metrics: [{name: bias_score}]
thresholds: [{metric: bias_score, max: 0.7, refs: [nist-ai-rmf:measure-2.11]}]
"""
KEY_ENV = "BIASAUDIT_PACK_TEST_KEY"
PLANTED = "sk-pack-PLANTED-0123456789abcdef"


@pytest.fixture(autouse=True)
def _no_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIASAUDIT_CHROMIUM", "/nonexistent/chromium")  # no PDF rendering: seconds saved


@pytest.fixture
def run(workdir: Path, cli, monkeypatch: pytest.MonkeyPatch) -> Path:  # type: ignore[no-untyped-def]
    write_crows_subset(workdir / "crows.csv", 8)
    spec = write_spec(workdir / "audit.yaml", SPEC)
    monkeypatch.setenv(KEY_ENV, PLANTED)
    code, _, err = cli("run", f"spec={spec}", "model=scripted", f"+model.api_key_env={KEY_ENV}", *isolation(workdir))
    assert code == 1, err  # the scripted model FAILs the threshold (exit 1): a verdict to re-compute
    yield run_dirs(workdir)[0]
    forget_all()


def _keys(folder: Path) -> tuple[Path, Path, Path]:
    """An Ed25519 key pair as PEM files (what `openssl genpkey -algorithm ed25519` writes),
    and the public key of another pair."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    def public(k: Ed25519PrivateKey) -> bytes:
        return k.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    key, pub, pub2 = folder / "key.pem", folder / "pub.pem", folder / "other.pem"
    mine, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    key.write_bytes(mine.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    pub.write_bytes(public(mine))
    pub2.write_bytes(public(other))
    return key, pub, pub2


def _members(pack: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(pack) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _rezip(pack: Path, out: Path, files: dict[str, bytes], rehash: tuple[str, ...] = ()) -> Path:
    """Write `files` as a zip; the digests of `rehash` are updated in MANIFEST.json (as a
    forger who knows the format would)."""
    if rehash:
        manifest = json.loads(files["MANIFEST.json"])
        for name in rehash:
            manifest["files"][name] = {"sha256": hashlib.sha256(files[name]).hexdigest(), "size": len(files[name])}
        files["MANIFEST.json"] = json.dumps(manifest, indent=2, sort_keys=True).encode()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, b in files.items():
            zf.writestr(n, b)
    return out


def test_pack_verify_and_every_kind_of_tampering(run: Path, workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    key, pub, other = _keys(workdir)
    pack = workdir / "audit.zip"
    code, out, err = cli("pack", str(run), "-o", str(pack), "--sign-key", str(key))
    assert code == 0, err
    assert "byte-identical (overall FAIL)" in out and "signed by key sha256:" in out
    code, out, err = cli("verify", str(pack), "--public-key", str(pub))
    assert code == 0, out + err
    assert "valid Ed25519 signature" in out and "byte-identical" in out and out.rstrip().endswith(f"verified: {pack}")

    files = _members(pack)
    name = next(iter(run.parent.iterdir())).name
    r = f"runs/{name}"
    expected = {f"{r}/report/report.html", f"{r}/report/summary.json", f"{r}/spec/audit.yaml",
                f"{r}/config/resolved.json", f"{r}/config/manifest.json", f"{r}/data/stimuli-crows.csv",
                f"{r}/data/hashes.json", f"{r}/model/identity.json", f"{r}/trail/responses.jsonl",
                f"{r}/store/responses.jsonl", "environment/packages.json", "CROSSWALK.md", "MANIFEST.json",
                "MANIFEST.sig", "MANIFEST.pub"}
    assert expected <= set(files)
    manifest = json.loads(files["MANIFEST.json"])
    assert set(manifest["files"]) == set(files) - {"MANIFEST.json", "MANIFEST.sig"}
    assert all(hashlib.sha256(files[n]).hexdigest() == d["sha256"] for n, d in manifest["files"].items())
    hashes = json.loads(files[f"{r}/data/hashes.json"])
    assert hashes["data"]["sha256"] == hashlib.sha256((workdir / "crows.csv").read_bytes()).hexdigest()
    crosswalk = files["CROSSWALK.md"].decode()
    assert f"| `{r}/trail/responses.jsonl` | the test log: every request and the model's answer | 2(g) |" in crosswalk
    assert "MEASURE 2.11" in crosswalk and "report.pdf: not in the pack" in crosswalk

    def verify(zipped: Path, *extra: str) -> tuple[int, str]:
        code, out, err = cli("verify", str(zipped), *extra)
        return code, out

    # a tampered byte
    bad = dict(files)
    html = bytearray(bad[f"{r}/report/report.html"])
    html[100] ^= 1
    bad[f"{r}/report/report.html"] = bytes(html)
    code, out = verify(_rezip(pack, workdir / "byte.zip", bad))
    assert code == 1 and f"FAILED: {r}/report/report.html: SHA-256 differs from MANIFEST.json" in out
    # a removed file
    bad = {n: b for n, b in files.items() if n != f"{r}/data/stimuli-crows.csv"}
    code, out = verify(_rezip(pack, workdir / "removed.zip", bad))
    assert code == 1 and f"FAILED: {r}/data/stimuli-crows.csv: missing (listed in MANIFEST.json)" in out
    # an added file
    code, out = verify(_rezip(pack, workdir / "added.zip", {**files, f"{r}/report/extra.html": b"<p>new</p>"}))
    assert code == 1 and f"FAILED: {r}/report/extra.html: not listed in MANIFEST.json (a file was added)" in out
    # the wrong public key
    code, out = verify(pack, "--public-key", str(other))
    assert code == 1 and "FAILED: MANIFEST.sig: the pack was signed with key sha256:" in out
    # a changed manifest (the signature no longer matches)
    changed = {**files, "MANIFEST.json": files["MANIFEST.json"].replace(b'"created": "', b'"created": "1')}
    code, out = verify(_rezip(pack, workdir / "manifest.zip", changed), "--public-key", str(pub))
    assert code == 1 and "FAILED: MANIFEST.sig: the signature does not match MANIFEST.json" in out
    # the signature removed
    code, out = verify(_rezip(pack, workdir / "nosig.zip", {n: b for n, b in files.items() if n != "MANIFEST.sig"}))
    assert code == 1 and "FAILED: MANIFEST.sig: missing (MANIFEST.json says the pack was signed)" in out


def test_a_rehashed_store_or_trail_is_caught_by_the_recomputation(run: Path, workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    pack = workdir / "audit.zip"
    assert cli("pack", str(run), "-o", str(pack))[0] == 0
    files = _members(pack)
    r = next(n for n in files if n.endswith("/store/responses.jsonl")).rsplit("/store/", 1)[0]
    packed = json.loads(files[f"{r}/report/summary.json"])["metrics"]["bias_score"]["estimates"]
    # every stored log-prob negated: each pair's preference flips, so the score must change
    rows = [json.loads(line) for line in files[f"{r}/store/responses.jsonl"].decode().splitlines()]
    for row in rows:
        out = json.loads(row["output"])
        out["logprobs"] = [None if x is None else -x for x in out["logprobs"]]
        row["output"] = json.dumps(out)
    forged = {**files, f"{r}/store/responses.jsonl": "".join(json.dumps(x) + "\n" for x in rows).encode()}
    code, out, _ = cli("verify", str(_rezip(pack, workdir / "store.zip", forged, rehash=(f"{r}/store/responses.jsonl",))))
    assert code == 1, out
    assert "digests: " not in out  # the digests hold: only the re-computation can tell
    assert f"FAILED: {r}/report/summary.json: metrics (bias_score) re-computed from the packed responses differ" in out
    assert f"FAILED: {r}/report/summary.json: verdicts re-computed" in out
    assert f"FAILED: {r}/trail/responses.jsonl: line 2 does not match the stored response" in out
    assert packed  # the packed estimates were there to compare with
    # the audit trail alone changed (and rehashed): it no longer says what the estimates were computed from
    trail = files[f"{r}/trail/responses.jsonl"].decode().splitlines()
    # trail[0] is the trail's header (its kind and format version), trail[1] the first response: line 2 of the file
    first = json.loads(trail[1])
    first["output"]["logprobs"][1] = -99.0
    trail[1] = json.dumps(first)
    forged = {**files, f"{r}/trail/responses.jsonl": ("\n".join(trail) + "\n").encode()}
    code, out, _ = cli("verify", str(_rezip(pack, workdir / "trail.zip", forged, rehash=(f"{r}/trail/responses.jsonl",))))
    assert code == 1 and out.count("FAILED") == 1
    assert f"FAILED: {r}/trail/responses.jsonl: line 2 does not match the stored response" in out
    # a line of the trail dropped (an item hidden from the reviewer), rehashed
    cut = files[f"{r}/trail/responses.jsonl"].decode().splitlines()[:-1]
    forged = {**files, f"{r}/trail/responses.jsonl": ("\n".join(cut) + "\n").encode()}
    code, out, _ = cli("verify", str(_rezip(pack, workdir / "cut.zip", forged, rehash=(f"{r}/trail/responses.jsonl",))))
    assert code == 1 and f"FAILED: {r}/trail/responses.jsonl: 15 lines, but the plan has 16 items" in out


def test_a_planted_api_key_never_lands_in_the_pack(run: Path, workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    import base64

    # a server echo that slipped into the run's files, in three encodings
    html = run / "report.html"
    html.write_text(html.read_text() + f"<!-- {PLANTED} -->")
    md = run / "report.md"
    md.write_text(md.read_text() + "\n" + base64.b64encode(f"Bearer {PLANTED}".encode()).decode() + "\n")
    (run / "items.csv").write_text((run / "items.csv").read_text() + PLANTED.encode().hex() + "\n")
    forget_all()  # a fresh process: pack registers the key itself from the run's config
    pack = workdir / "audit.zip"
    code, out, err = cli("pack", str(run), "-o", str(pack))
    assert code == 0, err
    assert "a secret (an API key or the signing key) was redacted" in out
    files = _members(pack)
    blob = b"\n".join(files.values()).decode("latin-1").lower()
    for form in derived_forms(PLANTED):
        assert form.lower()[:12] not in blob, form
    assert PLANTED not in pack.read_bytes().decode("latin-1")
    assert cli("verify", str(pack))[0] == 0


def test_outputs_and_inputs_are_checked(run: Path, workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    pack = workdir / "audit.zip"
    pack.write_bytes(b"keep me")
    code, _, err = cli("pack", str(run), "-o", str(pack))
    assert code == 2 and "the output file exists" in err and "--force" in err and err.count("\n") == 1
    assert pack.read_bytes() == b"keep me"
    assert cli("pack", str(run), "-o", str(pack), "--force")[0] == 0
    assert zipfile.is_zipfile(pack) and not list(workdir.glob(".audit.zip.*"))
    code, _, err = cli("pack", str(workdir), "-o", str(workdir / "x.zip"))
    assert code == 2 and "neither a run folder nor a suite folder" in err and not (workdir / "x.zip").exists()
    (workdir / "crows.csv").write_text("changed\n")
    code, _, err = cli("pack", str(run), "-o", str(workdir / "y.zip"))
    assert code == 2 and "the data file changed since the run" in err and not (workdir / "y.zip").exists()
    code, _, err = cli("verify", str(workdir / "nope.zip"))
    assert code == 2 and "no such file" in err
    code, _, err = cli("verify", str(workdir / "crows.csv"))
    assert code == 2 and "not a zip file" in err
    code, _, err = cli("verify", str(pack), "--public-key", str(workdir / "crows.csv"))
    assert code == 2 and "not a PEM public key" in err
    code, out, _ = cli("verify", str(pack), "--public-key", str(_keys(workdir)[1]))
    assert code == 1 and "the pack is not signed, but --public-key was given" in out
    evil = workdir / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        info = zipfile.ZipInfo("x")
        info.filename = "../../escaped.txt"
        zf.writestr(info, b"pwned")
    code, _, err = cli("verify", str(evil))
    assert code == 2 and "not a safe evidence pack" in err and not (workdir.parent / "escaped.txt").exists()


def test_a_suite_packs_every_member_run_and_verifies(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    (workdir / "m").mkdir()
    write_crows_subset(workdir / "m" / "crows.csv", 6)
    write_spec(workdir / "m" / "audit.yaml", SPEC)
    write_spec(workdir / "suite.yaml", "suite:\n  name: mini\n  members:\n    - {spec: m/audit.yaml, label: tp}\n")
    cli("run", "-m", f"spec={workdir / 'suite.yaml'}", "model=scripted", "model.name=s1,s2", *isolation(workdir))
    [suite] = list((workdir / "reports" / "mini").iterdir())
    pack = workdir / "suite.zip"
    code, _, err = cli("pack", str(suite), "-o", str(pack))
    assert code == 0, err
    manifest = json.loads(_members(pack)["MANIFEST.json"])
    assert manifest["source"] == "suite" and manifest["runs"] == ["tp--s1", "tp--s2"]
    assert {"suite/summary.json", "suite/report.html"} <= set(manifest["files"])
    code, out, _ = cli("verify", str(pack))
    assert code == 0 and out.count("byte-identical") == 2, out


def test_a_run_with_judge_coding_recomputes_its_codes_from_the_pack(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Rules and a scripted judge panel: the judges' cached answers travel in the store
    slice, the codes re-compute byte for byte, and a forged judge answer is caught."""
    from tests.unit.coding.test_coding_plan import spec as coding_spec

    s, ops = coding_spec(workdir)
    cli("run", f"spec={s}", *ops, *isolation(workdir))
    [run] = run_dirs(workdir)
    pack = workdir / "coded.zip"
    code, out, err = cli("pack", str(run), "-o", str(pack))
    assert code == 0, err
    files = _members(pack)
    r = next(n for n in files if n.endswith("/store/responses.jsonl")).rsplit("/store/", 1)[0]
    rows = [json.loads(x) for x in files[f"{r}/store/responses.jsonl"].decode().splitlines()]
    assert len(rows) == 6 + 10  # the subject's 6 answers and the judges' 10 (as the run made them)
    assert files[f"{r}/trail/codes.jsonl"] == (run / "codes.jsonl").read_bytes()
    assert cli("verify", str(pack))[0] == 0
    # one judge answer forged (and rehashed): the codes and the endorsement rate no longer follow
    judged = [x for x in rows if x["kind"] != "generate"]
    assert judged, [x["kind"] for x in rows]
    target = judged[0]
    answer = json.loads(target["output"])
    flipped = "E" if answer["choice"] != "E" else "A"  # E is the judges' refusal letter, A endorsement
    target["output"] = json.dumps({"choice": flipped, "probs": {k: 0.7 if k == flipped else 0.075 for k in answer["probs"]}})
    forged = {**files, f"{r}/store/responses.jsonl": "".join(json.dumps(x) + "\n" for x in rows).encode()}
    code, out, _ = cli("verify", str(_rezip(pack, workdir / "forged.zip", forged, rehash=(f"{r}/store/responses.jsonl",))))
    assert code == 1, out
    assert f"FAILED: {r}/trail/codes.jsonl: differs from the codes re-computed from the packed responses" in out


def test_a_key_from_the_environment_signs_and_never_lands_in_the_pack(run: Path, workdir: Path, cli,  # type: ignore[no-untyped-def]
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    key, pub, _ = _keys(workdir)
    pem = key.read_text()
    monkeypatch.setenv("AUDIT_SIGNING_KEY", pem)
    pack = workdir / "env.zip"
    code, out, err = cli("pack", str(run), "-o", str(pack), "--sign-key-env", "AUDIT_SIGNING_KEY")
    assert code == 0, err
    assert cli("verify", str(pack), "--public-key", str(pub))[0] == 0
    body = [line for line in pem.splitlines() if not line.startswith("-----")]
    blob = b"\n".join(_members(pack).values()).decode("latin-1")
    assert body and not any(line in blob for line in body)
    assert not any(line.lower() in blob.lower() for line in body)


def test_the_pdf_is_rendered_when_chromium_is_there(run: Path, workdir: Path, cli,  # type: ignore[no-untyped-def]
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BIASAUDIT_CHROMIUM")
    from biasaudit.report.pdf import find_chromium

    if find_chromium() is None:
        pytest.skip("headless Chromium is not installed")
    pack = workdir / "pdf.zip"
    assert cli("pack", str(run), "-o", str(pack))[0] == 0
    files = _members(pack)
    [pdf] = [n for n in files if n.endswith("/report/report.pdf")]
    assert files[pdf].startswith(b"%PDF-")
    from io import BytesIO

    from pypdf import PdfReader

    text = " ".join(p.extract_text() for p in PdfReader(BytesIO(files[pdf])).pages)
    assert "pack-test" in text and "bias_score" in text.replace("\n", "")
    assert "report.pdf: not in the pack" not in files["CROSSWALK.md"].decode()
