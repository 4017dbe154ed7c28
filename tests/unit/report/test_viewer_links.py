"""Issue 38, item 1: an estimate's "responses" link in `biasaudit view` shows exactly the
responses of the items the estimate was computed from (count and ids), for every shipped
spec, on a run answered by the spec's own self-test oracle (`planted`; no model).

On main the link of a per-group estimate named without a stem (`bias_type.gender` of
token probability, n = 6 pairs) selected every response of the run (80 of 80, first card
`bias_type = disability`) because the page guessed the group from the estimate's name.

The expected responses are computed here, apart from the viewer's code: from summary.json
and responses.jsonl as written (raw JSON), the metric's item rows restricted by the
estimate's own record (its `subset` and its cell), each item standing for the responses
of its stimulus in its cell. The item count is checked against the estimate's own `n`
(computed by the metric), so a subset that names the wrong items fails too. The browser
half (the real page, clicked) is `test_links_select_the_items_behind_each_estimate_in_chromium`."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.helpers import REPO, read_jsonl

SPECS = sorted(p.stem for p in (REPO / "specs").glob("*.yaml") if p.stem != "default_suite")
SLOW = {"bbq", "biaxis_factorial", "biaxis_oat"}  # several seconds each


def oracle_run(spec: str, out: Path) -> Path:
    """The spec run against its self-test's `planted` oracle (every coding request answered
    by the oracle's perfect judge), written as `biasaudit run` writes a run folder."""
    from biasaudit.coding.stage import CodingResult, run_coding
    from biasaudit.coding.units import units_of
    from biasaudit.records.execution import ExecutionStats
    from biasaudit.records.responses import generated_text
    from biasaudit.runner.pipeline import Coded, finish, manifest, measure, prepare
    from biasaudit.runner.selftest import _oracle_for, as_oracle
    from biasaudit.runner.selftest_oracles import OracleAnswerer, oracle_responses
    from biasaudit.spec.compose import compose
    from biasaudit.verdicts.thresholds import evaluate

    prep = prepare(compose(as_oracle([f"spec={spec}", "report.formats=[json]"])))
    oracle, params = _oracle_for(prep)
    responses = oracle_responses(prep, oracle, params, "planted")
    if prep.coding.layers:
        units = units_of(prep)
        intents = {generated_text(responses[u.key]) or "": "planted" for u in units if u.key in responses}
        coded = Coded(run_coding(prep.coding, units, responses, OracleAnswerer(oracle, "planted", intents)), {})
    else:
        coded = Coded(CodingResult(codes={}, units=[]), {})
    results = measure(prep, responses, coded, calibration=False)
    verdicts = evaluate(prep.composed.config.thresholds, results)
    run_dir = out / spec
    done = SimpleNamespace(coded=coded, results=results, verdicts=verdicts, record=None)
    finish(prep, responses, ExecutionStats(), run_dir, manifest(prep, spec, []), looked=done)  # type: ignore[arg-type]
    return run_dir


def _in(stimulus: str, fields: dict[str, Any], levels: dict[str, Any], subset: dict[str, Any] | None) -> bool:
    if not subset:
        return True
    return ((subset.get("stimuli") is None or stimulus in subset["stimuli"])
            and all(str(fields.get(f, "")) in vs for f, vs in subset.get("where", {}).items())
            and all(f in levels and str(levels[f]) in vs for f, vs in subset.get("levels", {}).items())
            and (not subset.get("any_of") or any(all(str(fields.get(f, "")) == v for f, v in c.items())
                                                 for c in subset["any_of"])))


def expected_links(run_dir: Path) -> dict[tuple[str, str, str], tuple[list[int], int | None, dict[str, Any]]]:
    """(metric, estimate, cell) -> (responses.jsonl line numbers behind it, items behind it,
    the estimate as summary.json holds it), from the raw files alone."""
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    trail = read_jsonl(run_dir / "responses.jsonl")
    cells = set(summary["design"]["cells"])
    item_keys = {"stimulus", "stimulus_sha", "cell", "levels", "outcome", "diff"}
    fields_of: dict[str, dict[str, Any]] = {}
    for m in summary["metrics"].values():
        for it in m["items"]:
            fields_of.setdefault(it["stimulus"], {k: v for k, v in it.items() if k not in item_keys})
    out = {}
    for mid, m in summary["metrics"].items():
        ests = [(name, "", e, e.get("subset")) for name, e in m["estimates"].items()]
        ests += [(name, cell, e, e.get("subset", m["estimates"].get(name, {}).get("subset")))
                 for name, per in m.get("cells", {}).items() for cell, e in per.items()]
        for name, cell, e, subset in ests:
            if m["items"]:
                # an item row is flat: its stimulus fields are its keys before its numbers
                # an item names its stimulus and cell; one not per design cell stands for its
                # stimulus's responses in every cell (of the estimate's cell, for a per-cell one)
                items = [it for it in m["items"] if (not cell or it.get("cell") == cell or it.get("cell") not in cells)
                         and _in(it["stimulus"], it, it.get("levels") or {}, subset)]
                per_cell = {(it["stimulus"], it["cell"]) for it in items if it.get("cell") in cells}
                anywhere = {it["stimulus"] for it in items if it.get("cell") not in cells}
                lines = [i for i, t in enumerate(trail) if (t["stimulus"], t["cell"]) in per_cell
                         or (t["stimulus"] in anywhere and (not cell or t["cell"] == cell))]
                out[(mid, name, cell)] = (lines, len(items), e)
            else:
                lines = [i for i, t in enumerate(trail) if (not cell or t["cell"] == cell)
                         and _in(t["stimulus"], fields_of.get(t["stimulus"], _data_fields(run_dir, t["stimulus"])), t["levels"],
                                subset)]
                out[(mid, name, cell)] = (lines, None, e)
    return out


