"""Notebook-safe API (issue 29, point 6): importing or calling biasaudit leaves
matplotlib's global state alone (backend, every rcParam, pyplot's figures); in a Jupyter
kernel the progress bar is rich's notebook widget; results are DataFrames equal to
summary.json and show an escaped HTML summary."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import types
from pathlib import Path

import pandas as pd
import pytest

import biasaudit
from biasaudit._util.jupyter import in_notebook
from biasaudit.engine import executor
from tests.conftest import isolation, run_dirs
from tests.helpers import operator_conf, tp_spec

# A notebook's own matplotlib session: a distinctive backend and rcParams, maybe an open
# figure of its own; biasaudit renders its report's plots in the middle of it.
NOTEBOOK = r"""
import json, sys
import matplotlib
matplotlib.use("svg")
matplotlib.rcParams["font.size"] = 17
matplotlib.rcParams["axes.spines.top"] = True
matplotlib.rcParams["svg.fonttype"] = "path"
matplotlib.rcParams["text.parse_math"] = True
with_pyplot = sys.argv[3] == "1"
if with_pyplot:
    import matplotlib.pyplot as plt
    mine = plt.figure()
    plt.plot([1, 2], [3, 4])
before = dict(matplotlib.rcParams)
backend = matplotlib.get_backend()

import biasaudit
import biasaudit.report.plots  # importing the plotting module changes nothing either
result = biasaudit.run(sys.argv[1], ["model=scripted", "+metrics.0.by=[bias_type]",
                                         "runtime.cache=" + sys.argv[2] + "/cache.sqlite",
                                         "runtime.reports_dir=" + sys.argv[2] + "/reports", "runtime.progress=false"])
