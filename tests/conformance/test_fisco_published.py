"""FiSCo against the authors' own published results (issue 37, acceptance 3).

Every published folder of HuXiangkun/FiSCo (commit d33ee24, files listed with their SHA-256
in specs/data/fisco/provenance.json) is replayed through the generic spec engine exactly
as `biasaudit run spec=... model=replay model.responses=<labels file>` does (no model is
loaded; the spec is written from the file by `biasaudit.methods.fisco.published`), and its
per-question t and p are compared with:

- the published ttest.json: `dataset/<model>/<task>` was written by the authors'
  checking.py `eval_bias_ttest` at fe7b9ce (each direction's mean label score, the two
  means divided again by the number of labels: `normalisation: authors`); the
  tiny_dataset case2 / case3 files by their earlier code at bbd6746, which summed the
  label scores and divided once: the paper's equation 1, biasaudit's default;
- an independent computation written here from the raw labels: similarities by the
  paper's equation (single normalisation) and by the authors' (double), groups from each
  entry's recorded group field, Welch's t from scipy.stats.ttest_ind(intra, inter,
  equal_var=False), the sign of the authors' code.

Label scores are the authors' (`label_mapping` in checking.py: Contradiction 0, Neutral
0.5, Entailment 1). The authors' files carry no licence, so they are not in the
repository: fetched into specs/data/fisco/ (see provenance.json) they are checked
against their digests and used; absent, these tests skip, unless
BIASAUDIT_REQUIRE_PUBLISHED_DATA=1 (CI with the data fetched), which makes a missing or
altered file a failure. A folder dropped into specs/data/fisco/ that provenance.json does
not list (a held-out folder) is replayed too, without a digest check."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as st

from biasaudit.errors import DataError
from biasaudit.methods.fisco.published import LABEL_FILES, spec_for
from tests.conftest import isolation, run_dirs
from tests.helpers import read_jsonl

CONFORMANCE = [
    {"check": "FiSCo dataset/<model>/<task> replay: per-question t and p equal the published ttest.json "
              "(normalisation: authors), every published folder",
     "source": "HuXiangkun/FiSCo d33ee24 dataset/*/*/ttest.json, written by checking.py eval_bias_ttest at fe7b9ce",
     "tolerance": "1e-6"},
    {"check": "FiSCo tiny_dataset case2, case3 replay: t and p equal the published ttest.json (default, "
              "the paper's single normalisation)",
     "source": "HuXiangkun/FiSCo d33ee24 tiny_dataset/case*/ttest.json, written by checking.py eval_bias_ttest at bbd6746",
     "tolerance": "1e-6"},
    {"check": "FiSCo replay of every published labels file: t and p equal Welch's test on similarities computed "
              "from the raw labels (single and double normalisation)",
     "source": "scipy.stats.ttest_ind(equal_var=False) on the authors' labels, similarities written in the test",
     "tolerance": "1e-6"},
]

DATA = Path(__file__).resolve().parents[2] / "specs" / "data" / "fisco"
REQUIRE = os.environ.get("BIASAUDIT_REQUIRE_PUBLISHED_DATA") == "1"
SCORE = {"Contradiction": 0.0, "Neutral": 0.5, "Entailment": 1.0}
GROUP_FIELDS = ("group", "type", "gender", "race")


def _provenance() -> dict[str, Any]:
    return json.loads((DATA / "provenance.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _listed() -> set[str]:
    """The folders provenance.json lists a labels file for."""
    return {str(Path(f["path"]).parent) for f in _provenance()["unobtained"] if Path(f["path"]).name in LABEL_FILES}


def _folders() -> list[str]:
    """Every folder provenance.json lists a labels file for, and any other folder on disk with one."""
    listed = _listed()
    found = {str(p.parent.relative_to(DATA)) for name in LABEL_FILES for p in DATA.rglob(name)}
    return sorted(listed | found)


def _missing(why: str) -> None:
    if REQUIRE:
        pytest.fail(why)
    pytest.skip(why)


def _checked(folder: str) -> Path:
    """The folder, its files compared with the digests in provenance.json."""
    for f in _provenance()["unobtained"]:
        if str(Path(f["path"]).parent) != folder:
            continue
        path = DATA / f["path"]
        if not path.is_file():
            _missing(f"{path} is not here: the authors' files carry no licence and are not shipped; fetch "
                     f"{f['url']} (sha256 {f['sha256']})")
        assert hashlib.sha256(path.read_bytes()).hexdigest() == f["sha256"], f"{path} differs from the published file"
    return DATA / folder


# -- the independent computation --------------------------------------------------------------------
def _records(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Record (question) id -> its answers, from the folder's labelled file."""
    name = next(n for n in LABEL_FILES if (folder / n).is_file())
    data = json.loads((folder / name).read_text(encoding="utf-8"))
    return {rid: rec["other_attributes"] for rid, rec in data.items()}


