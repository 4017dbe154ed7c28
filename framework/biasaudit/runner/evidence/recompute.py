"""Re-computing a packed run with no model: the run is rebuilt in a temporary folder from
the pack alone (its spec, data, resolved config, the store slice rebuilt as a fresh cache
and the model identities the stored responses are keyed on) and re-rendered through the
same path as `biasaudit report RUN` (`runner.pipeline.rerender`). Its estimates and
verdicts must be byte-identical to the packed summary's."""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass
from pathlib import Path

from biasaudit._util.fileio import write_output_file
from biasaudit.backends import identity_scope
from biasaudit.errors import BiasAuditError
from biasaudit.records.json import JSONObject, JSONValue
from biasaudit.records.manifest import RunManifest
from biasaudit.records.upgrade import upgrade
from biasaudit.records.upgrade.summary import as_recorded
from biasaudit.runner.evidence.store_export import PackedAnswerer, import_store
from biasaudit.runner.pipeline import rerender
from biasaudit.spec import RuntimeLimits

DECIDED = ("metrics", "verdicts", "overall", "measured", "unmeasured_reason", "validity")
"""The parts of summary.json that carry estimates and verdicts (the rest is when and how
long: it differs between a run and its re-rendering)."""


def decided(summary: JSONObject) -> dict[str, str]:
    """Each decided part of a summary as canonical JSON text (what is compared byte for byte)."""
    return {k: json.dumps(summary.get(k), sort_keys=True, ensure_ascii=False, separators=(",", ":")) for k in DECIDED}


def as_compared(written: JSONObject, fresh: JSONObject, *, file: str) -> tuple[JSONObject, JSONObject]:
    """`written` (a summary.json as read, of any format) upgraded to today's layout, and
    `fresh` (re-computed today), both as `written`'s version recorded them: a field that
    version did not keep is not compared (records/upgrade/summary.py, `UNRECORDED`). A
    newer format: `NewerFormatError`, one line."""
    up, read = upgrade("summary", written, file=file)
    return as_recorded(up, written, read), as_recorded(fresh, written, read)


@dataclass
class Recomputed:
    summary: JSONObject
    """The re-rendered summary.json."""
    codes: bytes | None
    """The re-rendered codes.jsonl (None: the run has no coding layers)."""
    trail: bytes
    """The audit trail (responses.jsonl) written again from the packed store rows."""


def _section(cfg: JSONObject, key: str) -> JSONObject:
    node = cfg.setdefault(key, {})
    if not isinstance(node, dict):
        raise BiasAuditError(f"`{key}` is not a mapping", file="config/manifest.json")
    return node


# Bounds on what the re-computation may build, kept at most at their defaults whatever the
# packed config says (a pack could raise them to exhaust the verifier's machine); the
# limits that change results (`max_coding_chars`) are the run's own.
_RESOURCE_LIMITS = ("max_cells", "max_plan_items", "max_stimuli", "max_data_bytes", "template_chars",
                    "template_steps", "template_seconds")


def _bounded(packed: JSONValue) -> JSONObject:
    default: JSONObject = RuntimeLimits().model_dump(mode="json")
    limits = {**default, **(packed if isinstance(packed, dict) else {})}
    for k in _RESOURCE_LIMITS:
        v, cap = limits.get(k), default[k]
        limits[k] = (min(v, cap) if isinstance(v, (int, float)) and not isinstance(v, bool)
                     and isinstance(cap, (int, float)) else cap)
    return limits


def pinned_identities(path: Path) -> dict[str, JSONObject]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    table = raw.get("pinned") if isinstance(raw, dict) else None
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise BiasAuditError("no `pinned` identities", file="model/identity.json")
    return table


def recompute(run: Path, work: Path) -> Recomputed:
    """Re-render the packed run in `run` (a `runs/<name>/` folder of an extracted pack)
    inside the empty folder `work`."""
    m = RunManifest.read_raw(json.loads((run / "config" / "manifest.json").read_text(encoding="utf-8")),
                             file=f"runs/{run.name}/config/manifest.json")
    specs = sorted((run / "spec").glob("*")) if (run / "spec").is_dir() else []
    if len(specs) != 1:
        raise BiasAuditError("the pack holds no spec file for this run", file=f"runs/{run.name}/spec")
    cfg = copy.deepcopy(m.config)
    cache = work / "cache.sqlite"
    # The packed config is untrusted: every path it names is replaced by the packed file
    # (none may point at the verifier's files), and its resource limits are the defaults.
    stimuli, runtime, report = (_section(cfg, k) for k in ("stimuli", "runtime", "report"))
    if stimuli.get("source") is not None or m.data.source is not None:
        data = sorted((run / "data").glob("stimuli-*")) if (run / "data").is_dir() else []
        if len(data) != 1:
            raise BiasAuditError("the pack holds no data file for this run", file=f"runs/{run.name}/data")
        stimuli["source"] = str(data[0].resolve())
        m.data.source = str(data[0].resolve())
    runtime.update(cache=str(cache), limits=_bounded(runtime.get("limits")), models_dir=str(work / "models"),
                   job_cache_dir=None, reports_dir=str(work))
    report["formats"] = ["md"]  # the numbers are all that is compared: no PDF, no browser
    if report.get("crosswalk"):
        packed = run / "config" / "crosswalk.yaml"
        if not packed.is_file():
            raise BiasAuditError("the pack holds no crosswalk file for this run", file=f"runs/{run.name}/config")
        report["crosswalk"] = str(packed.resolve())
    out = work / "run"
    out.mkdir()
    # `spec_file` stays the run's: it is only a label here (the packed spec is the evidence,
    # the config as run is what is re-computed), and messages that name it (e.g. "run
    # `biasaudit calibrate spec=...`") must read as they did; every path is absolute now
    m = m.model_copy(update={"config": cfg, "cache": str(cache), "run_dir": str(out)})
    write_output_file(out / "manifest.json", json.dumps(m.as_json(), indent=2, default=str), key="verify",
                      what="scratch manifest", streams=False, ours=True)
    vectors = import_store(run / "store", cache)
    with identity_scope(pinned_identities(run / "model" / "identity.json"), strict=True):
        rerender(out, answerer=functools.partial(PackedAnswerer, vectors=vectors), trail=True)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    codes = (out / "codes.jsonl").read_bytes() if (out / "codes.jsonl").is_file() else None
    return Recomputed(summary=summary, codes=codes, trail=(out / "responses.jsonl").read_bytes())
