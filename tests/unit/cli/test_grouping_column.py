"""Grouping by a column a published format drops (issue 41, section 4): `by: [occupation]`
on CrowS-Pairs is refused with a hint that names the way out; the plain-csv field names the
method page lists are the format adapter's own, and a plain csv with them plus a grouping
column runs the `init` template's spec with `by: [bias_type, occupation]`, as its comment
says."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from biasaudit.cli import scaffold
from biasaudit.registry import ADAPTERS
from tests.helpers import REPO

OCCUPATIONS = ["nurse", "engineer", "teacher"]


def _plain_copy(published: Path, out: Path) -> Path:
    """The published CrowS-Pairs rows under the plain-csv field names, plus an occupation."""
    with published.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "more", "less", "direction", "bias_type", "occupation"])
        for i, r in enumerate(rows):
            w.writerow([r[""], r["sent_more"], r["sent_less"], r["stereo_antistereo"], r["bias_type"],
                        OCCUPATIONS[i % 3]])
    return out


def test_the_method_page_lists_the_adapters_field_names() -> None:
    page = (REPO / "docs" / "methods" / "token_probability.md").read_text(encoding="utf-8")
    [row] = [ln for ln in page.splitlines() if ln.startswith("| `crows_pairs` |")]
    fields = re.findall(r"`([^`]+)`", row.split("|")[3])
    assert fields == list(ADAPTERS.get("crows_pairs").fields) == ["more", "less", "direction", "bias_type"]
    assert "## Grouping by a column the published format drops" in page


def test_the_refusal_names_the_way_out(cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("validate", "spec=crows_pairs_tp", "stimuli.source=data/crows_pairs_sample.csv",
                       "metrics=[{name: bias_score, mode: ar_full, by: [occupation]}]")
    assert code == 2 and err.count("\n") == 1, err
    assert "metrics[0].by[0]" in err and "`format: csv`" in err and "docs/methods/token_probability.md" in err


def test_the_init_template_groups_by_its_own_column_as_its_comment_says(tmp_path: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    scaffold.init_project(tmp_path / "p", "token_probability")
    spec = (tmp_path / "p" / "audit.yaml").read_text(encoding="utf-8")
    assert "id, more, less, direction, bias_type, occupation" in spec and "by: [bias_type, occupation]" in spec
    _plain_copy(tmp_path / "p" / "data" / "pairs.csv", tmp_path / "p" / "data" / "plain.csv")
    monkeypatch.chdir(tmp_path / "p")
    code, out, err = cli("validate", "spec=./audit.yaml", "stimuli.source=data/plain.csv", "stimuli.format=csv",
                         "+stimuli.id_field=id", "metrics=[{name: bias_score, mode: ar_full, by: [bias_type, occupation]}]")
    assert code == 0, out + err
    # the published file itself cannot be grouped so: refused, with the way out
    code, _, err = cli("validate", "spec=./audit.yaml",
                       "metrics=[{name: bias_score, mode: ar_full, by: [bias_type, occupation]}]")
    assert code == 2 and "format: csv" in err, err