def _checks(attrs: list[dict[str, Any]], x: int, y: int) -> list[str]:
    """The labels of answer x's claims checked against answer y. The authors' dataset/ files
    are claim-major (entry x: labels[c][y]); their tiny_dataset answer-major (entry y: labels[x][c])."""
    n = len(attrs)
    if all(len(a["labels"]) == len(a["claims"]) and all(len(r) == n for r in a["labels"]) for a in attrs):
        return [row[y] for row in attrs[x]["labels"]]
    assert all(len(a["labels"]) == n and [len(r) for r in a["labels"]] == [len(b["claims"]) for b in attrs]
               for a in attrs)
    return list(attrs[y]["labels"][x])


def _single(a: list[str], b: list[str]) -> float:
    both = a + b
    return sum(SCORE[x] for x in both) / len(both)


def _double(a: list[str], b: list[str]) -> float:
    means = [sum(SCORE[x] for x in d) / len(d) for d in (a, b) if d]
    return sum(means) / (len(a) + len(b))


def independent(attrs: list[dict[str, Any]], normalisation: str) -> tuple[float, float] | None:
    """Welch's t and p of one question's intra- against inter-group similarities, from its
    raw labels; None with fewer than two groups."""
    field = next(f for f in GROUP_FIELDS if all(f in a for a in attrs))
    groups = sorted({a[field] for a in attrs})
    if len(groups) != 2:
        return None
    sim = _single if normalisation == "paper" else _double

    def s(x: int, y: int) -> float:
        return sim(_checks(attrs, x, y), _checks(attrs, y, x))

    members = [[i for i, a in enumerate(attrs) if a[field] == g] for g in groups]
    intra = [s(x, y) for m in members for x, y in itertools.combinations(m, 2)]
    inter = [s(x, y) for x in members[0] for y in members[1]]
    r = st.ttest_ind(intra, inter, equal_var=False)
    return float(r.statistic), float(r.pvalue)


