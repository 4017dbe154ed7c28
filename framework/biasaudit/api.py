"""The Python API: `run`, `plan`, `validate` and `compare`, the command line's verbs as
functions that return typed results and raise `BiasAuditError` instead of exiting.

They take the same inputs as the command line (a spec name or a path to a spec file, and
Hydra overrides) and run the same pipeline, so a run started here writes the same run
folder, and its report's "Re-run" line works on the command line. They never call
`sys.exit`, never configure logging (stage messages go to the `biasaudit.stage` logger;
`verbose=True` prints them on stderr) and never touch `sys.argv`, so they are safe in a
notebook or a test. Nor do they change matplotlib's global state (backend, rcParams,
pyplot's figures): the report's plots are drawn outside pyplot under a local style. In a
Jupyter kernel the progress bar is rich's notebook widget, and a result shows itself as an
HTML summary (`_repr_html_`); its numbers are DataFrames (`estimates`, `items`,
`verdicts_df`; a suite's `rows`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from biasaudit.errors import BiasAuditError, SpecError, user_error

if TYPE_CHECKING:
    import pandas as pd

    from biasaudit.records.compare import CompareResult
    from biasaudit.records.suite import SuiteSummary
    from biasaudit.records.summary import RunSummary
    from biasaudit.records.verdict import VerdictRecord
    from biasaudit.runner.power import PowerRow
    from biasaudit.spec.compose import Composed

SpecLike = str | os.PathLike[str]

VERDICT_COLUMNS = ["metric", "over", "cell", "min", "max", "value", "ci_low", "ci_high", "n", "level", "method", "verdict",
                   "blocked", "would_be", "reason", "claim"]
"""The columns of `RunResult.verdicts_df`."""


@contextlib.contextmanager
def _caller_warning_filters() -> Iterator[None]:
    """The caller's `warnings.filters` as they were: the libraries a call imports on first
    use (statsmodels, scipy, numpy, pandas) add filters of their own at import time, and a
    notebook's warning settings are not ours to change."""
    with warnings.catch_warnings():
        yield


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _keeps_warning_filters(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """A public function that leaves the caller's warning filters as they were, the
    imports it does on first use included (`_caller_warning_filters`)."""
    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with _caller_warning_filters():
            return fn(*args, **kwargs)
    return wrapper


@contextlib.contextmanager
def _errors() -> Iterator[None]:
    """Errors the input or the environment causes leave as `BiasAuditError` (the command
    line's one-line errors); anything else is a bug and keeps its own type and traceback.
    The caller's warning filters are left as they were (`_caller_warning_filters`)."""
    from biasaudit._util.paths import spec_lookup_scope

    try:
        with _caller_warning_filters(), spec_lookup_scope():
            yield
    except BiasAuditError:
        raise
    except Exception as exc:
        err = user_error(exc)
        if err is not None:
            raise err from exc
        if type(exc).__module__.startswith(("hydra", "omegaconf")):  # the override grammar
            raise SpecError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, key="overrides",
                            hint="overrides are Hydra's `key=value`; see `biasaudit run --help`") from exc
        raise


def _overrides(spec: SpecLike, overrides: Sequence[str] | None) -> list[str]:
    from biasaudit._util.envdefaults import apply

    apply()
    if isinstance(overrides, str):  # a lone string would be read one character at a time
        raise TypeError("overrides must be a list of strings, e.g. ['model=smollm2']")
    rest = [str(o) for o in overrides or []]
    if any(o.partition("=")[0].lstrip("+~") == "spec" for o in rest):
        raise SpecError("the spec is given twice (the `spec` argument and a `spec=` override)", key="spec",
                        hint="give the spec as the first argument only")
    from biasaudit.spec.override_gate import gate
    from biasaudit.spec.spec_names import spec_argument

    out = [f"spec={spec_argument(spec)}", *rest]
    gate(out, where="overrides")  # the command line's gate: no Hydra setting outside its allow-list, no _target_
    from biasaudit.runner.sweeps import sweep_combinations

    if len(sweep_combinations(out)) > 1:
        raise SpecError("a sweep (`key=a,b`) is several runs; these functions do one", key="overrides",
                        hint="call them once per value in a loop, or use `biasaudit run -m` / `biasaudit plan -m`")
    return out


def _show(verbose: bool) -> None:
    if verbose:
        from biasaudit._util.progress import show

        show()


