"""Spec (issue 26, class 4): coding layers in any declaration order. A `fallback` layer
declared before the layer it serves, a layer that reads a fallback, a fallback whose
input is declared later: ordered by dependency and run. A fallback that reads its own
primary, fallbacks in a circle, a layer that is its own fallback: refused at `validate`
with one line naming the layers, before any model call (these died with KeyError, exit 70,
after every model call, or coded nothing at all)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import isolation, run_dirs
from tests.helpers import operator_conf, read_jsonl, write_spec
from tests.unit.hostile._cases import error_lines

SUBJECT = {"backend": "scripted", "name": "subject", "script": {"replies": {
    "Group A": "Yes, they are.", "Group B": "Well, no idea.", "Group C": "Hmm."}}}


def rules(*words: str, label: str = "yes", **extra: Any) -> dict[str, Any]:
    return {"coder": "rules", "labels": ["yes", "no"], "rules": [{"keywords": list(words), "label": label}], **extra}


def spec(workdir: Path, coding: dict[str, Any], layer: str = "sel") -> list[str]:
    doc = {
        "audit": {"name": "fb", "method": "label_rates"},
        "stimuli": {"inline": [{"id": f"s{i}", "statement": f"Group {g} is lazy."} for i, g in enumerate("ABC")],
                    "id_field": "id"},
        "probe": {"kind": "generate", "max_tokens": 20, "prompt": "Q: {{ statement }}"},
        "coding": coding,
        "metrics": [{"name": "label_rate", "layer": layer, "labels": ["yes"]}],
    }
    path = write_spec(workdir / "fb.yaml", yaml.safe_dump(doc, sort_keys=False))
    return [f"spec={path}", *operator_conf(workdir, model=SUBJECT)]


# (coding layers, the layer the metric reads) -> the order the plan codes them in
RUNS: dict[str, tuple[dict[str, Any], str, list[str]]] = {
    "fallback declared first": ({"fb": rules("idea", label="no"), "sel": rules("yes", fallback="fb")}, "sel",
                                ["sel", "fb"]),
    "chain of fallbacks declared backwards": (
        {"c": rules("hmm", label="no"), "b": rules("idea", label="no", fallback="c"),
         "sel": rules("yes", fallback="b")}, "sel", ["sel", "b", "c"]),
    "a layer reads a fallback declared before its primary": (
        {"echo": rules("no", input="layer:fb", label="no"), "fb": rules("idea", label="no"),
         "sel": rules("yes", fallback="fb")}, "sel", ["sel", "fb", "echo"]),
    "a layer reads a layer declared after it": (
        {"echo": rules("yes", input="layer:sel"), "sel": rules("yes")}, "echo", ["sel", "echo"]),
    "a fallback reads a layer declared after its primary": (
        {"sel": rules("yes", fallback="fb"), "fb": rules("no", input="layer:tag", label="no"),
         "tag": {"coder": "rules", "labels": ["no"], "rules": [{"keywords": ["idea"], "label": "no"}]}}, "sel",
        ["tag", "sel", "fb"]),
    "a fallback strips a layer declared last": (
        {"fb": rules("idea", label="no", strip="mark"), "sel": rules("yes", fallback="fb"),
         "mark": {"coder": "rules", "labels": ["x"], "rules": [{"keywords": ["well"], "label": "x"}]}}, "sel",
        ["mark", "sel", "fb"]),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_layers_in_any_declared_order_run(workdir: Path, cli, name: str) -> None:  # type: ignore[no-untyped-def]
    coding, layer, order = RUNS[name]
    args = spec(workdir, coding, layer)
    code, out, err = cli("validate", *args)
    assert code == 0, err
    code, out, err = cli("run", *args, *isolation(workdir))
    assert code == 0 and "Traceback" not in err, err
    [run] = run_dirs(workdir)
    summary = json.loads((run / "summary.json").read_text())
    assert [lay["name"] for lay in summary["coding"]["layers"]] == order
    codes = read_jsonl(run / "codes.jsonl")
    if "fb" in order or "b" in order:  # the primary's abstention on "Well, no idea." was coded by its fallback
        [s1] = [c for c in codes if c["layer"] == "sel" and "|s1|" in c["unit"]]
        assert s1["label"] == "no" and s1["source"].startswith("fallback:"), s1


REFUSED: dict[str, tuple[dict[str, Any], list[str]]] = {
    "fallback cycle": ({"sel": rules("yes", fallback="fb"), "fb": rules("idea", fallback="sel")},
                       ["coding.sel.fallback", "fallbacks form a circle: sel -> fb -> sel"]),
    "fallback cycle of three": (
        {"a": rules("x", fallback="b"), "b": rules("y", fallback="c"), "c": rules("z", fallback="a"),
         "sel": rules("yes")}, ["coding.a.fallback", "a -> b -> c -> a"]),
    "fallback to self": ({"sel": rules("yes", fallback="sel")}, ["coding.sel.fallback", "its own fallback"]),
    "fallback reads its primary": ({"sel": rules("yes", fallback="fb"), "fb": rules("no", input="layer:sel")},
                                   ["coding.fb.input", "layer 'fb' reads layer 'sel'", "fallback chain sel -> fb"]),
    "fallback strips its primary": ({"sel": rules("yes", fallback="fb"), "fb": rules("no", strip="sel")},
                                    ["coding.fb.strip", "fallback chain sel -> fb"]),
    "primary reads its own fallback": ({"sel": rules("yes", fallback="fb", input="layer:fb"), "fb": rules("no")},
                                       ["coding.sel.input", "layer 'sel' reads layer 'fb'"]),
    "fallback reads its primary, declared first": (
        {"fb": rules("no", input="layer:sel"), "sel": rules("yes", fallback="fb")}, ["coding.fb.input"]),
    "input circle through a fallback": (
        {"sel": rules("yes", fallback="fb"), "fb": rules("no", input="layer:echo"),
         "echo": rules("yes", input="layer:sel")}, ["circle", "sel"]),
    "two layers share one fallback": ({"sel": rules("yes", fallback="fb"), "other": rules("x", fallback="fb"),
                                       "fb": rules("no")}, ["coding.other.fallback", "already the fallback"]),
    "fallback names no layer": ({"sel": rules("yes", fallback="nope")}, ["coding.sel.fallback", "'nope'"]),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_impossible_orders_are_refused_at_validate(workdir: Path, cli, name: str) -> None:  # type: ignore[no-untyped-def]
    coding, must = REFUSED[name]
    args = spec(workdir, coding)
    code, out, err = cli("validate", *args)
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    for m in must:
        assert m in lines[0], (m, lines[0])
    code, out, err = cli("run", *args, *isolation(workdir))  # refused before any model call: nothing written
    assert code == 2 and "Traceback" not in err, err
    assert not (workdir / "cache.sqlite").exists() and run_dirs(workdir) == []
