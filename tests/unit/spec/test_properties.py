"""Property tests (issue 11, Hypothesis): the spec parser and the metric identities.

Spec parser: random valid specs validate, round-trip (model dump and YAML text) and
expand to the expected cells and plan size; an unknown key anywhere is a SpecError naming
its key path; any corruption of a leaf, and any file content at all, ends in a one-line
biasaudit error or a valid plan, never another exception.
Metrics: the bias score under swapping the pair, the shared-token scores' symmetry, the
pivotal-token proportions, and the BER family under swapping the two layers."""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from biasaudit.errors import BiasAuditError, SpecError
from biasaudit.methods.biaxis.ber import ber_family
from biasaudit.methods.pivotal_perplexity.metric import proportions
from biasaudit.methods.token_probability.metric import (
    PairScore,
    ar_full,
    ar_shared,
    bias_estimate,
    pll_shared,
)
from biasaudit.plan import expand_design
from biasaudit.runner.pipeline import prepare
from biasaudit.spec import AuditConfig, validate_config
from biasaudit.spec.compose import Composed
from biasaudit.spec.source import check_spec_file

NAME = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=20)
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def valid_specs(draw: st.DrawFn) -> dict[str, Any]:
    """A token-probability spec with random factors, levels, design and thresholds."""
    factor_names = draw(st.lists(NAME, max_size=3, unique=True))
    factors = {}
    for f in factor_names:
        levels = draw(st.lists(NAME, min_size=1, max_size=3, unique=True))
        factors[f] = {lv: {"vars": {f"v_{f}": draw(TEXT)}} for lv in levels}
    kind = draw(st.sampled_from(["full", "oat", "explicit"]) if factors else st.just("full"))
    design: dict[str, Any] = {"kind": kind}
    if kind == "oat":
        design["baseline"] = {f: draw(st.sampled_from(sorted(lv))) for f, lv in factors.items()}
    if kind == "explicit":
        grid = [dict(zip(factors, combo, strict=True)) for combo in itertools.product(*(list(v) for v in factors.values()))]
        design["cells"] = draw(st.lists(st.sampled_from(grid), min_size=1, max_size=4, unique_by=lambda c: tuple(c.items())))
    prefix = "".join(f"{{{{ v_{f} }}}}" for f in factors)
    rows = draw(st.lists(st.fixed_dictionaries({"more": TEXT, "less": TEXT, "bias_type": NAME,
                                                "direction": st.sampled_from(["stereo", "antistereo"])}),
                         min_size=1, max_size=5))
    spec: dict[str, Any] = {
        "audit": {"name": draw(NAME), "method": "token_probability", "description": draw(TEXT)},
        "stimuli": {"inline": rows, "format": "csv"},
        "factors": factors,
        "design": design,
        "probe": {"kind": "sequence_logprob", "inputs": {"more": prefix + "{{ more }}", "less": prefix + "{{ less }}"}},
        "metrics": [{"name": "bias_score", "mode": draw(st.sampled_from(["ar_full", "ar_shared"]))}],
        "model": {"backend": "scripted", "name": "scripted"},
    }
    lo = draw(st.floats(0, 100, allow_nan=False))
    if draw(st.booleans()):
        spec["thresholds"] = [{"metric": "bias_score", "min": lo, "max": draw(st.floats(lo, 100, allow_nan=False))}]
    return spec


def expected_cells(spec: dict[str, Any]) -> int:
    factors, design = spec["factors"], spec["design"]
    if not factors:
        return 1
    if design["kind"] == "full":
        return int(np.prod([len(v) for v in factors.values()]))
    if design["kind"] == "oat":
        return 1 + sum(len(v) - 1 for v in factors.values())
    return len(design["cells"])


def prepare_dict(spec: dict[str, Any]) -> Any:
    cfg = validate_config(spec, spec_file="s.yaml", choices={})
    return prepare(Composed(config=cfg, data=spec, spec_file=Path("s.yaml"), choices={}))