@dataclass(frozen=True)
class RunResult:
    """One finished run: its folder, its typed summary and its numbers as tables."""

    run_dir: Path
    summary: RunSummary
    """Everything `summary.json` holds, typed (`biasaudit.records.summary.RunSummary`)."""

    @property
    def overall(self) -> str:
        """PASS, FAIL, INCONCLUSIVE or NO THRESHOLDS."""
        return self.summary.overall

    @property
    def verdicts(self) -> list[VerdictRecord]:
        """One row per threshold: metric, bounds, estimate with its interval, verdict."""
        return list(self.summary.verdicts)

    @property
    def report_path(self) -> Path | None:
        """The HTML report (None when `report.formats` leaves HTML out)."""
        p = self.run_dir / "report.html"
        return p if p.is_file() else None

    @cached_property
    def estimates(self) -> pd.DataFrame:
        """One row per estimate, pooled and per cell and group: the rows of estimates.csv."""
        with _caller_warning_filters():
            import pandas as pd

            from biasaudit.report.csv_export import ESTIMATE_COLUMNS, estimate_rows

            return pd.DataFrame(estimate_rows(self.summary.metrics), columns=ESTIMATE_COLUMNS)

    @cached_property
    def items(self) -> pd.DataFrame:
        """One row per scored item of each metric, with its fields and per-item value: the
        rows of items.csv (nested values as JSON text, as there)."""
        with _caller_warning_filters():
            import pandas as pd

            from biasaudit.report.csv_export import item_rows

            columns, rows = item_rows(self.summary.metrics)
            return pd.DataFrame(rows, columns=columns)

    @cached_property
    def verdicts_df(self) -> pd.DataFrame:
        """`verdicts` as a table, one row per threshold: metric, over, cell ("" for the
        pooled estimate), the bounds min and max, the estimate (value, ci_low, ci_high, n,
        level, method), verdict, blocked, would_be, reason and claim (what the verdict shows:
        for an equivalence threshold, min and max hold its band)."""
        with _caller_warning_filters():
            import pandas as pd

        from biasaudit.verdicts.claims import claim_text

        rows = [{"metric": v.metric, "over": v.over, "cell": v.cell or "", "min": v.min, "max": v.max,
                 "value": v.estimate.value, "ci_low": v.estimate.ci_low, "ci_high": v.estimate.ci_high,
                 "n": v.estimate.n, "level": v.estimate.level, "method": v.estimate.method, "verdict": v.verdict,
                 "blocked": v.blocked, "would_be": v.would_be, "reason": v.reason,
                 "claim": claim_text(v.verdict, v.equivalence, v.min, v.max)} for v in self.summary.verdicts]
        return pd.DataFrame(rows, columns=VERDICT_COLUMNS)

    @property
    def measured(self) -> bool:
        """False when too many model requests failed for the run to measure anything
        (`summary.unmeasured_reason` says how many and why)."""
        return self.summary.measured

    def exit_code(self, fail_on: str = "inconclusive") -> int:
        """The code `biasaudit run --fail-on <fail_on>` would exit with (0, 1, 3 or 4)."""
        from biasaudit.verdicts.gating import verdict_exit

        return verdict_exit(self.overall, fail_on, self.summary.measured)

    @classmethod
    @_keeps_warning_filters
    def load(cls, run_dir: SpecLike) -> RunResult:
        """A finished run folder (one with summary.json), e.g. from an earlier CLI run."""
        from biasaudit.records.summary import RunSummary

        path = Path(run_dir)
        with _errors():
            if not (path / "summary.json").is_file():
                raise BiasAuditError("no summary.json here (the run did not finish)", file=str(path),
                                     hint="give a run folder written by `biasaudit run`")
            return cls(run_dir=path, summary=RunSummary.read(path / "summary.json"))

    def _repr_html_(self) -> str:
        """What a notebook shows for a result: audit, model, overall verdict, headline
        estimates with their intervals, and the verdicts (every name escaped)."""
        from biasaudit.report.notebook import run_summary_html

        return run_summary_html(self.summary, self.run_dir)

    def __repr__(self) -> str:
        return f"RunResult({self.summary.audit.name!r}, overall={self.overall!r}, run_dir={str(self.run_dir)!r})"


