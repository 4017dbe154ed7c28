"""Property-based fuzzing of `biasaudit validate` (issue 15, acceptance 2): over spec
documents and data files built by Hypothesis from hostile parts (resolvers, Jinja that
builds or loops, YAML aliases and nesting, odd numbers and unicode, broken csv and jsonl),
validate ends with exit code 0 or 2 and no traceback, every input within a wall-clock
bound and the whole run within a memory bound (a worker process under RLIMIT_AS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO
from tests.helpers import write_crows_subset

SECONDS = 20.0
"""Per input: far above any honest validate of these small documents (~0.5 s), far below a hang."""
MEMORY = 3 * 2**30

HOSTILE = [
    "${oc.env:HOME}", "${oc.${audit.name}:HOME}", "${${audit.name}}", "\\${oc.env:HOME}", "${audit.name}",
    "${hydra:runtime.cwd}", "${oc.decode:'{a: 1}'}", "${", "}", "${.}", "${..x}",
    "{{ more|center(10**10) }}", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "{{ range(100000)|join('x' * 1000) }}", "{{ ''.__class__.__mro__ }}", "{{ lipsum(99) }}", "{{ more * 10**9 }}",
    "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "{{ '%09999999d' % 1 }}", "{{ " + "(" * 300 + ")" * 300,
    "{{ more }}", "{{ less }}", "{{ more ~ less }}", "\x00", "\ud800", "\u202e", "\ufeff", "a" * 5000, "",
    "../../../../etc/passwd", "/dev/zero", "/dev/urandom", ".", "data/../pairs.csv",
]
NUMBERS = st.one_of(st.integers(min_value=-(10**30), max_value=10**30), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0, -1, 10**18, 10**400, 1e308]))
SCALARS = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=40), NUMBERS, st.booleans(), st.none())
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(st.text(max_size=8) | st.sampled_from(HOSTILE),
                                                                        inner, max_size=4)), max_leaves=12)
PATHS = ["audit.name", "audit.method", "audit.description", "stimuli.source", "stimuli.format", "stimuli.sample",
         "stimuli.sample.n", "stimuli.where", "stimuli.fields", "stimuli.inline", "stimuli.generate", "probe.kind",
         "probe.inputs.more", "probe.inputs", "probe.samples", "probe.max_tokens", "probe.temperature", "probe.prompt",
         "factors", "factors.f", "factors.f.a.template", "factors.f.a.vars", "design", "design.kind", "design.cells",
         "metrics", "metrics.0.mode", "metrics.0.by", "metrics.0.id", "thresholds", "thresholds.0.min",
         "thresholds.0.max", "thresholds.0.metric", "report.title", "report.formats", "report.max_rows", "model",
         "runtime.cache", "hydra", "defaults", "x${oc.env:HOME}", "_target_"]
BASE: dict[str, Any] = {
    "audit": {"name": "t", "method": "token_probability"},
    "stimuli": {"source": "pairs.csv", "format": "crows_pairs"},
    "probe": {"kind": "sequence_logprob", "inputs": {"more": "{{ more }}", "less": "{{ less }}"}},
    "factors": {"f": {"a": {"vars": {"p": "x"}}, "b": {}}},
    "metrics": [{"name": "bias_score", "mode": "ar_full"}],
    "thresholds": [{"metric": "bias_score", "min": 40, "max": 60}],
}


def _set(doc: Any, path: str, value: Any) -> Any:
    *head, last = path.split(".")
    node = doc
    for k in head:
        key: Any = int(k) if k.isdigit() and isinstance(node, list) else k
        if isinstance(node, list):
            if not isinstance(key, int) or key >= len(node):
                return doc
            nxt = node[key]
        elif isinstance(node, dict):
            nxt = node.setdefault(key, {})
        else:
            return doc
        if not isinstance(nxt, dict | list):
            nxt = {}
            node[key] = nxt
        node = nxt
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list) and last.isdigit() and int(last) < len(node):
        node[int(last)] = value
    return doc


def _laughs(levels: int) -> str:
    lines = ['a0: &a0 ["lol"]'] + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


@st.composite
def spec_texts(draw: st.DrawFn) -> str:
    doc = json.loads(json.dumps(BASE))
    for path, value in draw(st.lists(st.tuples(st.sampled_from(PATHS), VALUES), max_size=4)):
        doc = _set(doc, path, value)
    try:
        text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
    except (yaml.YAMLError, UnicodeEncodeError, ValueError):
        text = json.dumps(doc, default=str)
    how = draw(st.sampled_from(["as is", "as is", "truncate", "splice", "laughs", "deep", "bytes"]))
    if how == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    elif how == "splice":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["&a ", "*a", "!!python/object:os.system", "{", "[", ":", "\t", "- ",
                                                  "<<: *a", "? ", "\n  x: 1", "%YAML 1.1\n"])) + text[at:]
    elif how == "laughs":
        text = _laughs(draw(st.integers(1, 9))) + text
    elif how == "deep":
        n = draw(st.integers(1, 5000))
        text += "deep: " + "[" * n + "]" * n + "\n"
    elif how == "bytes":
        text += draw(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30))
    return text


@st.composite
def data_files(draw: st.DrawFn) -> tuple[str, bytes]:
    kind = draw(st.sampled_from(["csv", "csv", "jsonl", "bytes", "sample"]))
    if kind == "sample":
        return "csv", b""
    if kind == "bytes":
        return draw(st.sampled_from(["csv", "jsonl"])), draw(st.binary(max_size=200))
    cells = st.one_of(st.text(max_size=12), st.sampled_from(HOSTILE))
    if kind == "csv":
        header = draw(st.lists(st.sampled_from(["", "sent_more", "sent_less", "stereo_antistereo", "bias_type", "x"]),
                               min_size=1, max_size=7))
        rows = draw(st.lists(st.lists(cells, min_size=len(header), max_size=len(header) + 1), max_size=5))
        text = "\n".join(",".join(json.dumps(c) if draw(st.booleans()) else c for c in r) for r in [header, *rows])
        return "csv", text.encode("utf-8", "surrogatepass")
    lines = draw(st.lists(st.one_of(VALUES.map(lambda v: json.dumps(v, default=str)), cells,
                                    st.integers(1, 3000).map(lambda n: "[" * n + "]" * n)), max_size=4))
    return "jsonl", "\n".join(lines).encode("utf-8", "surrogatepass")


@pytest.fixture(scope="module")
def worker() -> Iterator[subprocess.Popen[str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.validate_worker", str(SECONDS), str(MEMORY)],
                            cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    yield proc
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=60)


def _validate(proc: subprocess.Popen[str], cwd: Path, args: list[str]) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"cwd": str(cwd), "args": ["validate", *args]}) + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    assert line, f"the worker died (memory bound {MEMORY} bytes exceeded?): exit {proc.poll()}"
    return json.loads(line)


@settings(max_examples=int(os.environ.get("BIASAUDIT_FUZZ_EXAMPLES", "60")), deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(spec=spec_texts(), data=data_files(), extra=st.lists(st.sampled_from(
    ["runtime.limits.template_steps=100000", "runtime.limits.max_cells=10", "stimuli.sample.n=3",
     "+report.title=${oc.env:HOME}", "design.kind=oat", "probe.samples=1000000000", "model=scripted"]), max_size=2))
@pytest.mark.slow  # Hypothesis fuzzing through a worker subprocess
def test_validate_never_crashes_nor_exceeds_its_bounds(worker, tmp_path_factory, spec: str, data: tuple[str, bytes],
                                                        extra: list[str]) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("fuzz")
    kind, raw = data
    if raw or kind == "jsonl":
        (folder / "pairs.csv").write_bytes(raw)
    else:
        write_crows_subset(folder / "pairs.csv", 5)
    (folder / "s.yaml").write_text(spec, encoding="utf-8", errors="surrogatepass")
    r = _validate(worker, folder, [f"spec={folder / 's.yaml'}", *extra])
    assert r["crash"] is None, r["crash"]
    assert r["code"] in (0, 2), r
    if r["code"] == 2:
        lines = r["err"].strip().splitlines()
        assert lines and all(ln.startswith("error: ") for ln in lines), r["err"]
        assert "Traceback" not in r["err"]
