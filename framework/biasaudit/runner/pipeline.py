"""One run, stage by stage: prepare (validate, load, compile) -> execute -> code ->
measure -> judge -> render. Each stage reads what the previous one produced."""

from __future__ import annotations

import copy
import gc
import json
import logging
import platform
import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from pydantic import BaseModel

from biasaudit._util.fileio import atomic_write
from biasaudit._util.progress import stage
from biasaudit._util.secrets import guard_logging, watch_config
from biasaudit._util.trail import write_encoded_lines
from biasaudit._version import __version__
from biasaudit.backends import (
    audit_identity,
    audit_subject,
    build_audit_backend,
    check_stimuli,
    kind_of,
    nli_kind,
)
from biasaudit.coding.base import LayerCalls
from biasaudit.coding.calibration_record import calibration_problems
from biasaudit.coding.human_review import below_chance_flags
from biasaudit.coding.layers import CodingPlan
from biasaudit.coding.routes import StoreAnswerer
from biasaudit.coding.stage import CodingResult, run_coding
from biasaudit.coding.summary import coding_report
from biasaudit.coding.units import check_plans, units_of
from biasaudit.data import StimulusSet, file_sha256, load_stimuli
from biasaudit.engine import execute_plan
from biasaudit.errors import BiasAuditError, SpecError
from biasaudit.metrics import MetricContext
from biasaudit.metrics.validity import counts_flag, depends_on, failure_flag, layer_flags
from biasaudit.plan import Plan, compile_plan
from biasaudit.records.budget import BudgetRecord
from biasaudit.records.coding import CodingReport
from biasaudit.records.execution import ExecutionStats
from biasaudit.records.json import JSONObject
from biasaudit.records.manifest import FORMAT_VERSION, DataRef, ModelRef, RunManifest
from biasaudit.records.metric_result import MetricResult, ValidityFlag
from biasaudit.records.responses import Response
from biasaudit.records.sequential import SequentialRecord
from biasaudit.records.summary import (
    AuditInfo,
    DataInfo,
    DesignInfo,
    ModelInfo,
    RunSummary,
)
from biasaudit.records.upgrade.summary import CURRENT as SUMMARY_FORMAT
from biasaudit.records.verdict import VerdictRecord
from biasaudit.registry import METRICS
from biasaudit.report.presentation import present
from biasaudit.runner.checks import (
    apply_limits,
    check_breakdowns,
    check_config,
    coding_plan,
    level_groups,
)
from biasaudit.spec import AuditConfig
from biasaudit.spec.compose import Composed
from biasaudit.store import Store
from biasaudit.verdicts.thresholds import evaluate

if TYPE_CHECKING:
    from biasaudit.runner.sequential import SequentialOutcome

log = logging.getLogger(__name__)


class PlanInputs(NamedTuple):
    params: dict[str, BaseModel]
    """Checked metric parameters, by metric id."""
    stimuli: StimulusSet
    identity: JSONObject
    """The model under test's identity (part of every subject request's hash)."""
    coding: CodingPlan


@dataclass
class Prepared:
    composed: Composed
    stimuli: StimulusSet
    plan: Plan
    params: dict[str, BaseModel]
    identity: JSONObject
    coding: CodingPlan


def plan_inputs(composed: Composed) -> PlanInputs:
    """Checked metric parameters, loaded stimuli, the model identity and the checked
    coding layers: what a plan is compiled (or only counted) from."""
    cfg = composed.config
    spec_file = str(composed.spec_file)
    watch_config(cfg)
    apply_limits(cfg.runtime.limits)
    params = check_config(cfg, spec_file, composed.choices)
    stimuli = load_stimuli(cfg.stimuli, composed.spec_file, cfg.runtime.limits)
    check_breakdowns(cfg, params, stimuli.field_names, stimuli.source, spec_file)
    coding = coding_plan(cfg, params, stimuli.field_names, spec_file)
    try:
        identity = audit_identity(cfg)
    except BiasAuditError as exc:
        if exc.file is None and composed.choices.get("model"):
            exc.file = f"conf/model/{composed.choices['model']}.yaml"
        raise
    check_stimuli(cfg, stimuli)  # e.g. a recorded decisions file: one row per stimulus, before any run
    return PlanInputs(params, stimuli, identity, coding)