@dataclass(frozen=True)
class SuiteResult:
    """A finished suite: its folder, its summary (what the suite's summary.json holds) and its runs."""

    out_dir: Path
    summary: SuiteSummary
    """Typed (`biasaudit.records.suite.SuiteSummary`): rows, verdict matrix, triangulation, totals."""
    runs: list[RunResult] = field(default_factory=list)

    @property
    def overall(self) -> str:
        return self.summary.overall

    @property
    def report_path(self) -> Path | None:
        p = self.out_dir / "report.html"
        return p if p.is_file() else None

    @cached_property
    def rows(self) -> pd.DataFrame:
        """One row per run (member x subject): member, subject, audit, model, the headline
        estimate (estimate, value, ci_low, ci_high), overall, measured and the run's report
        (relative to `out_dir`)."""
        with _caller_warning_filters():
            import pandas as pd

        out = [{"member": r.member, "subject": r.subject, "audit": r.audit, "model": r.model,
                "estimate": r.estimate_name, "value": r.estimate.value, "ci_low": r.estimate.ci_low,
                "ci_high": r.estimate.ci_high, "overall": r.overall, "measured": r.measured, "report": r.report}
               for r in self.summary.rows]
        return pd.DataFrame(out, columns=["member", "subject", "audit", "model", "estimate", "value", "ci_low", "ci_high",
                                          "overall", "measured", "report"])

    def _repr_html_(self) -> str:
        """The suite's overall verdict and one row per run, escaped."""
        from biasaudit.report.notebook import suite_summary_html

        return suite_summary_html(self.summary, self.out_dir)


RUN_COLUMNS = ["run_id", "run_dir", "audit", "audit_method", "model", "backend", "spec", "overall"]
"""The columns `RunSet`'s tables start with: which run, model and spec each row is from."""

MAX_RUN_FOLDERS = 10_000
"""The most run folders `load_runs` reads from one call (a folder tree can be anything)."""


@dataclass(frozen=True)
class RunSet:
    """Many finished runs read together (`load_runs`): their estimates, items and
    verdicts as one table each, every row led by `RUN_COLUMNS`, for the analysis an
    auditor does after a sweep (e.g. `estimates.pivot_table(index="model", ...)`)."""

    runs: list[RunResult]
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    """Folders holding a summary.json that is not a readable run summary, with the reason
    (a suite's own summary is not skipped silently either: its member runs are read)."""

    def _stack(self, part: str, columns: Sequence[str]) -> pd.DataFrame:
        with _caller_warning_filters():
            import pandas as pd

        frames = []
        for r in self.runs:
            df = getattr(r, part).copy()
            lead = {"run_id": r.summary.run_id, "run_dir": str(r.run_dir), "audit": r.summary.audit.name,
                    "audit_method": r.summary.audit.method, "model": r.summary.model.name,
                    "backend": r.summary.model.backend, "spec": r.summary.cover.spec_file, "overall": r.overall}
            for i, (k, v) in enumerate(lead.items()):
                # an item field of the same name keeps its place; the run's value goes in "run_<name>"
                df.insert(i, k if k not in df.columns else f"run_{k}", [v] * len(df))
            frames.append(df)
        if not frames:
            return pd.DataFrame(columns=[*RUN_COLUMNS, *columns])
        return pd.concat(frames, ignore_index=True, sort=False)

    @cached_property
    def estimates(self) -> pd.DataFrame:
        """Every run's `RunResult.estimates`, stacked."""
        from biasaudit.report.csv_export import ESTIMATE_COLUMNS

        return self._stack("estimates", ESTIMATE_COLUMNS)

    @cached_property
    def items(self) -> pd.DataFrame:
        """Every run's `RunResult.items`, stacked (columns a run lacks are empty)."""
        return self._stack("items", [])

    @cached_property
    def verdicts(self) -> pd.DataFrame:
        """Every run's `RunResult.verdicts_df`, stacked."""
        return self._stack("verdicts_df", VERDICT_COLUMNS)

    def __len__(self) -> int:
        return len(self.runs)

    def __repr__(self) -> str:
        return f"RunSet({len(self.runs)} runs, {len(self.skipped)} skipped)"


