"""`biasaudit pack`: gather a finished run's (or a suite's member runs') evidence, check
that the pack re-computes to the run's own estimates and verdicts, digest and optionally
sign it, and write the zip atomically (a temporary file beside the target, then a rename).

Layout (per run, under `runs/<run>/`): report/ (HTML, PDF, Markdown, summary.json, CSV,
plots), spec/ (the spec file as run), config/ (the resolved config and the run manifest),
data/ (the stimulus file and the hashes), model/identity.json, trail/ (responses.jsonl,
codes.jsonl), store/ (the cache rows the estimates are computed from), selftest/ (with
--selftest); at the top: suite/ (a suite's report), environment/packages.json,
CROSSWALK.md, MANIFEST.json, MANIFEST.pub and MANIFEST.sig (when signed)."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import importlib.metadata as md
import json
import os
import platform
import re
import tempfile
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from biasaudit._util.fileio import check_output_file, open_output, write_output_file
from biasaudit._util.secrets import redact, watch_env
from biasaudit._version import __version__
from biasaudit.backends import identity_scope
from biasaudit.errors import BiasAuditError
from biasaudit.records.evidence import (
    MANIFEST_NAME,
    PUBLIC_KEY_NAME,
    SIGNATURE_NAME,
    PackedFile,
    PackManifest,
    PackSigning,
)
from biasaudit.records.json import JSONValue
from biasaudit.records.manifest import RunManifest
from biasaudit.runner.evidence.crosswalk import crosswalk_page
from biasaudit.runner.evidence.recompute import as_compared, decided
from biasaudit.runner.evidence.signing import fingerprint, public_pem, sign
from biasaudit.runner.evidence.store_export import (
    RecordingAnswerer,
    export_calibrations,
    export_embeddings,
    export_responses,
)
from biasaudit.runner.evidence.verify import check_folder
from biasaudit.runner.pipeline import prepare, read_manifest, rerender
from biasaudit.spec import AuditConfig

REPORT_SUFFIXES = {".html", ".md", ".pdf", ".csv", ".xml", ".png", ".svg"}
TEXT_SUFFIXES = {".html", ".md", ".csv", ".xml", ".svg", ".json", ".jsonl", ".yaml", ".yml", ".txt", ".pub"}
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # zip entries carry no local time: the manifest says when


@dataclass
class PackResult:
    path: Path
    files: int
    size: int
    runs: list[str]
    fingerprint: str | None
    notes: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)


def safe_part(name: str) -> str:
    """A file or folder name as a pack member part (A-Z a-z 0-9 . _ -)."""
    out = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".-") or "file"
    return out[:150]


def find_runs(source: Path) -> tuple[str, list[Path]]:
    """('run', [the run]) or ('suite', [its member runs]); each finished."""
    if not source.is_dir():
        raise BiasAuditError("not a folder" if source.exists() else "no such folder", file=str(source),
                             hint="give a run folder (reports/<audit>/<run>) or a suite folder written by `biasaudit run`")
    if (source / "manifest.json").is_file():
        runs, kind = [source], "run"
    else:
        runs, kind = sorted(p.parent for p in source.glob("*/manifest.json")), "suite"
        if not runs or not (source / "summary.json").is_file():
            raise BiasAuditError("neither a run folder nor a suite folder (no manifest.json)", file=str(source),
                                 hint="give a run folder (reports/<audit>/<run>) or a suite folder written by `biasaudit run`")
    for run in runs:
        if not (run / "summary.json").is_file():
            raise BiasAuditError("this run did not finish (no summary.json)", file=str(run),
                                 hint="resume it by running the same command again, then pack")
    return kind, runs


def _read(path: Path, what: str, run: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BiasAuditError(f"cannot read the {what} ({exc.strerror or exc})", file=str(path),
                             hint=f"restore the file the run {run.name} used, or pack where the run was made") from None


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _key_env_names(node: JSONValue) -> set[str]:
    """Every `api_key_env` the resolved config names, wherever it is."""
    out: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "api_key_env" and isinstance(v, str) and v:
                out.add(v)
            else:
                out |= _key_env_names(v)
    elif isinstance(node, list):
        for v in node:
            out |= _key_env_names(v)
    return out


def run_files(run: Path, prefix: str, notes: list[str], selftest: bool) -> dict[str, bytes]:
    """The evidence of one finished run, by pack member name."""
    from biasaudit.spec import validate_config

    m = read_manifest(run)
    cfg = validate_config(m.config, spec_file=m.spec_file, choices=m.choices)
    watch_env(_key_env_names(m.config))  # their values are scrubbed from every packed file
    files: dict[str, bytes] = {}
    for p in sorted(run.iterdir()):
        if p.is_file() and not p.is_symlink() and (p.suffix in REPORT_SUFFIXES or p.name == "summary.json"):
            files[f"{prefix}report/{safe_part(p.name)}"] = p.read_bytes()
    if (run / "plots").is_dir():
        for p in sorted((run / "plots").iterdir()):
            if p.is_file() and not p.is_symlink():
                files[f"{prefix}report/plots/{safe_part(p.name)}"] = p.read_bytes()
    spec_path = Path(m.spec_file)
    spec = _read(spec_path, "spec file", run)
    if m.spec_sha256 and _sha(spec) != m.spec_sha256:
        raise BiasAuditError("the spec file changed since the run (its SHA-256 differs from manifest.json)",
                             file=str(spec_path), hint="restore the spec the run used, or run the audit again and pack that run")
    files[f"{prefix}spec/{safe_part(spec_path.name)}"] = spec
    files[f"{prefix}config/resolved.json"] = (json.dumps(m.config, indent=2, sort_keys=True, ensure_ascii=False)
                                              + "\n").encode("utf-8")
    files[f"{prefix}config/manifest.json"] = (run / "manifest.json").read_bytes()
    if cfg.report.crosswalk:
        files[f"{prefix}config/crosswalk.yaml"] = _read(Path(cfg.report.crosswalk).expanduser(), "crosswalk file", run)
    hashes: dict[str, Any] = {"spec": {"file": f"spec/{safe_part(spec_path.name)}", "sha256_at_run": m.spec_sha256,
                                       "sha256": _sha(spec)}}
    if m.data.source is not None:
        data_path = Path(m.data.source)
        data = _read(data_path, "stimulus file", run)
        if _sha(data) != m.data.sha256:
            raise BiasAuditError("the data file changed since the run (its SHA-256 differs from manifest.json)",
                                 file=str(data_path), hint="restore the file the run used, or run again and pack that run")
        name = f"data/stimuli-{safe_part(data_path.name)}"
        files[prefix + name] = data
        hashes["data"] = {"file": name, "format": m.data.format, "rows": m.data.rows, "used": m.data.used,
                          "sha256_at_run": m.data.sha256, "sha256": _sha(data)}
    else:
        hashes["data"] = {"file": None, "note": "the stimuli are given inline in the spec"}
    files[f"{prefix}data/hashes.json"] = _json(hashes)
    for name in ("responses.jsonl", "codes.jsonl"):
        if (run / name).is_file():
            files[f"{prefix}trail/{name}"] = (run / name).read_bytes()
    files.update({prefix + k: v for k, v in _store_slice(run, m, cfg, notes).items()})
    if selftest:
        files[f"{prefix}selftest/selftest.json"] = _selftest(m.overrides)
    return files


def _json(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def _store_slice(run: Path, m: RunManifest, vcfg: AuditConfig, notes: list[str]) -> dict[str, bytes]:
    """Re-render the run offline from its cache in a temporary folder (recording every
    stored answer, embedding and model identity it reads), check that it gives the run's
    own estimates and verdicts, and export what it read."""
    from biasaudit.spec.compose import Composed

    made: list[RecordingAnswerer] = []

    def recorder(*args: Any, **kwargs: Any) -> RecordingAnswerer:
        made.append(RecordingAnswerer(*args, **kwargs))
        return made[-1]

    with tempfile.TemporaryDirectory(prefix="biasaudit-pack-") as tmp, identity_scope() as seen:
        out = Path(tmp) / "run"
        out.mkdir()
        cfg = json.loads(json.dumps(m.config))
        cfg.setdefault("report", {})["formats"] = ["md"]
        again = m.model_copy(update={"config": cfg, "run_dir": str(out)})
        write_output_file(out / "manifest.json", json.dumps(again.as_json(), indent=2, default=str), key="pack",
                          what="scratch manifest", streams=False, ours=True)
        rerender(out, answerer=recorder)
        fresh = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        own = json.loads((run / "summary.json").read_text(encoding="utf-8"))
        # an earlier format is upgraded and compared on what it recorded (as `verify` does)
        theirs, mine = as_compared(own, fresh, file=str(run / "summary.json"))
        differ = [k for k, v in decided(theirs).items() if decided(mine)[k] != v]
        if differ:
            raise BiasAuditError(f"the run's {', '.join(differ)} do not re-compute identically from its cache with "
                                 f"biasaudit {__version__}", file=str(run / "summary.json"),
                                 hint=f"re-render it first (`biasaudit report {run}`), then pack")
        prep = prepare(Composed(config=vcfg, data=m.config, spec_file=Path(m.spec_file), choices=m.choices,
                                overrides=m.overrides))
        cache = Path(m.cache)
        keys = set(prep.plan.requests) | (made[0].keys if made else set())
        store = {"store/responses.jsonl": export_responses(cache, keys),
                 "store/embeddings.jsonl": export_embeddings(cache, made[0].texts if made else {}),
                 "store/calibrations.jsonl": export_calibrations(prep)}
        identity = {"model_under_test": m.model.model_dump(mode="json"),
                    "pinned": seen,
                    "about": "`pinned`: the identity of every model the run's requests are keyed on (weights' "
                             "SHA-256, settings that change answers), by the SHA-256 of its config; `verify` "
                             "uses them instead of hashing weights, so checking a pack needs no model."}
    out_files = {k: v.encode("utf-8") for k, v in store.items()}
    out_files["model/identity.json"] = _json(identity)
    return out_files


def _selftest(overrides: list[str]) -> bytes:
    from biasaudit.runner.selftest import lines, selftests

    results = selftests(list(overrides))
    return _json([{"member": name, "spec": res.spec, "passed": res.passed, "detected": res.detected,
                   "rows": [dataclasses.asdict(r) for r in res.rows], "problems": res.problems, "notes": res.notes,
                   "table": lines(res)} for name, res in results])


def environment() -> bytes:
    pkgs = {}
    for dist in md.distributions():
        name = dist.metadata["Name"] if dist.metadata else None
        if name:
            pkgs[str(name)] = dist.version
    return _json({"python": platform.python_version(), "implementation": platform.python_implementation(),
                  "platform": platform.platform(), "biasaudit": __version__,
                  "packages": dict(sorted(pkgs.items(), key=lambda kv: kv[0].lower()))})


def scrub(files: dict[str, bytes], notes: list[str]) -> None:
    """No registered secret (an `api_key_env` value, the signing key) in any encoding in
    any file: text files are redacted; a binary file holding one, and a PDF rendered from
    a report that held one, are left out."""
    dropped = set()
    for name, data in list(files.items()):
        suffix = Path(name).suffix
        if suffix in TEXT_SUFFIXES:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if text is not None:
                clean = redact(text)
                if clean != text:
                    files[name] = clean.encode("utf-8")
                    notes.append(f"{name}: a secret (an API key or the signing key) was redacted")
                    if name.endswith("report/report.html"):
                        dropped.add(name[: -len("html")] + "pdf")
                continue
        if redact(data.decode("latin-1")) != data.decode("latin-1"):
            dropped.add(name)
    for name in sorted(dropped):
        if files.pop(name, None) is not None:
            notes.append(f"{name}: left out (it may hold a secret that cannot be redacted in place)")


def add_pdfs(files: dict[str, bytes], runs: list[str], notes: list[str]) -> None:
    """Each run's report as PDF: the run's own, else rendered by headless Chromium from the
    packed HTML, else a note saying why there is none."""
    from biasaudit.report.pdf import find_chromium, html_to_pdf

    for run in runs:
        pdf, html = f"runs/{run}/report/report.pdf", f"runs/{run}/report/report.html"
        if pdf in files or html not in files:
            continue
        if find_chromium() is None:
            notes.append(f"{pdf}: not in the pack: the run wrote none and headless Chromium is not installed "
                         "(apt-get install chromium, or set BIASAUDIT_CHROMIUM)")
            continue
        with tempfile.TemporaryDirectory(prefix="biasaudit-pack-pdf-") as tmp:
            src = Path(tmp) / "report.html"
            write_output_file(src, files[html], key="pack", what="scratch copy", streams=False)
            try:
                html_to_pdf(src, Path(tmp) / "report.pdf")
                files[pdf] = (Path(tmp) / "report.pdf").read_bytes()
            except BiasAuditError as exc:
                notes.append(f"{pdf}: not in the pack: {exc.message}")


def build_pack(source: Path, out: Path, *, force: bool = False, key: Ed25519PrivateKey | None = None,
               selftest: bool = False) -> PackResult:
    if os.path.isfile(out) and not os.path.islink(out) and not force:
        raise BiasAuditError("the output file exists", file=str(out), hint="choose another name, or give --force to replace it")
    # the one writer's rule: a link is refused (--force replaces the link, never its target)
    check_output_file(out, key="-o", what="evidence pack", streams=False, force=force)
    kind, runs = find_runs(source)
    notes: list[str] = []
    files: dict[str, bytes] = {}
    names = []
    for run in runs:
        name = safe_part(run.name)
        while name in names:
            name += "_"
        names.append(name)
        files.update(run_files(run, f"runs/{name}/", notes, selftest))
    if kind == "suite":
        for p in sorted(source.iterdir()):
            if p.is_file() and not p.is_symlink() and (p.suffix in REPORT_SUFFIXES or p.name == "summary.json"):
                files[f"suite/{safe_part(p.name)}"] = p.read_bytes()
    if not selftest:
        notes.append("selftest/: not in the pack (give --selftest to run the spec's self-test and include it)")
    files["environment/packages.json"] = environment()
    scrub(files, notes)
    add_pdfs(files, names, notes)
    summaries = {n: json.loads(files[f"runs/{n}/report/summary.json"]) for n in names}
    listed = [*sorted(files), "CROSSWALK.md", *([PUBLIC_KEY_NAME] if key is not None else [])]
    files["CROSSWALK.md"] = redact(crosswalk_page(listed, summaries, notes)).encode("utf-8")
    signing = None
    if key is not None:
        files[PUBLIC_KEY_NAME] = public_pem(key)
        signing = PackSigning(public_key_sha256=fingerprint(key.public_key()))
    manifest = PackManifest(created=datetime.now(UTC).isoformat(timespec="seconds"), biasaudit=__version__,
                            source=kind, runs=names, signing=signing, notes=notes,  # type: ignore[arg-type]
                            files={n: PackedFile(sha256=_sha(b), size=len(b)) for n, b in sorted(files.items())})
    files[MANIFEST_NAME] = (json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True,
                                       ensure_ascii=False) + "\n").encode("utf-8")
    if key is not None:
        files[SIGNATURE_NAME] = base64.b64encode(sign(key, files[MANIFEST_NAME])) + b"\n"
    checks = _self_check(files, key)
    size = _write_zip(out, files, force)
    return PackResult(path=out, files=len(files), size=size, runs=names,
                      fingerprint=signing.public_key_sha256 if signing else None, notes=notes, checks=checks)


def _self_check(files: dict[str, bytes], key: Ed25519PrivateKey | None) -> list[str]:
    """What `verify` will find, checked before anything is written: a pack that would not
    verify is not written."""
    with tempfile.TemporaryDirectory(prefix="biasaudit-pack-check-") as tmp:
        root = Path(tmp) / "pack"
        for name, data in files.items():
            write_output_file(root / name, data, key="pack", what="scratch copy", streams=False)
        rep = check_folder(root, list(files), key.public_key() if key else None, Path(tmp) / "work")
    if rep.problems:
        raise BiasAuditError(f"the pack would not verify: {rep.problems[0]}"
                             + (f" (and {len(rep.problems) - 1} more)" if len(rep.problems) > 1 else ""),
                             hint="nothing was written; re-render the run (`biasaudit report RUN`) and pack again")
    return [line.replace("the key given with --public-key", "the signing key") for line in rep.lines]


def _write_zip(target: Path, files: dict[str, bytes], force: bool) -> int:
    with open_output(target, "wb", key="-o", what="evidence pack", force=force) as raw, \
            zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files, key=lambda n: (n == MANIFEST_NAME or n == SIGNATURE_NAME, n)):
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[name])
    return os.lstat(target).st_size


__all__ = ["PackResult", "build_pack", "find_runs"]
