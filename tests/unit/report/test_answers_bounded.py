"""The report's sample answers (summary.json `answers.samples`) are picked in one pass over
the plan, keeping a few items per group (issue 42), and are the ones the earlier
grouping of every answered item picked: groups beyond MAX_GROUPS counted, a group with
fewer stimuli than SAMPLES_PER_GROUP filled in plan order, failed answers left out, a
breakdown field a stimulus lacks, no breakdown (the cells), and the unit of each shown
answer (the last unit of its place)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from biasaudit.plan.requests import Request
from biasaudit.records.codes import Code, CodeTable
from biasaudit.records.responses import Response, ResponseTable
from biasaudit.report import answers
from biasaudit.report.answers import MAX_GROUPS, SAMPLES_PER_GROUP, _samples, by_fields


def _old_samples(plan: Any, responses: Any, results: Any, units: Any, codes: Any) -> list[dict[str, Any]]:
    # the section before issue 42's report work: every answered item grouped, then picked
    answered = [it for it in plan.items if (r := responses.get(it.key)) is not None and r.ok]
    if not answered:
        return []
    fields = {s.id: s.fields for s in plan.stimuli.stimuli}
    unit_of = {(u.cell, u.stimulus, u.slot, u.variant, u.sample): u.id for u in units}
    by = list(dict.fromkeys(f for r in results.values() for f in by_fields(r.params)))
    breakdowns: list[tuple[str, dict[str, list[Any]]]] = []
    for f in by:
        groups: dict[str, list[Any]] = {}
        for it in answered:
            v = fields.get(it.stimulus, {}).get(f)
            if v is not None and v != "":
                groups.setdefault(str(v), []).append(it)
        if groups:
            breakdowns.append((f, groups))
    if not breakdowns:
        groups = {}
        for it in answered:
            groups.setdefault(it.cell, []).append(it)
        breakdowns.append(("cell", groups))
    out = []
    for f, groups in breakdowns:
        for g in list(groups)[:MAX_GROUPS]:
            its = groups[g]
            seen: set[str] = set()
            pick: list[Any] = []
            for it in its:
                if it.stimulus not in seen and len(pick) < SAMPLES_PER_GROUP:
                    pick.append(it)
                    seen.add(it.stimulus)
            pick += [it for it in its if it not in pick][:SAMPLES_PER_GROUP - len(pick)]
            shown = answers._shown(pick, plan, responses, unit_of, codes)
            out.append({"by": f, "group": g, "n": len(its), "shown": len(shown), "groups": len(groups),
                        "answers": shown})
    return out


def _case(n_stim: int, per_stim: int, by: list[str], fail_every: int) -> tuple[Any, ...]:
    stimuli, items, requests, responses = [], [], {}, ResponseTable()
    units, table = [], CodeTable()
    for s in range(n_stim):
        # `grp` has many values (more than MAX_GROUPS), `few` two, `sparse` is often missing
        stimuli.append(SimpleNamespace(id=f"s{s}", fields={"grp": f"g{s % (MAX_GROUPS + 5)}", "few": s % 2,
                                                           "sparse": "" if s % 3 else "x"}))
        for j in range(per_stim):
            key = f"k{s}-{j}"
            it = SimpleNamespace(cell=f"c{j % 4}", stimulus=f"s{s}", slot="prompt", variant=0, sample=j, key=key)
            items.append(it)
            requests[key] = Request(key=key, kind="generate", sample=j,
                                    messages=[{"role": "user", "content": f"q {s} {j}"}])
            i = len(items)
            responses[key] = (Response(key=key, status="failed", error="x") if fail_every and i % fail_every == 0
                              else Response(key=key, status="ok", output={"text": f"a {s} {j}"}))
            for dup in range(2):  # two units at one place: the last one's id is shown
                uid = f"u{s}-{j}-{dup}"
                units.append(SimpleNamespace(id=uid, cell=it.cell, stimulus=it.stimulus, slot="prompt", variant=0,
                                             sample=j))
                table[uid] = Code(unit=uid, status="coded", label=f"L{dup}", source="rules")
    plan = SimpleNamespace(items=items, stimuli=SimpleNamespace(stimuli=stimuli), requests=requests, kind="generate")
    results = {"m": SimpleNamespace(params={"by": by}), "m2": SimpleNamespace(params={})}
    return plan, responses, results, units, {"layer": table}


@pytest.mark.parametrize(("n_stim", "per_stim", "by", "fail_every"), [
    (40, 3, ["grp", "few"], 0), (40, 3, ["grp", "sparse", "few"], 4), (2, 5, ["few"], 3), (1, 7, [], 2),
    (30, 1, ["missing"], 0), (5, 2, [], 1)])
def test_the_samples_are_the_earlier_ones(n_stim: int, per_stim: int, by: list[str], fail_every: int) -> None:
    case = _case(n_stim, per_stim, by, fail_every)
    assert _samples(*case) == _old_samples(*case)