_FIELDS: dict[Path, dict[str, dict[str, Any]]] = {}


def _data_fields(run_dir: Path, stimulus: str) -> dict[str, Any]:
    """A stimulus's fields from the data file the run read (metrics without item rows)."""
    if run_dir not in _FIELDS:
        from biasaudit.data import load_stimuli
        from biasaudit.records.manifest import RunManifest
        from biasaudit.spec import validate_config

        m = RunManifest.model_validate_json((run_dir / "manifest.json").read_text(encoding="utf-8"))
        cfg = validate_config(m.config, spec_file=m.spec_file, choices=m.choices)
        st = load_stimuli(cfg.stimuli, Path(m.spec_file), cfg.runtime.limits)
        _FIELDS[run_dir] = {s.id: dict(s.fields) for s in st.stimuli}
    return _FIELDS[run_dir].get(stimulus, {})


def _n_agrees(e: dict[str, Any], items: int | None, stimuli: int, responses: int) -> bool:
    """The estimate's own n counts its items (pairs, triples, questions) or, clustered,
    their stimuli; `rows` counts the items when it differs from n. A metric without item
    rows: its responses or their stimuli."""
    if e.get("value") is None:
        return True
    if items is None:
        return e["n"] in (responses, stimuli) or e.get("rows") == responses
    return e["n"] in (items, stimuli) or e.get("rows") == items


@pytest.mark.parametrize("spec", [pytest.param(s, marks=pytest.mark.slow) if s in SLOW else s for s in SPECS])
def test_every_link_selects_the_responses_of_its_items(spec: str, workdir: Path) -> None:
    from biasaudit.report.viewer import load_view

    run_dir = oracle_run(spec, workdir)
    data = load_view(run_dir, max_rows=10**6)
    trail = read_jsonl(run_dir / "responses.jsonl")
    assert len(data.rows) == len(trail)  # every response embedded: row i is line i
    expected = expected_links(run_dir)
    # first the record itself: the items an estimate names are as many as its own n says
    for (mid, name, cell), (lines, items, raw) in expected.items():
        stimuli = len({trail[i]["stimulus"] for i in lines})
        assert _n_agrees(raw, items, stimuli, len(lines)), \
            f"{spec}: {mid} / {name} [{cell or 'pooled'}]: n = {raw['n']} but {items} items ({stimuli} stimuli, " \
            f"{len(lines)} responses) are behind it by its record"
    seen = set()
    for e in data.estimates:
        key = (e.metric, e.estimate, e.cell)
        if key in seen:
            continue  # an estimate's per-group breakdown (`groups`): checked through its own record below
        seen.add(key)
        lines, items, raw = expected[key]
        ids = [(t["cell"], t["stimulus"], t["slot"], t["variant"], t["sample"]) for t in (trail[i] for i in lines)]
        got = [(r.cell, r.stimulus, r.slot, r.variant, r.sample) for r in (data.rows[i] for i in e.rows)]
        if e.group:  # the group column names it (main: empty for `bias_type.gender`)
            assert raw.get("subset"), key
        assert sorted(got) == sorted(ids), f"{spec}: {e.metric} / {e.estimate} [{e.cell or 'pooled'}]: " \
                                           f"{len(got)} responses shown, {len(ids)} behind it"
        assert e.items == items, key
    assert seen == set(expected)


@pytest.mark.slow  # headless Chromium
def test_links_select_the_items_behind_each_estimate_in_chromium(workdir: Path) -> None:
    """The real page, clicked: every estimate's link of the default suite's token-probability
    member (crows_pairs_tp) shows as many responses as its items have, and the cards shown
    are among them; the issue's case by hand: `bias_score / bias_type.gender` rests on n = 6
    pairs, two responses each (more and less stereotyped sentence): 12 responses, every card
    `bias_type = gender` (main: 80 of 80, first card `bias_type = disability`)."""
    from biasaudit.report.viewer import write_viewer
    from tests.browser import load_page
    from tests.report_checks import chromium_or_skip

    chromium_or_skip()
    run_dir = oracle_run("crows_pairs_tp", workdir)
    page, data = write_viewer(run_dir)
    trail = read_jsonl(run_dir / "responses.jsonl")
    expected = expected_links(run_dir)
    order = [(e.metric, e.estimate, e.cell) for e in data.estimates]
    click = """((i) => {
      document.querySelector('button[data-estimate="' + i + '"]').click();
      const cards = [...document.querySelectorAll('#rows article')].map(a =>
        [...a.querySelectorAll('.head .chip')].map(c => c.textContent));
      return [Number(document.getElementById('count').getAttribute('data-count')), cards,
              document.getElementById('estimate-banner').textContent];
    })"""
    res = load_page(page, steps=tuple(f"{click}({i})" for i in range(len(order))))
    assert res.console == [] and res.exceptions == [], res.console + res.exceptions
    for key, (count, cards, _banner) in zip(order, res.values, strict=True):  # type: ignore[misc]
        lines = expected[key][0]
        assert count == len(lines), f"{key}: the page shows {count} responses, {len(lines)} are behind it"
        behind = {(trail[i]["cell"], "stimulus " + trail[i]["stimulus"]) for i in lines}
        assert all((c[0], c[1]) in behind for c in cards), key
    i = order.index(("bias_score", "bias_type.gender", ""))
    raw = expected[order[i]][2]
    count, cards, banner = res.values[i]  # type: ignore[misc]
    assert raw["n"] == 6 and count == 2 * 6 and len(cards) == 12
    assert all("bias_type = gender" in c for c in cards) and "bias_type = gender" in banner and "(6 items)" in banner
