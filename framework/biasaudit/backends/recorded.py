"""`recorded`: the decisions an application made, exported as a CSV (the applicant's
fields, the decision), replayed as the answers to a spec's requests. An LL144 audit is
often of historical decisions: the same spec that audits the live application
(`http_app`) audits its record, and gives the same table when the record is the
application's own answers.

A row answers every request of its stimulus (all framings, all samples): the
application decided once per applicant. Rows are matched to stimuli by the `key`
columns, each a stimulus field, compared as text. Nothing is guessed: a CSV without the
named columns, with two rows for one key, a row for no stimulus or a stimulus without a
row is refused before the run starts (`check_rows`, from `plan_inputs`), in one line
naming the file and the row.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from biasaudit._util.fileio import path_problem, read_capped
from biasaudit.backends.base import BACKENDS, BackendKind, Emit, Response
from biasaudit.backends.identity import sha256_file
from biasaudit.data import StimulusSet
from biasaudit.errors import BackendError
from biasaudit.plan import Request
from biasaudit.records.json import JSONObject, JSONValue
from biasaudit.spec import RuntimeConfig, RuntimeLimits
from biasaudit.spec.model_configs import RecordedConfig

_HINT = "export one row per applicant with the key columns (model.key) and the decision column (model.decision)"


def _file(cfg: RecordedConfig) -> Path:
    path = Path(cfg.path or "").expanduser()
    problem = path_problem(path) if cfg.path else "not set"
    if problem:
        raise BackendError(f"recorded decisions file: {problem}", file=cfg.path, key="model.path",
                           hint="point model.path at the CSV of the application's decisions")
    return path


def _as_text(v: JSONValue) -> str:
    # a key field read from JSON lines may be a number: compared as the CSV holds it
    return v if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)


def read_decisions(cfg: RecordedConfig, max_bytes: int) -> dict[tuple[str, ...], tuple[int, str]]:
    """Key -> (CSV line, decision); refuses a file that lacks a column, a key given twice
    or a row without a decision."""
    path = _file(cfg)
    raw = read_capped(path, max_bytes, key="model.path", what="recorded decisions file", error=BackendError,
                      hint=_HINT)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BackendError(f"not UTF-8 text (invalid byte at offset {exc.start})", file=str(path),
                           key="model.path", hint=_HINT) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            raise BackendError("the file is empty", file=str(path), key="model.path", hint=_HINT)
        missing = [c for c in [*cfg.key, cfg.decision] if c not in header]
        if missing:
            which = "model.decision" if missing[0] == cfg.decision else "model.key"
            raise BackendError(f"no column {missing[0]!r} (columns: {', '.join(header)[:200]})", file=str(path),
                               key=which, hint=f"name a column of the file in {which}")
        at = [header.index(c) for c in cfg.key]
        col = header.index(cfg.decision)
        out: dict[tuple[str, ...], tuple[int, str]] = {}
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise BackendError(f"line {line} has {len(row)} cells, the header {len(header)}", file=str(path),
                                   key="model.path", hint=_HINT)
            key = tuple(row[i] for i in at)
            if key in out:
                raise BackendError(f"line {line} repeats the key {_show(cfg, key)} of line {out[key][0]}",
                                   file=str(path), key="model.key",
                                   hint="one decision per applicant: remove the duplicate row, or add the column "
                                        "that tells them apart to model.key")
            if not row[col].strip():
                raise BackendError(f"line {line} ({_show(cfg, key)}) has no decision", file=str(path),
                                   key="model.decision", hint=_HINT)
            out[key] = (line, row[col])
    except csv.Error as exc:
        raise BackendError(f"not a readable CSV: {exc}", file=str(path), key="model.path", hint=_HINT) from None
    return out


def _show(cfg: RecordedConfig, key: tuple[str, ...]) -> str:
    return ", ".join(f"{c}={v!r}" for c, v in zip(cfg.key, key, strict=True))[:160]


def check_rows(cfg: RecordedConfig, stimuli: StimulusSet, limits: RuntimeLimits) -> None:
    """Every stimulus has exactly one row and every row a stimulus, or a one-line refusal
    naming the file and the first row (or stimulus) that does not match."""
    path = str(_file(cfg))
    absent = [c for c in cfg.key if c not in stimuli.field_names]
    if absent:
        raise BackendError(f"model.key column {absent[0]!r} is not a stimulus field", file=path, key="model.key",
                           hint=f"key the rows by stimulus fields: {', '.join(sorted(stimuli.field_names))[:200]}")
    decisions = read_decisions(cfg, limits.max_data_bytes)
    seen: dict[tuple[str, ...], str] = {}
    for s in stimuli.stimuli:
        key = tuple(_as_text(s.fields.get(c)) for c in cfg.key)
        if key in seen:
            raise BackendError(f"stimuli {seen[key]!r} and {s.id!r} share the key {_show(cfg, key)}", file=path,
                               key="model.key", hint="add the field that tells them apart to model.key")
        seen[key] = s.id
        if key not in decisions:
            raise BackendError(f"no row for stimulus {s.id!r} ({_show(cfg, key)})", file=path, key="model.path",
                               hint="the file must hold a decision for every stimulus the spec selects")
    for key, (line, _d) in sorted(decisions.items(), key=lambda kv: kv[1][0]):
        if key not in seen:
            raise BackendError(f"line {line} ({_show(cfg, key)}) matches no stimulus", file=path, key="model.path",
                               hint="remove rows for applicants the spec does not select, or select them "
                                    "(stimuli.where / stimuli.sample)")


class RecordedBackend:
    supports = frozenset({"generate"})

    def __init__(self, cfg: RecordedConfig, max_bytes: int = RuntimeLimits().max_data_bytes) -> None:
        self.cfg = cfg
        self.decisions = read_decisions(cfg, max_bytes)

    def execute(self, requests: Sequence[Request], emit: Emit) -> None:
        for r in requests:
            fields = (r.stimulus or {}).get("fields")
            if r.kind != "generate" or not isinstance(fields, dict):
                emit(Response(key=r.key, status="failed", error_kind="unsupported",
                              error="recorded decisions answer the spec's own requests only"))
                continue
            found = self.decisions.get(tuple(_as_text(fields.get(c)) for c in self.cfg.key))
            if found is None:  # check_rows refused this before the run; a request not of the plan
                emit(Response(key=r.key, status="failed", error="no recorded decision for this stimulus"))
                continue
            emit(Response(key=r.key, status="ok", output={"text": found[1], "finish_reason": "recorded",
                                                          "output_tokens": len(found[1].split())}))

    def apply_runtime(self, runtime: RuntimeConfig) -> None:
        """Nothing to apply: the decisions are read once."""

    def close(self) -> None:
        pass


def identity(cfg: RecordedConfig) -> JSONObject:
    return {"backend": "recorded", "sends_stimulus": True, "sha256": sha256_file(_file(cfg)),
            "decision": cfg.decision, "key": list(cfg.key)}


BACKENDS.add(
    "recorded",
    BackendKind(config=RecordedConfig, supports=RecordedBackend.supports, identity=identity,
                build=lambda cfg, rt: RecordedBackend(cfg, rt.limits.max_data_bytes), local=True,
                check_stimuli=check_rows),
)