after = dict(matplotlib.rcParams)
out = {
    "changed": sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)),
    "backend": [backend, matplotlib.get_backend()],
    "pyplot_loaded_by_biasaudit": (not with_pyplot) and "matplotlib.pyplot" in sys.modules,
    "svgs": (result.run_dir / "report.html").read_text().count("<svg"),
}
import matplotlib.pyplot as plt
out["fignums"] = plt.get_fignums()
out["gcf_is_mine"] = plt.gcf() is mine if with_pyplot else None
print(json.dumps(out))
"""


@pytest.mark.parametrize("with_pyplot", [False, True], ids=["no-pyplot", "open-pyplot-figure"])
def test_run_leaves_matplotlib_global_state_alone(workdir: Path, with_pyplot: bool) -> None:
    spec = tp_spec(workdir, 8)
    proc = subprocess.run([sys.executable, "-c", NOTEBOOK, str(spec), str(workdir), "1" if with_pyplot else "0"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["svgs"] >= 1  # the run did draw plots
    assert out["changed"] == []  # every rcParam as the notebook left it
    assert out["backend"] == ["svg", "svg"]
    assert out["pyplot_loaded_by_biasaudit"] is False
    assert out["fignums"] == ([1] if with_pyplot else [])  # no figure of ours left in pyplot
    assert out["gcf_is_mine"] in (None, True)


def test_the_package_never_sets_global_matplotlib_state() -> None:
    # the grep of the issue, on the code (strings and comments left out): no
    # matplotlib.use, no global rcParams, no pyplot, no global style
    import io
    import re
    import tokenize

    pkg = Path(biasaudit.__file__).parent
    pattern = re.compile(r"\buse\(|\brcParams\b|\bpyplot\b|\bplt\b|\brc\(|\brcdefaults\(|\bstyle\.use\(")
    hits = []
    for f in sorted(pkg.rglob("*.py")):
        text = f.read_text(encoding="utf-8")
        if "matplotlib" not in text:
            continue
        code = [tok.string for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                if tok.type not in (tokenize.STRING, tokenize.COMMENT)]
        hits += [f"{f.relative_to(pkg)}: {m}" for m in pattern.findall(" ".join(code).replace(" . ", ".").replace(" (", "("))]
    assert hits == []


# -- progress in a notebook -------------------------------------------------------------

class _Kernel:
    pass


class ZMQInteractiveShell:  # the class name rich (and Jupyter tools) recognise a kernel by
    def __init__(self, kernel: object | None = _Kernel()) -> None:
        self.kernel = kernel


class TerminalInteractiveShell:
    kernel = None


def _fake_ipython(monkeypatch: pytest.MonkeyPatch, shell: object | None, *, raises: bool = False) -> types.ModuleType:
    mod = types.ModuleType("IPython")

    def get_ipython() -> object | None:
        if raises:
            raise RuntimeError("half-initialised")
        return shell

    mod.get_ipython = get_ipython  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", mod)
    return mod


def test_in_notebook_recognises_a_kernel_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert in_notebook() is False  # plain python, pytest
    _fake_ipython(monkeypatch, None)
    assert in_notebook() is False  # IPython imported, no shell running
    _fake_ipython(monkeypatch, TerminalInteractiveShell())
    assert in_notebook() is False  # a terminal IPython: a terminal's bar, not a widget
    _fake_ipython(monkeypatch, ZMQInteractiveShell(), raises=True)
    assert in_notebook() is False
    monkeypatch.setitem(sys.modules, "IPython", types.ModuleType("IPython"))  # no get_ipython at all
    assert in_notebook() is False
    _fake_ipython(monkeypatch, ZMQInteractiveShell())
    assert in_notebook() is True


def test_progress_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert not sys.stderr.isatty()  # pytest captures stderr: as in CI
    assert executor._progress(False, 10, "calls") is None
    assert executor._progress(True, 0, "calls") is None
    bar = executor._progress(True, 10, "calls")
    assert type(bar) is executor._LineBar  # no terminal, no kernel: stage lines, as before
    _fake_ipython(monkeypatch, TerminalInteractiveShell())
    assert type(executor._progress(True, 10, "calls")) is executor._LineBar
    _fake_ipython(monkeypatch, ZMQInteractiveShell())
    bar = executor._progress(True, 10, "calls")
    assert type(bar) is executor._Bar  # a kernel's stderr is no terminal, and still gets the bar
    bar.close()


def test_in_a_kernel_rich_draws_the_bar_as_a_widget(monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end with a fake kernel: rich's Jupyter support (which needs ipywidgets)
    displays one Output widget and draws the bar into it."""
    import builtins

    import rich

    shell = ZMQInteractiveShell()
    ipython = _fake_ipython(monkeypatch, shell)
    monkeypatch.setattr(builtins, "get_ipython", lambda: shell, raising=False)  # as a kernel injects it
    shown: list[object] = []
    display = types.ModuleType("IPython.display")
    display.display = lambda *objs, **kw: shown.extend(objs)  # type: ignore[attr-defined]
    ipython.display = display  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython.display", display)

    drawn: list[object] = []

    class Output:
        def __enter__(self) -> Output:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def clear_output(self, wait: bool = False) -> None:
            drawn.clear()

    widgets = types.ModuleType("ipywidgets")
    widgets.Output = Output  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ipywidgets", widgets)
    monkeypatch.setattr(rich, "_console", None)  # a fresh console, made inside the kernel

    bar = executor._progress(True, 4, "calls")
    assert bar is not None
    bar.update(4)
    bar.close()
    outputs = [o for o in shown if isinstance(o, Output)]
    assert len(outputs) == 1 and shown[0] is outputs[0]  # one widget, displayed first, redrawn in place
    html = [o._repr_mimebundle_([], [])["text/html"] for o in shown[1:] if hasattr(o, "_repr_mimebundle_")]
    # drawn as HTML into the widget when the bar starts (rich redraws it 4 times a second)
    assert any("calls" in h and "0/4" in h for h in html)


# -- DataFrames and the HTML summary ----------------------------------------------------

def _same(a: object, b: object) -> bool:
    def missing(x: object) -> bool:
        return x is None or (isinstance(x, float) and math.isnan(x))
    return (missing(a) and missing(b)) or a == b


PLANT = "<script>alert(1)</script>"