def _summary_kind(path: Path) -> str:
    """'run', 'suite' or why the summary.json at `path` is neither."""
    import json

    from biasaudit._util.fileio import read_capped

    try:
        data = json.loads(read_capped(path, 256 * 1024 * 1024, what="summary.json"))
    except BiasAuditError as exc:
        return str(exc)
    except ValueError as exc:
        return f"not JSON ({exc})"
    if not isinstance(data, dict):
        return "not a JSON object"
    if "suite" in data and "rows" in data:
        return "suite"
    return "run" if "audit" in data and "metrics" in data else "not a run summary (no `audit` and `metrics`)"


def _run_folders(root: Path) -> Iterator[Path]:
    """Folders under `root` (itself included) holding a summary.json, in path order;
    symlinked folders are not followed (a link can point anywhere, or back up the tree)."""
    if (root / "summary.json").is_file():
        yield root
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        if dirpath != str(root) and "summary.json" in filenames:
            yield Path(dirpath)


@_keeps_warning_filters
def load_runs(paths: SpecLike | RunResult | Sequence[SpecLike | RunResult]) -> RunSet:
    """Read finished run folders into one `RunSet`: each path may be a run folder, or any
    folder above runs (a sweep's, a suite's, a reports folder), searched for every
    summary.json below it. A suite's own summary is passed over (its member runs are
    read); a folder whose summary.json is not a run's is listed in `skipped` with why.
    A run reached twice is read once."""
    given = [paths] if isinstance(paths, (str, os.PathLike, RunResult)) else list(paths)
    runs: list[RunResult] = []
    skipped: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    with _errors():
        for p in given:
            if isinstance(p, RunResult):
                if p.run_dir.resolve() not in seen:
                    seen.add(p.run_dir.resolve())
                    runs.append(p)
                continue
            root = Path(p)
            if not root.is_dir():
                raise BiasAuditError("not a folder", file=str(root),
                                     hint="give run folders, or a folder with run folders below it")
            for folder in _run_folders(root):
                real = folder.resolve()
                if real in seen:
                    continue
                seen.add(real)
                if len(seen) > MAX_RUN_FOLDERS:
                    raise BiasAuditError(f"more than {MAX_RUN_FOLDERS} folders with a summary.json", file=str(root),
                                         hint="give a narrower folder, or several calls")
                kind = _summary_kind(folder / "summary.json")
                if kind == "run":
                    try:
                        runs.append(RunResult.load(folder))
                    except BiasAuditError as exc:
                        skipped.append((folder, str(exc)))
                    except ValueError as exc:  # pydantic's ValidationError: written by another version?
                        skipped.append((folder, f"summary.json does not read as a run summary ({str(exc).splitlines()[0]})"))
                elif kind != "suite":
                    skipped.append((folder, kind))
    return RunSet(runs=runs, skipped=skipped)


def _run_dir(c: Composed) -> Path:
    # The folder Hydra's `hydra.run.dir` (conf/config.yaml) gives a run of the command
    # line: <reports_dir>/<audit name>/<time>, so both put runs in the same place.
    return Path(c.config.runtime.reports_dir) / c.config.audit.name / datetime.now().strftime("%Y%m%d-%H%M%S-%f")


@_keeps_warning_filters
def run(spec: SpecLike, overrides: Sequence[str] | None = None, *, verbose: bool = False) -> RunResult | SuiteResult:
    """Run an audit spec (or a suite) and return its result.

    `spec` is a shipped spec's name (`"crows_pairs_tp"`) or a path to a spec file;
    `overrides` are the command line's, e.g. `["model=smollm2", "runtime.progress=false"]`.
    Responses are cached and reused as on the command line. Raises `BiasAuditError` on
    bad input (nothing is written then). A suite returns a `SuiteResult`.
    """
    from biasaudit.runner.jobs import prepare_jobs, run_job
    from biasaudit.spec.compose import prepare_overrides
    from biasaudit.spec.suite import load_suite

    _show(verbose)
    with _errors():
        raw = _overrides(spec, overrides)
        found = load_suite(raw)
        if found is not None:
            return _run_suite(found, raw)
        [job] = prepare_jobs([prepare_overrides(raw)])  # the command line's route: composed, checked, planned once
        composed = job.composed
        run_dir = _run_dir(composed)
        summary = run_job(composed, run_dir, ["biasaudit", "run", *composed.overrides], job.prepared)
        return RunResult(run_dir=run_dir, summary=summary)


