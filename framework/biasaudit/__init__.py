"""biasaudit: declarative audits of language models for bias.

The command line (`biasaudit run spec=crows_pairs_tp`) and this Python API run the same
pipeline and write the same run folders. From Python or a notebook::

    import biasaudit

    result = biasaudit.run("crows_pairs_tp", overrides=["model=smollm2"])
    result.overall          # "PASS", "FAIL", "INCONCLUSIVE" or "NO THRESHOLDS"
    result.estimates        # pandas DataFrame: one row per estimate (pooled, per cell, per group)
    result.items            # pandas DataFrame: one row per scored item
    result.verdicts         # one typed row per threshold
    result.verdicts_df      # pandas DataFrame: the same, one row per threshold
    result                  # in a notebook: an HTML summary (overall, headline estimates, verdicts)
    result.summary          # the typed RunSummary (what summary.json holds)
    result.report_path      # the HTML report

    biasaudit.validate("./my_audit.yaml")             # checks spec and data; no model call
    biasaudit.plan("crows_pairs_tp").calls_needed      # what a run will cost
    biasaudit.selftest("./my_audit.yaml").passed       # planted bias caught, null quiet? no model
    biasaudit.compare([result, earlier]).report_path   # runs side by side

Functions:
    run(spec, overrides=None, *, verbose=False) -> RunResult (SuiteResult for a suite)
    validate(spec, overrides=None) -> Validation
    plan(spec, overrides=None) -> PlanEstimate
    power(spec, overrides=None, *, target_power=0.8, true_value=None, pilot=None) -> list[PowerRow]
    selftest(spec, overrides=None) -> SelfTest
    compare(paths, out=None) -> Comparison
    RunResult.load(run_dir) -> RunResult of a finished run folder
    load_runs(folders) -> RunSet: many run folders (a sweep's, a reports folder) as one
        table each of estimates, items and verdicts, led by run, audit, model and spec columns

`spec` is a shipped spec's name (`biasaudit list specs`) or a path to a spec file;
`overrides` are the command line's Hydra overrides. Bad input raises `BiasAuditError`
(its message is the command line's one-line error, naming the file, the key and a fix);
nothing calls `sys.exit` or configures logging. `verbose=True` prints stage messages.

Importing this package is light: the API and its dependencies load on first use. Neither
importing nor calling it changes matplotlib's backend, rcParams or pyplot's figures.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from biasaudit._version import __version__

if TYPE_CHECKING:
    from biasaudit.api import (
        Comparison,
        PlanEstimate,
        RunResult,
        RunSet,
        SelfTest,
        SuiteResult,
        Validation,
        compare,
        load_runs,
        plan,
        power,
        run,
        selftest,
        validate,
    )
    from biasaudit.errors import BiasAuditError
    from biasaudit.records.summary import RunSummary

# name -> module; loaded on first attribute access (PEP 562) so that `import biasaudit`
# does not import pandas, Hydra or torch
_LAZY = {
    "run": "api", "plan": "api", "power": "api", "validate": "api", "compare": "api", "RunResult": "api", "SuiteResult": "api",
    "Validation": "api", "PlanEstimate": "api", "selftest": "api", "SelfTest": "api", "Comparison": "api", "RunSet": "api", "load_runs": "api", "BiasAuditError": "errors", "RunSummary": "records.summary",
}

__all__ = ["BiasAuditError", "Comparison", "PlanEstimate", "RunResult", "RunSet", "RunSummary", "SelfTest", "SuiteResult",
           "Validation", "__version__", "compare", "load_runs", "plan", "power", "run", "selftest", "validate"]




class _Package(types.ModuleType):
    """`biasaudit.plan`, `biasaudit.run` and `biasaudit.compare` are API functions and also the names of
    submodules (the plan compiler, the run comparison). Importing a submodule sets the
    package attribute of its name, which would replace the function; this package keeps
    the function. The submodules stay importable by their full names (`from
    biasaudit.plan import compile_plan`), which Python resolves through `sys.modules`."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