def test_dataframes_equal_summary_json_and_html_is_escaped(workdir: Path) -> None:
    spec = tp_spec(workdir, 8)
    # the model's name and the stimuli carry markup: a sentence, and a group value that a
    # threshold names (so it shows in the verdicts)
    spec.write_text(spec.read_text() + f'  - {{metric: "bias_score.bias_type.race{PLANT}", max: 100}}\n')
    data = workdir / "pairs.csv"
    frame = pd.read_csv(data, keep_default_na=False, dtype=str)
    frame.loc[frame.index[:3], "bias_type"] = f"race{PLANT}"
    frame.loc[0, "sent_more"] = f"{PLANT} {frame.loc[0, 'sent_more']}"
    frame.to_csv(data, index=False)
    ov = operator_conf(workdir, model={"backend": "scripted", "name": f"m{PLANT}&co", "script": {}})
    result = biasaudit.run(spec, [*ov, "+metrics.0.by=[bias_type]", *isolation(workdir)])
    assert isinstance(result, biasaudit.RunResult)
    [run_dir] = run_dirs(workdir)
    on_disk = json.loads((run_dir / "summary.json").read_text())
    assert on_disk["model"]["name"] == f"m{PLANT}&co"

    # verdicts: one row per threshold, the numbers of summary.json's verdicts
    v = result.verdicts_df
    assert isinstance(v, pd.DataFrame) and len(v) == len(on_disk["verdicts"]) >= 1
    for row, want in zip(v.to_dict("records"), on_disk["verdicts"], strict=True):
        e = want["estimate"]
        assert (row["metric"], row["over"], row["verdict"], row["cell"]) == (
            want["metric"], want["over"], want["verdict"], want.get("cell") or "")
        for got, exp in [(row["min"], want["min"]), (row["max"], want["max"]), (row["value"], e["value"]),
                         (row["ci_low"], e["ci_low"]), (row["ci_high"], e["ci_high"]), (row["n"], e["n"]),
                         (row["level"], e["level"])]:
            assert _same(got, exp), (row, want)
    # estimates and items (their full check against summary.json is in test_api.py)
    headline = result.estimates.query("headline and cell == '' and group == ''")
    score = on_disk["metrics"]["bias_score"]["estimates"]["score"]
    assert headline[["value", "ci_low", "ci_high", "n"]].iloc[0].tolist() == [
        score["value"], score["ci_low"], score["ci_high"], score["n"]]
    assert result.items["diff"].tolist() == [i["diff"] for i in on_disk["metrics"]["bias_score"]["items"]]
    assert result.items["more"].iloc[0].startswith(PLANT)  # the raw text, unescaped, in the table

    # the HTML summary: audit, model, overall, headline with its interval, groups, verdicts
    html = result._repr_html_()
    assert "<script" not in html.lower()
    assert "m&lt;script&gt;alert(1)&lt;/script&gt;&amp;co" in html
    assert "race&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert on_disk["audit"]["name"] in html and on_disk["overall"] in html
    from biasaudit.report.notebook import interval

    assert interval(score["value"], score["ci_low"], score["ci_high"]) in html
    assert html.count("<table>") == 2  # headline estimates, verdicts
    # loaded back from the folder: the same summary
    assert biasaudit.RunResult.load(run_dir)._repr_html_() == html


def test_suite_rows_and_html(workdir: Path) -> None:
    spec = tp_spec(workdir, 6)
    suite = workdir / "suite.yaml"
    suite.write_text(f"suite:\n  name: nb-suite\n  subjects: [scripted]\n  members:\n    - {{spec: {spec}, label: tp}}\n")
    res = biasaudit.run(suite, isolation(workdir))
    assert isinstance(res, biasaudit.SuiteResult)
    rows = res.rows
    assert isinstance(rows, pd.DataFrame) and len(rows) == len(res.summary.rows) == 1
    want = res.summary.rows[0]
    assert rows.iloc[0]["overall"] == want.overall and _same(rows.iloc[0]["value"], want.estimate.value)
    html = res._repr_html_()
    assert "nb-suite" in html and want.overall in html and "<table>" in html