def _run_suite(found: Any, raw: list[str]) -> SuiteResult:
    from biasaudit.records.summary import RunSummary
    from biasaudit.runner.suite import run_suite

    suite, path = found
    user = [ov for ov in raw if not ov.startswith("spec=")]
    summary, out_dir = run_suite(suite, path, user, False, ["biasaudit", "run", *raw])
    runs = []
    for row in summary.rows:
        run_dir = out_dir / Path(row.report).parent
        if (run_dir / "summary.json").is_file():
            runs.append(RunResult(run_dir=run_dir, summary=RunSummary.read(run_dir / "summary.json")))
    return SuiteResult(out_dir=out_dir, summary=summary, runs=runs)


@dataclass(frozen=True)
class Validation:
    """What `validate` checked: the spec's design, data and rendered requests."""

    spec_file: Path
    cells: int
    stimuli: int
    requests: int
    coding_layers: list[str]
    metrics: list[str]
    thresholds: int
    runs: int = 1
    """Runs of a suite (members x subjects); 1 for a spec."""


@_keeps_warning_filters
def validate(spec: SpecLike, overrides: Sequence[str] | None = None) -> Validation:
    """Check a spec (or a suite) and its data and render every request, without loading
    or calling any model. Returns the counts; raises `BiasAuditError` when invalid."""
    from biasaudit.plan.stream import count_plans
    from biasaudit.runner.pipeline import plan_inputs, prepare
    from biasaudit.runner.suite import plan_jobs
    from biasaudit.spec.compose import compose
    from biasaudit.spec.suite import load_suite

    with _errors():
        raw = _overrides(spec, overrides)
        found = load_suite(raw)
        if found is not None:
            suite, path = found
            jobs = plan_jobs(suite, path, [ov for ov in raw if not ov.startswith("spec=")], False)
            preps = [prepare(compose(job.overrides)) for job in jobs]
            return Validation(spec_file=Path(path), cells=sum(len(p.plan.cells) for p in preps),
                              stimuli=sum(len(p.stimuli.stimuli) for p in preps),
                              requests=sum(len(p.plan.requests) for p in preps),
                              coding_layers=sorted({n for p in preps for n in p.coding.layers}),
                              metrics=sorted({m.key for p in preps for m in p.composed.config.metrics}),
                              thresholds=sum(len(p.composed.config.thresholds) for p in preps), runs=len(jobs))
        c = compose(raw)
        inp = plan_inputs(c)
        counts = count_plans(c.config, inp.stimuli, [inp.identity], str(c.spec_file))  # renders every request
        return Validation(spec_file=Path(c.spec_file), cells=len(counts.cells), stimuli=len(inp.stimuli.stimuli),
                          requests=counts.unique, coding_layers=list(inp.coding.layers),
                          metrics=[m.key for m in c.config.metrics], thresholds=len(c.config.thresholds))


@dataclass(frozen=True)
class SelfTest:
    """What `selftest` found: for each spec (each member of a suite), oracle x threshold
    rows with the expected and the obtained verdict."""

    results: list[tuple[str, Any]]
    """(suite member id or "", `selftest.SelfTestResult`)."""

    @property
    def passed(self) -> bool:
        return all(r.passed for _, r in self.results)

    @property
    def rows(self) -> Any:
        """pandas DataFrame: member, oracle, threshold, truth, expected, got, ok, estimate, reason."""
        import dataclasses

        with _caller_warning_filters():
            import pandas as pd

        return pd.DataFrame([{"member": m, **dataclasses.asdict(r)} for m, res in self.results for r in res.rows])

    def _repr_html_(self) -> str:
        head = "<p><strong>self-test {}</strong></p>".format("PASSED" if self.passed else "FAILED")
        return head + str(self.rows.to_html(index=False))


@_keeps_warning_filters
def selftest(spec: SpecLike, overrides: Sequence[str] | None = None) -> SelfTest:
    """Run the spec (or each member spec of a suite) against oracle responders, with no
    model: does it detect a planted bias, stay quiet on a null one, and leave refuse-all
    and all-ties INCONCLUSIVE? Raises `BiasAuditError` on bad input."""
    from biasaudit.runner.selftest import selftests

    with _errors():
        return SelfTest(results=selftests(_overrides(spec, overrides)))