# -- the replay -------------------------------------------------------------------------------------
def replay(folder: Path, workdir: Path, cli: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """Metric id -> question id -> its row, from `biasaudit run` with the replay backend."""
    spec = workdir / "published.yaml"
    try:
        spec.write_text(spec_for(folder), encoding="utf-8")
    except DataError as exc:
        if str(folder.relative_to(DATA)) in _listed():
            raise
        # a folder dropped in beside the published ones whose records cannot share one spec
        # (e.g. the authors' withdrawn LLaMA1/age, whose record 0 lists Jamal twice as young)
        pytest.skip(f"not replayable with one spec: {exc}")
    labels = next(folder / n for n in LABEL_FILES if (folder / n).is_file())
    code, out, err = cli("run", f"spec={spec}", "model=replay", f"model.responses={labels}", *isolation(workdir))
    assert code in (0, 1, 3), err  # a verdict, not an error
    [d] = run_dirs(workdir)
    s = json.loads((d / "summary.json").read_text())
    assert s["execution"]["coding_calls"] == 0 and s["execution"]["failures"] == 0
    trail = read_jsonl(d / "responses.jsonl")
    assert len(trail) == sum(len(a) for a in _records(folder).values())  # every recorded answer asked for once
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for mid in ("fisco", "fisco_authors"):
        table = next(t for t in s["metrics"][mid]["tables"] if t["title"].startswith("Per question"))
        rows[mid] = {str(r[0]): dict(zip(table["columns"], r, strict=True)) for r in table["rows"]}
    return rows


def _close(row: dict[str, Any], t: float, p: float) -> None:
    assert row["t"] == pytest.approx(t, rel=1e-6, abs=1e-6)
    assert row["p (Holm)"] == pytest.approx(p, rel=1e-6, abs=1e-12)


def _slow(folder: str) -> Any:
    """Folders of many answers (tiny_dataset case2: 20) run in the full suite only."""
    return pytest.param(folder, marks=pytest.mark.slow) if folder.endswith("case2") else folder


@pytest.mark.parametrize("folder", [_slow(f) for f in _folders()])
def test_replay_equals_the_published_ttest_and_the_labels(folder: str, workdir: Path, cli: Any) -> None:
    path = _checked(folder)
    rows = replay(path, workdir, cli)
    published_file = path / "ttest.json"
    published = json.loads(published_file.read_text(encoding="utf-8")) if published_file.exists() else {}
    for rid, attrs in _records(path).items():
        paper, authors = independent(attrs, "paper"), independent(attrs, "authors")
        if paper is None or authors is None:  # one group (tiny_dataset case1, case4): nothing to test
            assert rows["fisco"][rid]["t"] is None and rows["fisco_authors"][rid]["t"] is None
            assert rid not in published
            continue
        _close(rows["fisco"][rid], *paper)
        _close(rows["fisco_authors"][rid], *authors)
        if rid not in published:
            continue
        pub = published[rid]
        # dataset/ was scored by the authors' 2025 code (double normalisation), tiny_dataset by their 2024 code (single)
        which = "fisco_authors" if folder.startswith("dataset/") else "fisco"
        _close(rows[which][rid], pub["t-value"], pub["p-value"])
        other = rows["fisco" if which == "fisco_authors" else "fisco_authors"][rid]["t"]
        assert abs(other - pub["t-value"]) > 1e-3  # the normalisation is what makes the published number
    assert set(published) <= set(_records(path))  # every published t has its question here


def test_the_groups_are_the_halves_the_authors_split_by_position() -> None:
    """The authors' get_groups takes the first half of the answers as one group and the
    second half as the other; biasaudit reads each entry's group field. In every published
    file the two agree, so the published t is about the groups the files record."""
    folders = [f for f in _folders() if (DATA / f).is_dir()] or _missing("no published folder is here")
    for folder in folders:
        path = _checked(folder)
        if not (path / "ttest.json").exists():
            continue  # no published t to be about
        for attrs in _records(path).values():
            field = next(f for f in GROUP_FIELDS if all(f in a for a in attrs))
            h = len(attrs) // 2
            firsts, seconds = {a[field] for a in attrs[:h]}, {a[field] for a in attrs[h:]}
            assert len(firsts) == len(seconds) == 1 and firsts != seconds, folder


def test_mistral_age_before_and_after() -> None:
    """Issue 38 item 3: main read both levels of each name from the young entry (t -1.727);
    from the labels, t is -0.373 by the paper's equation and -0.1176 by the authors'."""
    [attrs] = _records(_checked("dataset/Mistral/age")).values()
    t_paper, _ = independent(attrs, "paper") or (np.nan, np.nan)
    t_authors, _ = independent(attrs, "authors") or (np.nan, np.nan)
    assert round(t_paper, 3) == -0.373 and round(t_authors, 4) == -0.1176
