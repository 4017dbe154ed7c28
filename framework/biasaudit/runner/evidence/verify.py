"""`biasaudit verify`: a pack's every digest, its signature, and its estimates and verdicts
re-computed from the packed responses (no model call), compared byte for byte with the
packed summary. Each problem is one line naming the file."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from biasaudit._util.trail import header_version, split_header, split_lines
from biasaudit.errors import BiasAuditError
from biasaudit.records.evidence import MANIFEST_NAME, PUBLIC_KEY_NAME, SIGNATURE_NAME, PackManifest
from biasaudit.records.upgrade import NewerFormatError, check_readable, current, upgrade, version_of
from biasaudit.runner.evidence.recompute import DECIDED, as_compared, decided, recompute
from biasaudit.runner.evidence.signing import fingerprint, load_public_key, signature_ok
from biasaudit.runner.evidence.zipsafe import check_name, extract


@dataclass
class VerifyReport:
    problems: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    """What was checked and found sound."""

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_pack(pack: Path, public_key: Ed25519PublicKey | None = None) -> VerifyReport:
    """Check a pack file (untrusted): extracted into a temporary folder only."""
    with tempfile.TemporaryDirectory(prefix="biasaudit-verify-") as tmp:
        root = Path(tmp) / "pack"
        root.mkdir()
        names = extract(pack, root)
        return check_folder(root, names, public_key, Path(tmp) / "work")


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_folder(root: Path, names: list[str], public_key: Ed25519PublicKey | None, work: Path) -> VerifyReport:
    """Check an extracted pack in `root` whose files are `names`."""
    rep = VerifyReport()
    if MANIFEST_NAME not in names:
        rep.problems.append(f"{MANIFEST_NAME}: missing (not an evidence pack written by `biasaudit pack`)")
        return rep
    raw = (root / MANIFEST_NAME).read_bytes()  # the signature is checked over these bytes, as written
    try:
        manifest, read = PackManifest.read_raw(json.loads(raw), file=MANIFEST_NAME)
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON
        rep.problems.append(f"{MANIFEST_NAME}: not a pack manifest ({str(exc)[:80]})")
        return rep
    except NewerFormatError:
        raise  # a pack this biasaudit cannot read: one line, exit 2 (upgrade biasaudit)
    except BiasAuditError as exc:
        rep.problems.append(f"{MANIFEST_NAME}: not a pack manifest ({exc.message[:160]})")
        return rep
    now = current("pack")
    rep.lines.append(f"format: read evidence pack format {read}, upgraded to {now}" if read < now
                     else f"format: evidence pack format {read} (this biasaudit's)")
    _check_signature(root, names, manifest, raw, public_key, rep)
    _check_digests(root, names, manifest, rep)
    for run in manifest.runs:
        if check_name(run) or "/" in run or not (root / "runs" / run).is_dir():
            rep.problems.append(f"{MANIFEST_NAME}: run {run[:80]!r} is not a folder of the pack")
            continue
        _check_run(root / "runs" / run, f"runs/{run}", work / run, rep)
    return rep


def _check_signature(root: Path, names: list[str], manifest: PackManifest, raw: bytes,
                     given: Ed25519PublicKey | None, rep: VerifyReport) -> None:
    if SIGNATURE_NAME not in names:
        if manifest.signing is not None:
            rep.problems.append(f"{SIGNATURE_NAME}: missing (MANIFEST.json says the pack was signed)")
        elif given is not None:
            rep.problems.append(f"{SIGNATURE_NAME}: missing: the pack is not signed, but --public-key was given")
        else:
            rep.lines.append("signature: none (the pack is not signed)")
        return
    if manifest.signing is None:
        rep.problems.append(f"{SIGNATURE_NAME}: present, but MANIFEST.json names no signing key")
        return
    key = given
    if key is None:
        if PUBLIC_KEY_NAME not in names:
            rep.problems.append(f"{PUBLIC_KEY_NAME}: missing (needed to check the signature without --public-key)")
            return
        try:
            key = load_public_key((root / PUBLIC_KEY_NAME).read_bytes(), PUBLIC_KEY_NAME)
        except BiasAuditError as exc:
            rep.problems.append(f"{PUBLIC_KEY_NAME}: {exc.message}")
            return
    fp = fingerprint(key)
    if fp != manifest.signing.public_key_sha256:
        rep.problems.append(f"{SIGNATURE_NAME}: the pack was signed with key sha256:{manifest.signing.public_key_sha256[:16]}..., "
                            f"not with {'--public-key' if given is not None else PUBLIC_KEY_NAME} (sha256:{fp[:16]}...)")
        return
    try:
        sig = base64.b64decode((root / SIGNATURE_NAME).read_bytes().strip(), validate=True)
    except (binascii.Error, ValueError):
        rep.problems.append(f"{SIGNATURE_NAME}: not a base64 signature")
        return
    if not signature_ok(key, sig, raw):
        rep.problems.append(f"{SIGNATURE_NAME}: the signature does not match MANIFEST.json (the manifest was changed "
                            "after signing, or signed with another key)")
        return
    trust = "the key given with --public-key" if given is not None else \
        "the key packed in MANIFEST.pub: give --public-key to check it is the key you trust"
    rep.lines.append(f"signature: valid Ed25519 signature of MANIFEST.json by key sha256:{fp[:16]}... ({trust})")


def _check_digests(root: Path, names: list[str], manifest: PackManifest, rep: VerifyReport) -> None:
    present = set(names)
    before = len(rep.problems)
    for name, want in sorted(manifest.files.items()):
        if name not in present:
            rep.problems.append(f"{name}: missing (listed in MANIFEST.json)")
        elif _sha(root / name) != want.sha256:
            rep.problems.append(f"{name}: SHA-256 differs from MANIFEST.json (the file was changed)")
    for name in sorted(present - set(manifest.files) - {MANIFEST_NAME, SIGNATURE_NAME}):
        rep.problems.append(f"{name}: not listed in MANIFEST.json (a file was added)")
    if len(rep.problems) == before:
        rep.lines.append(f"digests: {len(manifest.files)} files match MANIFEST.json, none missing, none added")


def _json(path: Path) -> object:
    out: object = json.loads(path.read_text(encoding="utf-8"))
    return out


def _check_run(run: Path, where: str, work: Path, rep: VerifyReport) -> None:
    work.mkdir(parents=True, exist_ok=True)
    try:
        packed = _json(run / "report" / "summary.json")
        if not isinstance(packed, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError, RecursionError) as exc:
        rep.problems.append(f"{where}/report/summary.json: unreadable ({str(exc)[:80]})")
        return
    try:
        check_readable("summary", version_of("summary", packed), file=f"{where}/report/summary.json")
    except BiasAuditError as exc:
        rep.problems.append(f"{where}/report/summary.json: {exc.message}")
        return
    try:
        again = recompute(run, work)
    except BiasAuditError as exc:
        rep.problems.append(f"{where}: cannot re-compute the estimates from the packed responses: "
                            f"{exc.one_line().removeprefix('error: ')}")
        return
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        # a damaged pack file the pipeline does not expect (pydantic's errors are ValueErrors)
        rep.problems.append(f"{where}: cannot re-compute the estimates from the packed responses: "
                            f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}")
        return
    # the packed summary upgraded, and the re-computed one, both as the packed version recorded them
    theirs, mine = as_compared(packed, again.summary, file=f"{where}/report/summary.json")
    a, b = decided(theirs), decided(mine)
    for k in DECIDED:
        if a[k] != b[k]:
            detail = ""
            tm, mm = theirs.get("metrics"), mine.get("metrics")
            if k == "metrics" and isinstance(tm, dict) and isinstance(mm, dict):
                differ = sorted(m for m in set(tm) | set(mm)
                                if json.dumps(tm.get(m), sort_keys=True) != json.dumps(mm.get(m), sort_keys=True))
                detail = f" ({', '.join(differ)[:120]})"
            rep.problems.append(f"{where}/report/summary.json: {k}{detail} re-computed from the packed responses "
                                "differ from the packed ones")
    codes = run / "trail" / "codes.jsonl"
    if again.codes is not None or codes.is_file():
        if not codes.is_file() or not _same_trail(codes.read_bytes(), again.codes or b"", "codes",
                                                  f"{where}/trail/codes.jsonl", rep):
            rep.problems.append(f"{where}/trail/codes.jsonl: differs from the codes re-computed from the packed responses")
    _check_trail(run, where, again.trail, rep)
    if not any(p.startswith(where + "/") or p.startswith(where + ":") for p in rep.problems):
        metrics, verdicts = again.summary.get("metrics"), again.summary.get("verdicts")
        n_metrics = len(metrics) if isinstance(metrics, dict) else 0
        n_verdicts = len(verdicts) if isinstance(verdicts, list) else 0
        rep.lines.append(f"{where}: {n_metrics} metric(s) and {n_verdicts} verdict(s) re-computed from the packed "
                         f"responses with no model call: byte-identical (overall {again.summary.get('overall')})")


def _packed_version(packed: bytes, kind: str, name: str) -> int:
    """The version of a packed trail: its header's (checked), or 1 without one."""
    head, _ = split_header(packed)
    return 1 if head is None else header_version(head, kind, file=name, error=BiasAuditError)


