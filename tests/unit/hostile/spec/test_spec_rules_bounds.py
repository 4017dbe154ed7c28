"""Spec (issue 26, class 6): what a `rules` layer may compile to is bounded before it is
compiled. 60,000 keywords took seconds to compile (at validate, and again at run); a
pattern nested 1,000 groups deep exhausted the regex parser's recursion (a traceback,
exit 70); a counted repeat such as `a{4294967294}` made the regex module allocate
gigabytes. Each is now one line at `validate`, naming the limit: `MAX_RULES` rules and
`MAX_KEYWORDS` keywords per layer, `MAX_PATTERN_SIZE` for all of a layer's patterns
(counted repeats expanded), `MAX_NESTING` nested groups."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from biasaudit.coding.coders import rules as rules_mod
from tests.conftest import isolation, run_dirs
from tests.helpers import operator_conf, write_spec
from tests.unit.hostile._cases import error_lines

SUBJECT = {"backend": "scripted", "name": "subject", "script": {"replies": {"Group A": "Yes, they are."}}}


def spec(workdir: Path, layer: dict[str, Any]) -> list[str]:
    doc = {
        "audit": {"name": "rb", "method": "label_rates"},
        "stimuli": {"inline": [{"id": "s1", "statement": "Group A is lazy."}, {"id": "s2", "statement": "Group B."}],
                    "id_field": "id"},
        "probe": {"kind": "generate", "max_tokens": 20, "prompt": "Q: {{ statement }}"},
        "coding": {"r": {"coder": "rules", "otherwise": "other", **layer}},
        "metrics": [{"name": "label_rate", "layer": "r", "labels": ["x"]}],
    }
    path = write_spec(workdir / "rb.yaml", yaml.dump(doc, sort_keys=False, width=1 << 20))
    return [f"spec={path}", *operator_conf(workdir, model=SUBJECT)]


def kw(n: int, label: str = "x") -> dict[str, Any]:
    return {"keywords": [f"word{i}" for i in range(n)], "label": label}


def pat(p: str, label: str = "x") -> dict[str, Any]:
    return {"pattern": p, "label": label}


REFUSED: dict[str, tuple[dict[str, Any], list[str]]] = {
    # (a spec of 60k list items takes Hydra and OmegaConf ~20 s to load: the issue's 60k
    # keywords are checked in process below, and here a list just over the limit)
    "keywords spread over levels": ({"by": "task", "rules": [kw(10)],
                                     "levels": {"t": [kw(5_000), kw(4_991)]}}, ["10001 keywords",
                                                                                "limit of 10000 keywords per layer"]),
    "1,001 rules": ({"rules": [pat(f"w{i}") for i in range(1001)]}, ["1001 rules", "limit of 1000 rules per layer"]),
    "2,000-level-deep regex": ({"rules": [pat("(" * 999 + "a" + ")" * 999)]},
                               ["coding.r.rules[0]", "nests groups 999 deep", "limit of 100"]),
    "deep non-capturing groups": ({"rules": [pat("(?:" * 300 + "a" + ")" * 300)]}, ["300 deep"]),
    "deep alternation": ({"rules": [pat("(?:a|" * 200 + "b" + ")" * 200)]}, ["200 deep"]),
    "huge counted repeat": ({"rules": [pat("a{4294967294}")]}, ["coding.r.rules[0]", "limit of 200000",
                                                                  "counted repeats"]),
    "nested counted repeats": ({"rules": [pat("(?:(?:a{100}){100}){100}")]}, ["limit of 200000"]),
    "repeat of a class": ({"rules": [pat("[a-z]{250000}")]}, ["limit of 200000"]),
    "many medium repeats": ({"rules": [pat(f"w{i}" + "x{1000}") for i in range(250)]}, ["coding.r.rules[199]"]),
    "long keywords": ({"rules": [{"keywords": ["k" * 1000 + str(i) for i in range(300)], "label": "x"}]},
                      ["limit of 200000"]),
    "repeat in a level's rule": ({"by": "task", "rules": [pat("a")], "levels": {"t": [pat("b{300000}")]}},
                                 ["coding.r.levels.t[0]"]),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_unbounded_rules_are_refused_at_validate(workdir: Path, cli, name: str) -> None:  # type: ignore[no-untyped-def]
    layer, must = REFUSED[name]
    args = spec(workdir, layer)
    if "by" in layer:
        doc = yaml.safe_load(Path(args[0].removeprefix("spec=")).read_text())
        doc["factors"] = {"task": {"t": {"template": "Q: {{ statement }}"}}}
        Path(args[0].removeprefix("spec=")).write_text(yaml.dump(doc, sort_keys=False, width=1 << 20))
    code, out, err = cli("validate", *args)
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err[-2000:]
    assert lines[0].startswith("error: ") and "hint:" in lines[0], lines[0]
    for m in must:
        assert m in lines[0], (m, lines[0][:500])


ACCEPTED: dict[str, dict[str, Any]] = {
    "1,000 rules (the limit)": {"rules": [pat(f"w{i}") for i in range(999)] + [pat("yes")]},
    "ordinary counted repeats": {"rules": [pat(r"\b\d{3}-\d{4}\b"), pat(r"^(?:yes|no)\b.{0,40}"), pat("y{1,1000}es")]},
    "nesting of 100": {"rules": [pat("(?:" * 100 + "yes" + ")" * 100)]},
    "braces that are no repeat": {"rules": [pat(r"\{yes\}"), pat("[{]{3}"), pat(r"\p{L}{2}es")]},
}


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_rules_within_the_bounds_run(workdir: Path, cli, name: str) -> None:  # type: ignore[no-untyped-def]
    args = spec(workdir, ACCEPTED[name])
    code, out, err = cli("run", *args, *isolation(workdir))
    assert code == 0 and "Traceback" not in err, err[-2000:]
    [run] = run_dirs(workdir)
    layer = json.loads((run / "summary.json").read_text())["coding"]["layers"][0]
    assert sum(layer["status"].values()) == 2, layer


@pytest.mark.parametrize("rules, must", [
    ([kw(60_000)], "60000 keywords"),
    ([kw(4_000), kw(4_000), kw(4_000)], "12000 keywords"),
])
def test_the_issues_60k_keywords_are_refused_before_compiling(tmp_path: Path, rules: list[Any], must: str) -> None:
    from biasaudit.errors import SpecError
    from tests.coding_helpers import config, plan

    cfg = config(tmp_path, coding={"r": {"coder": "rules", "rules": rules}})
    with pytest.raises(SpecError) as ei:
        plan(cfg)
    assert must in ei.value.message and "limit of 10000" in ei.value.message and ei.value.key == "coding.r.rules"


def test_the_keyword_limit_itself_compiles_and_codes(tmp_path: Path) -> None:
    from biasaudit.coding.stage import run_coding
    from tests.coding_helpers import answered, config, plan, unit

    cfg = config(tmp_path, coding={"r": {"coder": "rules", "otherwise": "none",
                                         "rules": [kw(rules_mod.MAX_KEYWORDS - 1), pat("yes", "y")]}})
    units = [unit(0), unit(1)]
    out = run_coding(plan(cfg), units, answered(units, ["it is word9998 here", "yes"]), lambda layer, wanted: {})
    assert [out.codes["r"][u.id].label for u in units] == ["x", "y"]


def test_all_rules_together_get_one_time_budget_per_input(tmp_path: Path) -> None:
    """Many slow rules cannot multiply the match timeout: the budget is per input, for all
    of a layer's rules (MATCH_TIMEOUT_S), not per rule."""
    from biasaudit.coding.stage import run_coding
    from biasaudit.errors import SpecError
    from tests.coding_helpers import answered, config, plan, unit

    slow = r"^(a|aa)+$"  # exponential backtracking on a run of a's followed by b
    cfg = config(tmp_path, coding={"r": {"coder": "rules", "head": 100_000,
                                         "rules": [pat(slow) for _ in range(50)]}})
    u = unit(0)
    import time

    t = time.monotonic()
    with pytest.raises(SpecError) as ei:
        run_coding(plan(cfg), [u], answered([u], ["a" * 40 + "b"]), lambda layer, wanted: {})
    assert "took longer than" in ei.value.message and ei.value.key == "coding.r.rules"
    assert time.monotonic() - t < 50 * rules_mod.MATCH_TIMEOUT_S / 2  # not 50 timeouts in a row


@pytest.mark.parametrize("text, size, depth", [
    ("abc", 3, 0), ("a{1000}", 1000, 0), (r"\d{3}", 3, 0), ("[a-z]{5}", 5, 0), ("((a))", 1, 2),
    (r"\{10}", 4, 0), ("a{,5}", 5, 0), ("a{2,}", 2, 0), ("(?:a{10}){10}", 120, 1),
])
def test_pattern_shape(text: str, size: int, depth: int) -> None:
    assert rules_mod.pattern_shape(text) == (size, depth)
