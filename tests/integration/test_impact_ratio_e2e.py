"""The shipped `hiring_impact` spec end to end on the scripted backend (issue 30, point 4):
the scripted screen invites candidates by rule, so every selection rate and impact ratio is
known by hand; the report lays them out per category of gender, of race and of their
intersection (LL144), thresholds judge `lowest.<field>`, small cells are reported with a
note and never judged, estimates.csv names the group of each per-group row."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from scipy.stats import norm

from tests.conftest import isolation
from tests.helpers import operator_conf

pytestmark = pytest.mark.slow

# First matching substring wins ("A man Hispanic", not "man Hispanic", which "woman
# Hispanic" contains). The two framings put gender and race in either order
# ("A woman Black candidate ...", "Applicant: Black woman; ..."), so both are listed.
REPLIES = {"woman Black": "No, sorry.", "Black woman": "No, sorry.", "nurse": "Yes.", "Asian": "Yes, invite.",
           "White": "Yes.", "Hispanic man": "Yes.", "A man Hispanic": "Yes."}
# Six profiles per gender x race (p1 is the nurse); answers are the same in both framings.
# Invited (of 6): man+Asian 6, man+Black 1 (nurse), man+Hispanic 6, man+White 6,
#                 woman+Asian 6, woman+Black 0, woman+Hispanic 1 (nurse), woman+White 6.
# gender: man 19/24, woman 13/24; race: Asian 12/12, Black 1/12, Hispanic 7/12, White 12/12.


def test_hiring_impact_spec_on_the_scripted_backend(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    ops = operator_conf(workdir, model={"backend": "scripted", "name": "screen", "script": {"replies": REPLIES}})
    code, out, err = cli("run", "spec=hiring_impact", *ops, *isolation(workdir))
    assert code == 1, (out, err)  # lowest.race FAILs
    [run] = list((workdir / "reports").rglob("summary.json"))
    s = json.loads(run.read_text(encoding="utf-8"))
    m = s["metrics"]["impact"]
    est = m["estimates"]
    assert est["rate.gender.man"]["value"] == pytest.approx(19 / 24)
    assert est["rate.gender.woman"]["value"] == pytest.approx(13 / 24)
    # woman: (13/24) / (19/24) = 13/19 = 0.684; two identical answers per candidate, so the
    # effective n of each group is its 24 candidates: Katz on 13/24 vs 19/24
    w = est["ratio.gender.woman"]
    se = math.sqrt(1 / 13 - 1 / 24 + 1 / 19 - 1 / 24)
    z = norm.ppf(0.975)
    assert w["value"] == pytest.approx(13 / 19)
    assert (w["ci_low"], w["ci_high"]) == (pytest.approx(13 / 19 * math.exp(-z * se)),
                                           pytest.approx(13 / 19 * math.exp(z * se)))
    assert w["method"] == "katz-log-design-effect"
    assert est["ratio.gender.man"]["value"] == 1.0 and est["ratio.gender.man"]["method"] == "reference"
    # race: Asian and White tie at 12/12; the first (Asian) is the reference
    assert est["ratio.race.Black"]["value"] == pytest.approx(1 / 12)
    assert est["ratio.race.Hispanic"]["value"] == pytest.approx(7 / 12)
    assert est["ratio.race.White"]["value"] == pytest.approx(1.0)
    assert "0.5 added" in est["ratio.race.Black"]["note"]  # the reference has no "not invited" count
    assert est["lowest.race"]["value"] == pytest.approx(1 / 12)
    assert est["lowest.gender"]["value"] == pytest.approx(13 / 19)
    # intersections: 6 candidates each < min_n 10: reported, never judged
    assert est["ratio.gender+race.woman+Black"]["value"] == 0.0
    assert est["ratio.gender+race.woman+Black"]["ci_low"] == 0.0
    assert "small cell" in est["ratio.gender+race.woman+Hispanic"]["note"]
    assert est["lowest.gender+race"]["value"] is None
    assert est["lowest"]["value"] == pytest.approx(1 / 12) and "by race" in est["lowest"]["note"]
    verdicts = {v["metric"]: v["verdict"] for v in s["verdicts"]}
    assert verdicts["impact.lowest.race"] == "FAIL"
    assert verdicts["impact.lowest.gender"] == "INCONCLUSIVE"  # [0.43, 1.09] straddles 0.8
    [flag] = [f for f in m["validity"] if f["kind"] == "small_cell"]
    assert "ratio.gender+race.woman+Black" in flag["estimates"]
    tables = {t["title"]: t for t in m["tables"]}
    assert list(tables) == ["Impact ratios by gender", "Impact ratios by race", "Impact ratios by gender x race"]
    inter = tables["Impact ratios by gender x race"]
    assert inter["columns"][:6] == ["category", "stimuli", "units", "selected", "selection rate", "impact ratio"]
    row = {r[0]: r for r in inter["rows"]}["woman+Hispanic"]
    assert row[1:5] == [6, 12, 2, pytest.approx(2 / 12)] and row[8] == "small cell"
    assert {r[0]: r for r in tables["Impact ratios by gender"]["rows"]}["woman"][8] == "below 0.8"
    html = (run.parent / "report.html").read_text(encoding="utf-8")
    assert "Impact ratios by gender x race" in html and "four-fifths" in html
    # estimates.csv: per-group rows name their group
    with (run.parent / "estimates.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    by_name = {(r["metric"], r["estimate"]): r for r in rows if not r["cell"]}
    assert by_name[("impact", "ratio.gender+race.woman+Black")]["group"] == "gender+race=woman+Black"
    assert by_name[("impact", "rate.gender.man")]["group"] == "gender=man"
    assert by_name[("invite_rate", "rate.race.Asian")]["group"] == "race=Asian"
    assert by_name[("invite_rate", "contrast.race.Asian-Black")]["group"] == "race=Asian-Black"
    assert by_name[("impact", "lowest")]["group"] == ""