@dataclass(frozen=True)
class PlanEstimate:
    """What a run will cost before it starts (`biasaudit plan`)."""

    spec_file: Path
    model: str
    probe: str
    cells: int
    items: int
    """Plan items: cells x stimuli x paraphrases x slots x samples."""
    requests: int
    """Unique subject requests (the cache answers repeats)."""
    cached: int
    calls_needed: int
    input_tokens: int
    output_tokens: int
    seconds: float | None
    """Estimated from throughput measured in earlier runs on the same cache (None: no
    measurement yet)."""
    coding: dict[str, int | None]
    """Coding calls per layer (None: unknown until the answers exist)."""
    cost: float | None = None
    """Estimated cost of the calls needed at the model's `price` (None: no price given)."""
    currency: str | None = None
    """The price's currency label (None: no price given)."""


@_keeps_warning_filters
def plan(spec: SpecLike, overrides: Sequence[str] | None = None) -> PlanEstimate:
    """Count a run's plan and estimate its time, without calling any model."""
    from biasaudit.runner.cost import estimate_jobs
    from biasaudit.spec.compose import compose, prepare_overrides

    with _errors():
        raw = prepare_overrides(_overrides(spec, overrides))
        [job] = estimate_jobs([(" ".join(raw), compose(raw))])
        cfg = job.composed.config
        return PlanEstimate(spec_file=Path(job.composed.spec_file), model=cfg.model.name, probe=job.counts.kind,
                    cells=len(job.counts.cells), items=job.model.items, requests=job.model.unique,
                    cached=job.model.cached, calls_needed=job.needed, input_tokens=job.model.input_tokens,
                    output_tokens=job.model.output_tokens, seconds=job.seconds,
                    coding={e.layer: e.calls for e in job.coding}, cost=job.cost,
                    currency=None if job.price is None else job.price.currency)


@_keeps_warning_filters
def power(spec: SpecLike, overrides: Sequence[str] | None = None, *, target_power: float = 0.8,
          true_value: float | dict[str, float] | None = None, pilot: SpecLike | None = None,
          icc: float | None = None, sd: float | None = None) -> list[PowerRow]:
    """`biasaudit plan --power`: per threshold, the stimuli needed to decide with probability
    `target_power` at the true value, and the deviations detectable at the spec's current n
    (`biasaudit.runner.power.PowerRow`). `true_value`: one value for every threshold, or
    threshold metric -> value; `pilot`: an earlier run's folder (its intervals give the noise)."""
    from biasaudit.runner.cost import estimate_jobs
    from biasaudit.runner.power import plan_power
    from biasaudit.spec.compose import compose, prepare_overrides

    with _errors():
        raw = prepare_overrides(_overrides(spec, overrides))
        [job] = estimate_jobs([(" ".join(raw), compose(raw))], lookup_cache=False)
        vals = true_value if isinstance(true_value, dict) else ({} if true_value is None else {"": true_value})
        return plan_power(job.composed.config, job.counts, target=target_power, true_values=vals,
                          pilot=Path(pilot) if pilot is not None else None, icc=icc, sd=sd)


@dataclass(frozen=True)
class Comparison:
    """`biasaudit compare`: the comparison's data (what compare.json holds) and where its report is."""

    data: CompareResult
    """Typed (`biasaudit.records.compare.CompareResult`); `data.model_dump(mode="json")` is compare.json."""
    out_dir: Path

    @property
    def report_path(self) -> Path:
        return self.out_dir / "compare.html"


@_keeps_warning_filters
def compare(paths: Sequence[SpecLike | RunResult | SuiteResult], out: SpecLike | None = None) -> Comparison:
    """Compare finished runs (run folders, sweep or suite folders, or results returned by
    `run`); writes compare/compare.html and compare.json and returns the data."""
    from biasaudit.comparison.runs import compare as compare_runs
    from biasaudit.report import render_compare
    from biasaudit.runner.pipeline import _write

    folders = [p.run_dir if isinstance(p, RunResult) else p.out_dir if isinstance(p, SuiteResult) else Path(p)
               for p in paths]
    with _errors():
        if not folders:
            raise BiasAuditError("nothing to compare", hint="give run, sweep or suite folders")
        data = compare_runs(folders)
        dest = Path(out) if out is not None else (folders[0] if folders[0].is_dir() else folders[0].parent) / "compare"
        render_compare(dest, data, write=_write)
        return Comparison(data=data, out_dir=dest)


__all__ = ["Comparison", "PlanEstimate", "RunResult", "RunSet", "SelfTest", "SuiteResult", "Validation", "compare",
           "load_runs", "plan", "run", "selftest", "validate"]