def prepare(composed: Composed) -> Prepared:
    """Everything that can fail on bad input, before any model call or file write."""
    params, stimuli, identity, coding = plan_inputs(composed)
    from biasaudit.runner.budget import check_budget

    check_budget(composed.config, str(composed.spec_file), composed.choices.get("model"), coding)  # refused now
    from biasaudit.runner.shards import check_shards

    check_shards(composed.config, str(composed.spec_file))  # e.g. shards with a budget: refused now
    if composed.config.runtime.sequential.look_every is not None:
        from biasaudit.runner.sequential import schedule

        schedule(len(stimuli.stimuli), composed.config.runtime.sequential)  # too many looks: refused now
        # A look judges on repeated two-sided intervals; an equivalence band would need its
        # own spending of 2*alpha at every look (TOST), which the looks do not compute yet.
        for i, t in enumerate(composed.config.thresholds):
            if t.equivalence is not None:
                raise SpecError("an equivalence threshold cannot be judged at the looks of a sequential run",
                                file=str(composed.spec_file), key=f"thresholds[{i}].equivalence",
                                hint="run without runtime.sequential, or use min/max bounds for this threshold")
    stage("planning %s (%d stimuli)", composed.config.audit.name, len(stimuli.stimuli))
    plan = compile_plan(composed.config, stimuli, identity, str(composed.spec_file))
    stage("plan: %d cell(s) x %d stimuli = %d items, %d unique requests (%s)%s",
          len(plan.cells), len(stimuli.stimuli), plan.n_items, len(plan.requests), plan.kind,
          f"; coding layers: {', '.join(coding.layers)}" if coding.layers else "")
    prep = Prepared(composed=composed, stimuli=stimuli, plan=plan, params=params, identity=identity, coding=coding)
    check_plans(prep)  # a review sheet from another run: refused before any model call
    return prep


@dataclass
class Coded:
    """The coding stage's output: codes per layer and unit, and its calls per layer."""

    result: CodingResult
    calls: dict[str, LayerCalls]




def code(prep: Prepared, responses: Mapping[str, Response], stats: ExecutionStats | None = None,
         offline: bool = False, answerer: StoreAnswerer | None = None) -> Coded:
    """The coding stage: every layer codes every answered unit; its model calls are
    cached requests (offline: answered only from the store). An evidence pack passes its
    own offline `answerer` (one that records, or serves packed embeddings)."""
    if not prep.coding.layers:
        return Coded(CodingResult(codes={}, units=[]), {})
    answerer = answerer or StoreAnswerer(prep.composed.config, offline=offline, stats=stats)
    t0 = time.perf_counter()
    try:
        result = run_coding(prep.coding, units_of(prep), responses, answerer)
    finally:
        answerer.close()
        if stats is not None and not offline:  # a re-render keeps the run's own timing
            stats.coding_s += time.perf_counter() - t0
    return Coded(result, dict(answerer.per_layer))


def measure(prep: Prepared, responses: Mapping[str, Response], coded: Coded, *, calibration: bool = True,
            accept_dominant: frozenset[str] = frozenset()) -> dict[str, MetricResult]:
    """Every metric, a pure function of the plan, the responses and the codes, with the
    validity flags of the run and the layers it reads (`guard`)."""
    cfg = prep.composed.config
    ctx = MetricContext(config=cfg, plan=prep.plan, responses=responses, units=coded.result.units,
                        codes=coded.result.codes, layers=prep.coding.layers)
    results = {m.key: present(METRICS.get(m.name).compute(ctx, m.key, prep.params[m.key]), m.name,
                              prep.params[m.key], cfg) for m in cfg.metrics}
    return guard(prep, responses, coded, results, calibration=calibration, accept_dominant=accept_dominant)


