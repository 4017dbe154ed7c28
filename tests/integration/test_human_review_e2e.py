"""Human review end to end (issue 29, point 3 and acceptance 2) on a real run of the
scripted backend: `biasaudit annotate export` a stratified blind sheet, refuse to
overwrite it, fill it programmatically with known labels, read it back as a `human`
layer paired with the rules layer, and check the report's agreement and PPI interval
against a hand computation; the filled sheet as a `calibrate` control set; a hostile
sheet as one error line at `validate`."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from statsmodels.stats.proportion import proportion_confint

from tests.conftest import isolation, run_dirs
from tests.helpers import spec_and_operator

pytestmark = pytest.mark.slow

SPEC = """
audit: {name: review, method: label_rates}
stimuli:
  inline:
    - {id: a1, group: A, statement: "alpha one"}
    - {id: a2, group: A, statement: "alpha two"}
    - {id: a3, group: A, statement: "alpha three"}
    - {id: a4, group: A, statement: "alpha four"}
    - {id: b1, group: B, statement: "beta one"}
    - {id: b2, group: B, statement: "beta two"}
    - {id: b3, group: B, statement: "beta three"}
    - {id: b4, group: B, statement: "beta four"}
  id_field: id
factors:
  framing:
    ask: {template: "What about {{ statement }}?"}
    tell: {template: "Tell me about {{ statement }}."}
probe: {kind: generate, max_tokens: 20}
model:
  backend: scripted
  name: subject
  script:
    replies: {alpha: "I cannot answer that.", beta: "=HYPERLINK(\\"x\\") sure, here it is."}
judge:
  judges:
    - {name: j1, prompt: "{{ text }}", model: {backend: scripted, name: j1, script: {choices: {"I cannot": R, sure: A}}}}
    - {name: j2, prompt: "Reply: {{ text }}", model: {backend: scripted, name: j1, script: {choices: {"I cannot": R, sure: A}}}}
    - {name: j3, prompt: "{{ text }}", model: {backend: scripted, name: j3, script: {choices: {"": R}}}}
  labels: {refuse: R, answer: A}
coding:
  judged: {coder: judge_panel, labels: [refuse, answer]}
  refusal:
    coder: rules
    labels: [refuse, answer]
    otherwise: answer
    rules:
      - {pattern: "^I cannot", label: refuse}
metrics:
  - {name: label_rate, id: refusal_rate, layer: refusal, labels: [refuse], by: [group]}
"""

HUMAN = """
  human_refusal:
    coder: human
    sheet: review.csv
reliability:
  - pair: [human_refusal, refusal]
  - pair: [human_refusal, judged]