def _same_trail(packed: bytes, again: bytes, kind: str, name: str, rep: VerifyReport) -> bool:
    """A packed trail is the re-computed one, byte for byte after its header: a trail of
    an earlier version (no header, format 1) holds the same lines today's writes after
    the header (records/upgrade/<kind>.py: the steps so far change no line; a step that
    changes lines would compare upgraded records here)."""
    try:
        read = _packed_version(packed, kind, name)
    except BiasAuditError as exc:
        rep.problems.append(exc.one_line().removeprefix("error: "))
        return True  # reported once, here
    if read < current(kind):
        rep.lines.append(f"{name}: read format {read}, upgraded to {current(kind)}")
    return split_header(packed)[1] == split_header(again)[1]


def _check_trail(run: Path, where: str, again: bytes, rep: VerifyReport) -> None:
    """The audit trail (trail/responses.jsonl) is the one the packed store rows give, item
    by item (compared as JSON: the cache keeps outputs with sorted keys, the run wrote them
    in the order the model's answer had)."""
    name = f"{where}/trail/responses.jsonl"
    read = 1
    try:
        data = (run / "trail" / "responses.jsonl").read_bytes()
        read = _packed_version(data, "responses", name)
        if read < current("responses"):
            rep.lines.append(f"{name}: read format {read}, upgraded to {current('responses')}")
        # (the header is no item: its line number is kept for the messages)
        packed = [(i, line) for i, line in split_lines(data, file=name, error=BiasAuditError)
                  if not (i == 1 and split_header(data)[0] is not None)]
    except OSError:
        rep.problems.append(f"{name}: missing or not UTF-8 text")
        return
    except BiasAuditError as exc:  # a line not UTF-8 or too long
        rep.problems.append(exc.one_line().removeprefix("error: "))
        return
    fresh = [line for _, line in split_lines(split_header(again)[1], file="the re-written trail",
                                             error=BiasAuditError)]
    for (i, a), b in zip(packed, fresh, strict=False):
        try:  # the packed line read as today's (records/upgrade/responses.py)
            line = json.loads(a)
            same = isinstance(line, dict) and upgrade("responses", line, file=name, version=read)[0] == json.loads(b)
        except (ValueError, RecursionError, BiasAuditError):
            same = False
        if not same:
            rep.problems.append(f"{name}: line {i} does not match the stored response "
                                "the estimates are computed from")
            return
    if len(packed) != len(fresh):
        rep.problems.append(f"{name}: {len(packed)} lines, but the plan has {len(fresh)} "
                            "items (lines were removed or added)")