def code_and_measure(prep: Prepared, responses: Mapping[str, Response], stats: ExecutionStats,
                     offline: bool) -> tuple[Coded, dict[str, MetricResult]]:
    """The coding stage, then the metrics: one look of a sequential run (runner/sequential.py)."""
    coded = code(prep, responses, stats, offline=offline)
    return coded, measure(prep, responses, coded)


def guard(prep: Prepared, responses: Mapping[str, Response], coded: Coded, results: dict[str, MetricResult], *,
          calibration: bool = True, accept_dominant: frozenset[str] = frozenset()) -> dict[str, MetricResult]:
    """Add to each result the validity flags that come from outside the metric: the run's
    failed requests and the coding layers it reads (metrics/validity.py). The self-test
    turns off the stored calibrations (its judges are oracles) and may accept the
    dominance of layers it has shown to discriminate (`accept_dominant`)."""
    cfg = prep.composed.config
    v = cfg.validity
    run_flag = unmeasured(prep, responses)
    stored = {n: ValidityFlag(kind=k, message=msg, layer=n) for n, (k, msg) in
              calibration_problems(cfg, prep.coding, str(prep.composed.spec_file)).items()} if calibration else {}
    per_layer = layer_flags(prep.coding, coded.result.units, coded.result.codes, v, stored) \
        if prep.coding.layers else {}
    per_layer = {n: [f.model_copy(update={"blocking": False}) if f.kind == "dominant_label" and n in accept_dominant
                     else f for f in fs] for n, fs in per_layer.items()}
    # a judge worse than chance against the humans' labels: beside every verdict it feeds
    for name, flag in below_chance_flags(prep.coding, coded.result.units, coded.result.codes).items():
        per_layer.setdefault(name, []).append(flag)
    out: dict[str, MetricResult] = {}
    for m in cfg.metrics:
        res = results[m.key]
        bound = [x for x in METRICS.get(m.name).layers(prep.params[m.key]).values() if x]
        # a metric that names no layer reads every primary layer the spec declares
        roots = bound or prep.coding.primary
        flags = [f for lay in depends_on(prep.coding, roots) for f in per_layer.get(lay, [])]
        if not any(f.kind == "valid_share" for f in res.validity):
            own = counts_flag(res.counts, v.min_valid_share)
            if own is not None:
                flags.insert(0, own)
        # the failed requests first: the metric's own shortfall is their consequence
        lead = [run_flag] if run_flag is not None else []
        out[m.key] = res.model_copy(update={"validity": [*lead, *res.validity, *flags]}) if flags or lead else res
    return out


def unmeasured(prep: Prepared, responses: Mapping[str, Response]) -> ValidityFlag | None:
    """The run could not measure: more than `validity.max_failed_share` of its model
    requests failed (a server down, a wrong key or URL). None when it measured."""
    # one response at a time: only the failed ones are kept (issue 42)
    subject = 0
    failed: list[Response] = []
    for k in prep.plan.requests:
        if k in responses:
            subject += 1
            r = responses[k]
            if r.status != "ok":
                failed.append(r)
    return failure_flag(len(failed), subject, [(r.error_kind, r.error) for r in failed],
                        prep.composed.config.validity.max_failed_share)


def versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version(), "biasaudit": __version__, "platform": platform.platform()}
    for pkg in ("torch", "transformers", "gguf", "sentence-transformers", "hydra-core", "pydantic",
                "numpy", "scipy", "statsmodels", "pandas", "httpx"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def manifest(prep: Prepared, run_id: str, command: list[str]) -> RunManifest:
    c = prep.composed
    cfg = c.config
    return RunManifest(
        format_version=FORMAT_VERSION,
        run_id=run_id,
        audit=cfg.audit.name,
        method=cfg.audit.method,
        command=command,
        coding_layers={n: lay.coder_name for n, lay in prep.coding.layers.items()},
        overrides=c.overrides,
        choices=c.choices,
        spec_file=str(c.spec_file),
        spec_sha256=file_sha256(c.spec_file),
        data=DataRef(source=prep.stimuli.source, sha256=prep.stimuli.sha256, format=prep.stimuli.format,
                     rows=prep.stimuli.n_total, used=len(prep.stimuli.stimuli), selected=prep.stimuli.selected,
                     sample=prep.stimuli.sample, provenance=prep.stimuli.provenance),
        model=ModelRef(name=audit_subject(cfg), backend=cfg.model.backend if cfg.probe.kind != "classify_nli"
                       else f"{cfg.nli.backend if cfg.nli else '?'} via {cfg.model.backend}", identity=prep.identity),
        seed=cfg.runtime.seed,
        cache=str(Path(cfg.runtime.cache).resolve()),
        versions=versions(),
        config=c.data,
    )


def _manifest_text(m: RunManifest) -> str:
    return json.dumps(m.as_json(), indent=2, default=str)


def settle() -> None:
    """Move what the stages so far built (the plan, the responses, the codes) out of the
    cyclic garbage collector's reach (`gc.freeze`): they live until the run ends, and each
    full collection would walk all of them again. With 80,200 requests the full
    collections took most of the coding stage and grew faster than the run (issue 42).
    `run` unfreezes them when it ends; reference counting frees them as before."""
    gc.freeze()


def _write(path: Path, text: str) -> None:
    """A file of the run (or compare, suite) folder: the one writer (`fileio`), as the
    folder's own file: an old copy is refreshed, a link there refused, never followed."""
    atomic_write(path, text, key="run folder", what="run file")


def write_codes(path: Path, coded: Coded) -> None:
    """codes.jsonl: one line per layer and unit, with what the layer said and why
    (embedding vectors are left out: they are in the store); streamed in chunks."""
    from biasaudit.report.trails import code_lines

    write_encoded_lines(path, code_lines(coded.result.codes), kind="codes")


def write_trail(path: Path, prep: Prepared, responses: Mapping[str, Response]) -> None:
    """responses.jsonl: one line per plan item, with its request and answer (written whole
    or not at all: a read-only folder or a full disk leaves no half-written file), streamed
    in chunks (report/trails.py encodes the lines)."""
    from biasaudit.report.trails import response_lines

    write_encoded_lines(path, response_lines(prep.plan, responses), kind="responses")


def finish(
    prep: Prepared, responses: Mapping[str, Response], stats: ExecutionStats, run_dir: Path,
    run_manifest: RunManifest, *, write_responses: bool = True, offline: bool = False,
    answerer: StoreAnswerer | None = None, looked: SequentialOutcome | None = None,
    budget: BudgetRecord | None = None,
) -> RunSummary:
    """Code, measure, judge and report. With `looked` (a sequential run), its last look's
    codes and metrics and its verdicts are the run's (`prep`, `responses` and `stats` are
    then those of the stimuli it took)."""
    from biasaudit.report import render_all

    cfg = prep.composed.config
    if looked is not None:
        coded = looked.coded
    else:
        if prep.coding.layers:
            stage("coding: %s", ", ".join(f"{n} ({lay.coder_name})" for n, lay in prep.coding.layers.items()))
        settle()
        coded = code(prep, responses, stats, offline=offline, answerer=answerer)
    settle()
    # the run stage is the model calls and the coding calls together
    stats.run_stage_s = stats.seconds + stats.coding_s
    if not offline:
        run_manifest.run_stage_s = round(stats.run_stage_s, 3)
        run_manifest.execution = stats
    if looked is not None:
        results, verdicts = looked.results, looked.verdicts
    else:
        stage("measuring: %s", ", ".join(m.key for m in cfg.metrics))
        results = measure(prep, responses, coded)
        verdicts = evaluate(cfg.thresholds, results)
        settle()
    if budget is not None:
        from biasaudit.runner.budget import budget_verdicts

        verdicts = budget_verdicts(verdicts, budget)
    stage("reporting: %s in %s", ", ".join(sorted(set(cfg.report.formats) | {"json", "csv"})), run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if write_responses:
        write_trail(run_dir / "responses.jsonl", prep, responses)
    if coded.result.codes:
        write_codes(run_dir / "codes.jsonl", coded)
    _write(run_dir / "manifest.json", _manifest_text(run_manifest))
    summary = build_summary(prep, results, verdicts, stats, run_manifest, responses, coded,
                            looked.record if looked is not None else None, budget)
    # summary.json goes last: a folder with one is complete (`compare` and reruns rely
    # on that), even when the process is killed while the report is being written
    held: dict[Path, str] = {}

    def write(path: Path, text: str) -> None:
        if path.name == "summary.json":
            held[path] = text
        else:
            _write(path, text)

    from biasaudit.report.answers import item_texts

    render_all(run_dir, summary, cfg.report, write=write, item_texts=item_texts(prep.plan, responses, results))
    for path, text in held.items():
        _write(path, text)
    return summary


def build_summary(
    prep: Prepared, results: dict[str, MetricResult], verdicts: list[VerdictRecord],
    stats: ExecutionStats, run_manifest: RunManifest, responses: Mapping[str, Response], coded: Coded,
    sequential: SequentialRecord | None = None, budget: BudgetRecord | None = None,
) -> RunSummary:
    """The run's typed records; the report builds its views of them when it renders."""
    from biasaudit.report.answers import answers_section
    from biasaudit.runner import provenance

    cfg = prep.composed.config
    generated = datetime.now(UTC).isoformat(timespec="seconds")
    not_measured = unmeasured(prep, responses)
    # a run the budget stopped did not measure what it planned: exit 4, as a run whose
    # requests failed (the stimuli run are still measured and shown)
    stopped = budget.text if budget is not None and budget.stopped else None
    provenance.count_tokens(prep.plan, responses, stats)
    coding = coding_report(prep.coding, coded.result.units, coded.result.codes, coded.result.handed, coded.calls,
                           seed=cfg.runtime.seed)
    return RunSummary(
        format_version=SUMMARY_FORMAT,
        audit=AuditInfo(name=cfg.audit.name, method=cfg.audit.method, description=cfg.audit.description,
                        title=cfg.report.title or cfg.audit.name),
        run_id=run_manifest.run_id,
        model=ModelInfo.model_validate(run_manifest.model.model_dump(mode="json")),
        spec_sha256=run_manifest.spec_sha256,
        data=DataInfo.model_validate(run_manifest.data.model_dump(mode="json")),
        generated=generated,
        cover=provenance.cover(cfg, run_manifest, generated, responses, provenance.token_costs(cfg, stats)).model_copy(
            update={"budget": budget.text if budget is not None else ""}),
        design=DesignInfo(cells=[c.id for c in prep.plan.cells], n_cells=len(prep.plan.cells),
                          levels={c.id: dict(c.levels) for c in prep.plan.cells},
                          factors={f: list(levels) for f, levels in cfg.factors.items()},
                          probe=prep.plan.kind, kind=cfg.design.kind,
                          metric_names={m.key: m.name for m in cfg.metrics},
                          groups=level_groups(cfg, prep.params)),
        execution=copy.deepcopy(stats),  # the run's counts as they are now (a re-render sets some later)
        # through JSON, as summary.json holds them (numpy scalars become plain numbers)
        metrics={k: MetricResult.model_validate(r.model_dump(mode="json")) for k, r in results.items()},
        coding=CodingReport.model_validate(coding.model_dump(mode="json")),
        # the one verdict record, through JSON as summary.json holds it (numpy scalars become
        # plain numbers; the in-memory-only TOST interval of its estimate is left out)
        verdicts=[VerdictRecord.model_validate(v.model_dump(mode="json")) for v in verdicts],
        overall=overall_verdict(verdicts),
        measured=not_measured is None and stopped is None,
        unmeasured_reason=stopped or (not_measured.message if not_measured else None),
        reproducibility=provenance.reproducibility(run_manifest),
        trail=provenance.trail(prep.plan, responses, bool(coded.result.codes)),
        answers=answers_section(prep.plan, responses, results, coded.result.units, coded.result.codes),
        sequential=sequential,
        budget=budget,
    )


def overall_verdict(verdicts: list[VerdictRecord]) -> str:
    if not verdicts:
        return "NO THRESHOLDS"
    vs = {v.verdict for v in verdicts}
    if "FAIL" in vs:
        return "FAIL"
    if "INCONCLUSIVE" in vs:
        return "INCONCLUSIVE"
    return "PASS"


INTERRUPTED_NOTE = "INTERRUPTED.txt"


def note_interrupted(run_dir: Path, how: str, cache: str, command: list[str] | None) -> None:
    """Say in the run folder itself that the run did not finish and how to resume."""
    if not run_dir.is_dir():
        return
    again = f"run the same command again: {shlex.join(command)}" if command else "run the same command again"
    _write(run_dir / INTERRUPTED_NOTE,
           f"This run did not finish: {how}.\n"
           f"Its finished model calls are kept in the cache {cache}; no report was written here.\n"
           f"To resume, {again}\n(calls already made are not repeated).\n")


def _close_stale_runs(store: Store) -> None:
    """Earlier runs on this cache whose process died (SIGKILL, power cut) are marked
    interrupted, and their folders say so."""
    for r in store.mark_stale_runs():
        run_dir = Path(r["run_dir"])
        if (run_dir / "summary.json").is_file():
            continue  # killed after its report was complete: only the bookkeeping was lost
        command = None
        mpath = run_dir / "manifest.json"
        if mpath.is_file():
            try:
                command = json.loads(mpath.read_text(encoding="utf-8")).get("command")
            except (OSError, ValueError):
                command = None
        log.warning("run %s did not finish (process %s is gone); marked interrupted", r["run_id"], r["pid"])
        note_interrupted(run_dir, f"its process ({r['pid']}) ended before the run finished", str(store.path), command)


def load_note(cfg: AuditConfig) -> str:
    """What the first load of the audited model will do, said before it starts (its
    backend kind says, e.g. a GGUF file dequantized on first use)."""
    if cfg.probe.kind == "classify_nli" and cfg.nli is not None and not nli_kind(cfg.nli).asks_chat:
        return ""  # the model under test is not loaded: the NLI classifier answers
    kind = kind_of(cfg.model)
    return kind.first_load_note(kind.config_of(cfg.model)) if kind.first_load_note else ""


def run(prep: Prepared, run_dir: Path, command: list[str]) -> RunSummary:
    cfg = prep.composed.config
    if kind_of(cfg.model).selftest_only:
        # the self-test's stand-in answers no real request: refused before any folder is made
        from biasaudit.errors import BackendError

        raise BackendError(f"the `{cfg.model.backend}` model answers only inside `biasaudit selftest`", key="model.backend",
                           hint="choose a real model config for `biasaudit run` (`biasaudit list models`)")
    guard_logging()
    # Multirun jobs live in subfolders of reports/sweeps/<time>/: name them by both.
    in_sweep = run_dir.parent.parent.name == "sweeps"
    run_id = f"{run_dir.parent.name}-{run_dir.name}" if in_sweep else run_dir.name
    run_manifest = manifest(prep, run_id, command)
    run_manifest.run_dir = str(run_dir)
    run_manifest.started = datetime.now(UTC).isoformat(timespec="seconds")
    store = Store(cfg.runtime.cache)
    stats: ExecutionStats | None = None
    try:
        # a damaged cache fails here, before the run folder is written; read in chunks and
        # let go (issue 42: a resumed run held every cached answer as a record here, twice
        # what the engine's table then holds)
        for _ in store.iter_many(prep.plan.requests):
            pass
    except BaseException:
        store.close()
        raise
    try:
        _close_stale_runs(store)
        store.start_run(run_id, cfg.audit.name, str(run_dir), run_manifest.as_json())
        # written now so that a folder whose run is killed still says what it was
        run_dir.mkdir(parents=True, exist_ok=True)
        _write(run_dir / "manifest.json", _manifest_text(run_manifest))
        settle()
        t0 = time.perf_counter()
        looked = None
        from biasaudit.runner.budget import budget_plan, make_budget, stopped_run

        budget = make_budget(cfg)
        record = None
        responses: Mapping[str, Response]
        if cfg.runtime.sequential.look_every is not None:
            from biasaudit.runner.sequential import run_sequential

            looked = run_sequential(prep, store, lambda: build_audit_backend(cfg), code_and_measure,
                                    retry_failed=cfg.runtime.retry_failed, progress=cfg.runtime.progress,
                                    who=audit_subject(cfg), load_note=load_note(cfg))
            prep, responses, stats = looked.prep, looked.responses, looked.stats
        else:
            sharded = None
            if cfg.runtime.shards > 1:  # the model calls in Ray tasks, merged into this cache first
                from biasaudit.runner.shards import ShardsUnfinished, run_shards

                try:
                    sharded = run_shards(prep, store)
                except ShardsUnfinished as e:  # the folder says it is unfinished and how to resume
                    note_interrupted(run_dir, e.message, str(store.path), command)
                    raise
            responses, stats = execute_plan(
                prep.plan if budget is None else budget_plan(prep), store,
                lambda: build_audit_backend(cfg),
                retry_failed=cfg.runtime.retry_failed and sharded is None,
                progress=cfg.runtime.progress,
                who=audit_subject(cfg), load_note=load_note(cfg), budget=budget,
            )
            if sharded is not None:
                sharded.fold(stats)
            if budget is not None and budget.stopped:
                run_manifest.stopped = "budget"
                try:
                    prep, responses, stats, record = stopped_run(prep, responses, stats, budget)
                except BiasAuditError:  # nothing to measure: the folder still says what was spent
                    run_manifest.budget = budget.record()
                    _write(run_dir / "manifest.json", _manifest_text(run_manifest))
                    note_interrupted(run_dir, "it stopped at its budget (runtime.budget)", str(store.path), command)
                    raise
            elif budget is not None:
                record = budget.record(planned=len(prep.stimuli.stimuli), run=len(prep.stimuli.stimuli))
            run_manifest.budget = record
        run_manifest.finished = datetime.now(UTC).isoformat(timespec="seconds")
        run_manifest.run_stage_s = round(time.perf_counter() - t0, 3)
        run_manifest.execution = stats
        summary = finish(prep, responses, stats, run_dir, run_manifest, looked=looked, budget=record)
    except KeyboardInterrupt:
        store.finish_run(run_id, "interrupted", stats.as_dict() if stats else {})
        note_interrupted(run_dir, "stopped with Ctrl-C", str(store.path), command)
        store.close()
        raise
    except BaseException:
        store.finish_run(run_id, "failed", {})
        store.close()
        raise
    finally:
        gc.unfreeze()  # what `settle` froze is collectable again (a sweep runs many jobs in one process)
    store.finish_run(run_id, "finished", stats.as_dict())
    store.close()
    return summary


def read_manifest(run_dir: Path) -> RunManifest:
    """A run folder's manifest.json, checked for what a re-render reads."""
    from biasaudit._util.fileio import read_capped
    from biasaudit.errors import StoreError

    mpath = run_dir / "manifest.json"
    hint = "give a run folder written by `biasaudit run` (a manifest cut short cannot be re-rendered: run again)"
    if not mpath.is_file():
        raise StoreError("no manifest.json here", file=str(run_dir), hint="give a run folder written by `biasaudit run`")
    try:
        raw = json.loads(read_capped(mpath, 256 * 2**20, what="manifest", error=StoreError).decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # truncated, not UTF-8, not JSON
        raise StoreError(f"manifest.json is not valid JSON ({str(exc)[:80]})", file=str(mpath), hint=hint) from None
    # not a JSON object: checked as an empty one, so it fails on the first key below
    m: JSONObject = raw if isinstance(raw, dict) else {}
    need = {"spec_file": str, "config": dict, "cache": str, "run_id": str, "data": dict}
    for k, t in need.items():
        if not isinstance(m.get(k), t):
            raise StoreError(f"manifest.json lacks a usable {k!r}", file=str(mpath), hint=hint)
    manifest = RunManifest.read_raw(m, file=str(mpath), error=StoreError, hint=hint)
    _check_recorded_overrides(manifest, mpath)
    return manifest


def _check_recorded_overrides(m: RunManifest, mpath: Path) -> None:
    """A received run's overrides pass the command-line gate again (spec/override_gate.py):
    its re-run line, command and self-test are built from them, so a manifest carrying
    `hydra.callbacks...` or a `_target_` is refused, not shown as a command to copy."""
    from biasaudit.errors import SpecError, StoreError
    from biasaudit.spec.override_gate import check_recorded

    try:
        check_recorded(m.overrides, where=str(mpath))
        check_recorded([a for a in m.command[2:] if not a.startswith("-")], where=str(mpath), strict=False)
    except SpecError as exc:
        raise StoreError(f"manifest.json: {exc.message}", file=str(mpath), key="overrides",
                         hint="this run folder holds overrides biasaudit never writes: do not re-run its command; "
                              "run the spec again yourself") from None


def rerender(run_dir: Path, answerer: Callable[..., StoreAnswerer] = StoreAnswerer, *,
             trail: bool = False) -> RunSummary:
    """Rebuild the report of a finished run from its manifest and the store: no model
    calls (a missing response is an error). `answerer` makes the offline coding answerer
    (an evidence pack's records what it reads, or serves packed embeddings); `trail`
    writes responses.jsonl again (an evidence pack compares it with the packed one)."""
    from biasaudit.errors import StoreError
    from biasaudit.spec import validate_config

    m = read_manifest(run_dir)
    spec_file = Path(m.spec_file)
    cfg = validate_config(m.config, spec_file=str(spec_file), choices=m.choices)
    composed = Composed(config=cfg, data=m.config, spec_file=spec_file, choices=m.choices, overrides=m.overrides)
    prep = prepare(composed)
    if prep.stimuli.sha256 != m.data.sha256:
        raise StoreError("the data file changed since the run", file=str(prep.stimuli.source),
                         hint="restore the file the run used (its sha256 is in manifest.json)")
    store = Store(m.cache, readonly=True)  # a re-render creates no cache, folder or row
    try:
        status = store.run_status(m.run_id)
        if status is not None and status != "finished" and not (run_dir / "summary.json").is_file():
            again = f": {shlex.join(m.command)}" if m.command else ""
            raise StoreError(f"this run did not finish (status: {status})", file=str(run_dir),
                             hint=f"resume it by running the same command again{again}")
        looked = None
        responses: Mapping[str, Response]
        if cfg.runtime.sequential.look_every is not None:  # the same looks, from the store: the same stop
            from biasaudit.runner.sequential import run_sequential

            def look(p: Prepared, r: Mapping[str, Response], st: ExecutionStats,
                     offline: bool) -> tuple[Coded, dict[str, MetricResult]]:
                # each look codes through the caller's offline answerer (verify's packed one)
                coded = code(p, r, st, offline=True, answerer=answerer(cfg, offline=True, stats=st))
                return coded, measure(p, r, coded)

            looked = run_sequential(prep, store, None, look, progress=False)
            prep, responses, stats = looked.prep, looked.responses, looked.stats
        elif m.budget is not None and m.budget.stopped:  # the stimuli the run answered in full, as it did
            from biasaudit.runner.budget import complete_stimuli
            from biasaudit.runner.sequential import restrict

            prep = restrict(prep, complete_stimuli(prep, store.get_many(prep.plan.requests)))
            responses, stats = execute_plan(prep.plan, store, None, progress=False)
        else:
            responses, stats = execute_plan(prep.plan, store, None, progress=False)
    finally:
        store.close()
    if m.execution is not None:  # the run's own counts of what a re-render does not redo
        for k in ("calls", "seconds", "model_load_s", "model_loads", "new_failures", "coding_s"):
            setattr(stats, k, getattr(m.execution, k))
        if looked is not None or (m.budget is not None and m.budget.stopped):
            for k in ("cache_hits", "coding_calls", "coding_cache_hits", "embedding_calls", "embedding_cache_hits"):
                setattr(stats, k, getattr(m.execution, k))
    return finish(prep, responses, stats, run_dir, m, write_responses=trail, offline=True,
                  answerer=answerer(cfg, offline=True, stats=stats), looked=looked, budget=m.budget)


__all__ = ["Coded", "PlanInputs", "Prepared", "code", "measure", "plan_inputs", "prepare", "rerender", "run",
           "unmeasured"]