metrics:"""


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _write(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def test_export_fill_import_agreement_and_ppi(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec, ops = spec_and_operator(workdir / "review.yaml", SPEC)
    code, _, err = cli("run", f"spec={spec}", *ops, *isolation(workdir))
    assert code == 0, err
    [run] = run_dirs(workdir)
    sheet = workdir / "review.csv"
    code, out, err = cli("annotate", "export", str(run), "--layer", "refusal", "--n", "8", "--stratify", "group",
                         "-o", str(sheet))
    assert code == 0, err
    assert "8 units; A: 4 of 8, B: 4 of 8" in out
    rows = _rows(sheet)
    assert list(rows[0]) == ["unit_id", "prompt", "answer", "allowed_labels", "label", "note"]  # blind
    assert all(r["label"] == "" and r["allowed_labels"] == "refuse | answer" for r in rows)
    beta = [r for r in rows if "beta" in r["prompt"]]
    assert beta and all(r["answer"].startswith("'=HYPERLINK") for r in beta)  # the formula is defused
    record = json.loads((workdir / "review.csv.sample.json").read_text(encoding="utf-8"))
    assert record["population"] == {"A": 8, "B": 8} and record["sampled"] == {"A": 4, "B": 4}

    # the same draw again is refused (it may hold labels); --force replaces it with the same sheet
    code, _, err = cli("annotate", "export", str(run), "--layer", "refusal", "--n", "8", "--stratify", "group",
                       "-o", str(sheet))
    assert code == 2 and err.count("\n") == 1 and "the sheet exists already" in err and "--force" in err
    code, _, err = cli("annotate", "export", str(run), "--layer", "refusal", "--n", "8", "--stratify", "group",
                       "-o", str(sheet), "--force")
    assert code == 0 and _rows(sheet) == rows
    # with codes: the machine label and rationale, in a jsonl sheet
    code, _, err = cli("annotate", "export", str(run), "--layer", "refusal", "--n", "4", "--with-codes",
                       "-o", str(workdir / "coded.jsonl"))
    assert code == 0, err
    coded = [json.loads(x) for x in (workdir / "coded.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(coded) == 4 and all(r["machine_label"] in ("refuse", "answer") and r["rationale"] for r in coded)
    code, _, err = cli("annotate", "export", str(run), "--layer", "nope", "-o", str(workdir / "x.csv"))
    assert code == 2 and "no coding layer 'nope'" in err and "layers: judged, refusal" in err
    assert not (workdir / "x.csv").exists()

    # people agree with the rules except on one unit per group
    flipped = {"A": False, "B": False}
    for r in rows:
        machine = "refuse" if r["answer"].startswith("I cannot") else "answer"
        group = "A" if "alpha" in r["prompt"] else "B"
        r["label"] = machine
        if not flipped[group]:
            r["label"] = "answer" if machine == "refuse" else "refuse"
            flipped[group] = True
    _write(sheet, rows)
    spec.write_text(spec.read_text(encoding="utf-8").replace("\nmetrics:", HUMAN, 1), encoding="utf-8")
    code, _, err = cli("run", f"spec={spec}", *ops, *isolation(workdir))
    assert code == 0, err
    second = [d for d in run_dirs(workdir) if d != run]
    s = json.loads((second[0] / "summary.json").read_text(encoding="utf-8"))
    g, panel = s["coding"]["gold"]
    assert (panel["layer"], [r["rater"] for r in panel["raters"]]) == ("judged", ["judged", "judged: j1",
                                                                             "judged: j2", "judged: j3"])
    # j1 and j2 say what the rules say (their majority is the panel's); j3 always says refuse
    assert [r["confusion"] for r in panel["raters"]] == [[[3, 1], [1, 3]]] * 3 + [[[4, 0], [4, 0]]]
    assert panel["raters"][3]["accuracy"]["value"] == pytest.approx(0.5)
    # the sheet sampled the rules layer's units: PPI of the panel's rates is undefined, with why
    assert all(r["ppi"]["value"] is None and "sampled the units layer 'refusal' coded" in r["ppi"]["note"]
               for r in panel["rates"])
    assert (g["population"], g["sampled"], g["annotated"], g["blank"], g["stratify"]) == (16, 8, 8, 0, "group")
    [rater] = g["raters"]
    # 6 of 8 agree; humans and rules each say refuse 4 times: pe = 1/2, kappa = (3/4 - 1/2) / (1/2)
    assert rater["accuracy"]["value"] == pytest.approx(0.75) and rater["kappa"]["value"] == pytest.approx(0.5)
    assert rater["confusion"] == [[3, 1], [1, 3]]
    refuse = next(r for r in g["rates"] if r["label"] == "refuse")
    # 4 of the 8 human labels say refuse: too few of each kind for PPI's normal
    # approximation (stats/ppi.py MIN_EACH = 5), so the humans-only rate stands in its
    # place, with the reason. Group A: people say refuse on 3 of its 4 labelled units, group
    # B on 1 of 4; strata weigh 8/16 each: theta = 1/2, var = 2 (1/2)^2 (3/16 * 4/3) / 4 =
    # 1/32, so the effective n is (1/4) / (1/32) = 8: Wilson's interval for 4 of 8
    lo, hi = proportion_confint(4, 8, method="wilson")
    assert refuse["ppi"]["value"] == pytest.approx(0.5) and refuse["ppi"]["method"] == "wilson-stratified"
    assert refuse["ppi"]["note"].startswith("PPI not used: 4 of the 8 human labels give the label")
    assert (refuse["ppi"]["ci_low"], refuse["ppi"]["ci_high"]) == pytest.approx((lo, hi))
    assert refuse["human"] == {**refuse["ppi"], "note": refuse["human"]["note"]}
    assert refuse["judge"]["value"] == pytest.approx(0.5)
    html = (second[0] / "report.html").read_text(encoding="utf-8")
    assert "Human review: <code>refusal</code> against <code>human_refusal</code>" in html
    assert "Prediction-powered (PPI)" in (second[0] / "report.md").read_text(encoding="utf-8")

    # the self-test's oracle answers have no human labels: the human layer stands aside
    code, out, err = cli("selftest", f"spec={spec}", *ops, *isolation(workdir))
    assert "another run" not in err + out and "Traceback" not in err and "no thresholds" in out
    # a run of another model is refused before any model call or folder
    code, _, err = cli("run", f"spec={spec}", *ops, *isolation(workdir), "model.script.replies.alpha=No.")
    assert code == 2 and "the sheet was sampled from another run" in err and "asks another request" in err
    assert len(run_dirs(workdir)) == 2

    # the filled sheet is a control set for `calibrate` (its answers read back unquoted)
    spec.write_text(spec.read_text(encoding="utf-8").replace(
        "    otherwise: answer\n", "    otherwise: answer\n    calibration: {source: review.csv, text: answer, gold: label}\n",
        1), encoding="utf-8")
    code, out, err = cli("calibrate", f"spec={spec}", *ops, *isolation(workdir), "--layer", "refusal")
    assert code == 0, err
    assert "(8 labelled responses)" in out and "refusal" in out and " 0.750 " in out
    assert "confusion (rows: gold, columns: rater; order answer/refuse): answer: 3 1; refuse: 1 3" in out

    # a hostile sheet: one error line naming the file and the row, exit 2
    rows[2]["label"] = "maybe"
    _write(sheet, rows)
    code, _, err = cli("validate", f"spec={spec}", *ops, *isolation(workdir))
    assert code == 2 and err.count("\n") == 1
    assert str(sheet) in err and "row 3: label 'maybe' is not one of the allowed labels" in err