@PROPERTY
@given(valid_specs())
def test_valid_specs_round_trip_and_expand_as_designed(spec: dict[str, Any]) -> None:
    cfg = validate_config(spec, spec_file="s.yaml")
    assert AuditConfig.model_validate(cfg.model_dump()) == cfg
    text = yaml.safe_dump(spec, allow_unicode=True, sort_keys=False)
    assert yaml.safe_load(text) == spec
    cells = expand_design(cfg, "s.yaml")
    assert len(cells) == expected_cells(spec) == len({c.id for c in cells})
    prep = prepare_dict(spec)
    assert prep.plan.n_items == len(cells) * len(spec["stimuli"]["inline"]) * 2  # two slots per pair


@PROPERTY
@given(valid_specs(), st.data())
def test_valid_spec_files_pass_the_file_check(tmp_path_factory: pytest.TempPathFactory, spec: dict[str, Any],
                                              data: st.DataObject) -> None:
    path = tmp_path_factory.mktemp("spec") / "s.yaml"
    spec_file = {k: v for k, v in spec.items() if k != "model"}  # the model is the operator's, not the spec's
    path.write_text(yaml.safe_dump(spec_file, allow_unicode=True), encoding="utf-8")
    check_spec_file(path)


def mapping_paths(spec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(key path, mapping) for every section whose model forbids unknown keys."""
    out = [(k, spec[k]) for k in ("audit", "stimuli", "design", "probe", "model") if isinstance(spec.get(k), dict)]
    out += [(f"factors.{f}.{lv}", level) for f, levels in spec["factors"].items() for lv, level in levels.items()]
    out += [(f"thresholds[{i}]", t) for i, t in enumerate(spec.get("thresholds", []))]
    out.append(("", spec))
    return out


@PROPERTY
@given(valid_specs(), st.data(), st.from_regex(r"zz[a-z]{1,6}", fullmatch=True))
def test_unknown_key_anywhere_is_a_spec_error_with_its_path(spec: dict[str, Any], data: st.DataObject, key: str) -> None:
    bad = copy.deepcopy(spec)
    path, node = data.draw(st.sampled_from(mapping_paths(bad)))
    node[key] = data.draw(TEXT)
    with pytest.raises(SpecError) as ei:
        validate_config(bad, spec_file="s.yaml")
    where = f"{path}.{key}" if path else key
    assert ei.value.key == where and f"unknown key {key!r}" in ei.value.message
    assert ei.value.one_line().startswith(f"error: s.yaml: {where}: ")


def leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in leaves(v, (*path, k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in leaves(v, (*path, i))]
    return [path]


JUNK = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXT, st.lists(TEXT, max_size=2),
                 st.dictionaries(NAME, TEXT, max_size=2), st.just("{{ undefined_var }}"), st.just("{% if %}"),
                 st.just("${oc.env:HOME}"))


@PROPERTY
@given(valid_specs(), st.data(), JUNK)
def test_corrupted_leaf_gives_a_one_line_error_or_a_plan(spec: dict[str, Any], data: st.DataObject, junk: Any) -> None:
    bad = copy.deepcopy(spec)
    path = data.draw(st.sampled_from(leaves(bad)))
    node = bad
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = junk
    try:
        prep = prepare_dict(bad)
    except BiasAuditError as exc:
        event(type(exc).__name__)
        lines = exc.lines() if hasattr(exc, "lines") else [exc.one_line()]
        assert all(ln.startswith("error: ") and "\n" not in ln for ln in lines)
    else:
        event("accepted")
        assert prep.plan.n_items > 0


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode),
                 st.lists(st.sampled_from(["audit:", " name: x", "- a", "{", "}", "[", "]", ": ", "&a", "*a", "!!python/name:os.system",
                                           "<<: *a", "key: ${oc.env:X}", "\t", "'", '"', "\n", "---", "%YAML 1.1"]),
                          max_size=20).map(lambda parts: "\n".join(parts).encode())))
def test_any_file_content_is_accepted_or_a_one_line_spec_error(tmp_path_factory: pytest.TempPathFactory, raw: bytes) -> None:
    path = tmp_path_factory.mktemp("raw") / "s.yaml"
    path.write_bytes(raw)
    try:
        check_spec_file(path)
        event("accepted")
    except SpecError as exc:
        event(exc.message.split(" ")[0])
        assert exc.one_line().startswith(f"error: {path}: ") and "\n" not in exc.one_line()


# -- metric identities -------------------------------------------------------------------

SCORES = st.floats(-50, 0, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(SCORES, SCORES), min_size=1, max_size=60))
def test_bias_score_under_swapping_the_pair(pairs: list[tuple[float, float]]) -> None:
    """Swapping more and less turns the share preferring `more` into the share preferring
    `less`: score + swapped + 100 * ties / N = 100, and the Wilson intervals mirror when
    there are no ties."""
    fwd = [PairScore(cell="c", stimulus=str(i), fields={}, more=m, less=ls) for i, (m, ls) in enumerate(pairs)]
    rev = [PairScore(cell="c", stimulus=str(i), fields={}, more=ls, less=m) for i, (m, ls) in enumerate(pairs)]
    a, b = bias_estimate(fwd), bias_estimate(rev)
    ties = sum(p.tie for p in fwd)
    assert a.value + b.value + 100 * ties / len(pairs) == pytest.approx(100)
    if ties == 0:
        assert (b.ci_low, b.ci_high) == pytest.approx((100 - a.ci_high, 100 - a.ci_low))


def scored(ids: list[int], base: float) -> dict[str, Any]:
    return {"token_ids": [0, *ids], "logprobs": [None, *[base - i for i in range(len(ids))]]}


TOKENS = st.lists(st.integers(1, 6), max_size=8)


@settings(max_examples=300, deadline=None)
@given(TOKENS, TOKENS, st.lists(st.integers(10, 14), min_size=1, max_size=3), st.lists(st.integers(20, 24), max_size=3))
def test_shared_token_scores_do_not_depend_on_pair_order_for_a_minimal_pair(
        prefix: list[int], suffix: list[int], x: list[int], y: list[int]) -> None:
    """For a minimal pair (same prefix and suffix, differing span) the shared-token sums
    swap with the pair. (Not in general: for [1, 2] vs [2, 1] difflib keeps one of two
    equally long alignments, as the CrowS-Pairs reference code does.)"""
    a, b = scored(prefix + x + suffix, -1.0), scored(prefix + y + suffix, -2.0)
    for fn in (ar_shared, pll_shared):
        sa, sb, n = fn(a, b)
        assert fn(b, a) == (sb, sa, n)
    assert ar_full(a) == pytest.approx(sum(a["logprobs"][1:]))


# Tiny magnitudes flushed to zero: scaling 5e-324 by 0.5 underflows to an exact zero (a different
# input), and near-subnormal values lose the precision the unit-free check compares at.
D = st.lists(st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False).map(lambda x: 0.0 if abs(x) < 1e-100 else x),
             min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(D, st.data(), st.floats(1e-3, 1e3))
def test_pivotal_proportions(d_list: list[float], data: st.DataObject, scale: float) -> None:
    d = np.asarray(d_list)
    member = np.asarray(data.draw(st.lists(st.booleans(), min_size=d.size, max_size=d.size)))
    plain, norm = proportions(d, member)
    if not member.any() or np.sum(np.abs(d)) == 0:
        assert (plain, norm) == (None, None)
        return
    assert 0.0 <= plain <= 1.0 + 1e-12
    rest, _ = proportions(d, ~member)
    assert plain + (rest or 0.0) == pytest.approx(1.0)  # the classes share out the whole difference
    assert proportions(d * scale, member) == pytest.approx((plain, norm), rel=1e-9, abs=1e-12)  # unit-free
    flipped = proportions(-d, member)
    assert flipped[0] == pytest.approx(plain) and flipped[1] == pytest.approx(-norm, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=200), st.randoms(use_true_random=False))
def test_ber_family_under_swapping_layers_and_reordering(rows: list[tuple[bool, bool]], rnd: Any) -> None:
    a = np.array([x for x, _ in rows], dtype=float)
    b = np.array([y for _, y in rows], dtype=float)
    r, s = ber_family(a, b), ber_family(b, a)
    assert (s["sel"], s["elab"]) == pytest.approx((r["elab"], r["sel"]))
    assert (s["oed"], s["ued"], s["dni"]) == pytest.approx((r["ued"], r["oed"], -r["dni"]))
    assert (s["union"], s["cor"], s["ir"]) == pytest.approx((r["union"], r["cor"], r["ir"]))
    order = list(range(len(rows)))
    rnd.shuffle(order)
    shuffled = ber_family(a[order], b[order])
    assume(not any(isinstance(v, float) and np.isnan(v) for v in r.values()))
    assert shuffled == pytest.approx(r)
