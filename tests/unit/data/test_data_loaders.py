"""Stimulus loaders and published-format adapters."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from biasaudit.data import load_stimuli
from biasaudit.errors import DataError
from biasaudit.spec import StimuliSpec

CROWS_HEADER = ["", "sent_more", "sent_less", "stereo_antistereo", "bias_type", "annotations", "anon_writer", "anon_annotators"]


def write_crows(path: Path, n: int) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(CROWS_HEADER)
        for i in range(n):
            w.writerow([i, f"More {i}, with comma.", f"Less {i}.", "stereo" if i % 3 else "antistereo",
                        "gender", "[['gender']]", "a0", "['a1']"])
    return path


def test_crows_adapter_maps_published_columns(tmp_path: Path) -> None:
    f = write_crows(tmp_path / "c.csv", 6)
    s = load_stimuli(StimuliSpec(source=str(f), format="crows_pairs"), None)
    assert len(s.stimuli) == 6
    first = s.stimuli[0]
    assert first.id == "0"
    assert first.fields == {"more": "More 0, with comma.", "less": "Less 0.", "direction": "antistereo", "bias_type": "gender"}
    assert s.sha256 and len(s.sha256) == 64


def test_crows_missing_column_is_named(tmp_path: Path) -> None:
    f = tmp_path / "bad.csv"
    f.write_text(",sent_more,sent_less,bias_type\n0,a,b,gender\n", encoding="utf-8")
    with pytest.raises(DataError) as ei:
        load_stimuli(StimuliSpec(source=str(f), format="crows_pairs"), None)
    msg = ei.value.one_line()
    assert str(f) in msg and "stereo_antistereo" in msg and "stimuli.format" in msg


def test_missing_file_is_relative_to_spec(tmp_path: Path) -> None:
    spec = tmp_path / "specs" / "a.yaml"
    spec.parent.mkdir()
    with pytest.raises(DataError) as ei:
        load_stimuli(StimuliSpec(source="data/none.csv", format="crows_pairs"), spec)
    assert str(tmp_path / "specs" / "data" / "none.csv") in ei.value.one_line()
    assert ei.value.key == "stimuli.source"


def test_winoqueer_adapter(tmp_path: Path) -> None:
    f = tmp_path / "wq.csv"
    f.write_text(",Gender_ID_x,Gender_ID_y,sent_x,sent_y\n0,Lesbian,Straight,Lesbians are x.,Straight women are x.\n", encoding="utf-8")
    s = load_stimuli(StimuliSpec(source=str(f), format="winoqueer"), None)
    assert s.stimuli[0].fields["more"] == "Lesbians are x."
    assert s.stimuli[0].fields["less"] == "Straight women are x."
    assert s.stimuli[0].fields["group"] == "Lesbian"


def test_seeded_sample_is_reproducible_and_subset(tmp_path: Path) -> None:
    f = write_crows(tmp_path / "c.csv", 30)
    spec = StimuliSpec(source=str(f), format="crows_pairs", sample={"n": 7, "seed": 3})
    a = [s.id for s in load_stimuli(spec, None).stimuli]
    b = [s.id for s in load_stimuli(spec, None).stimuli]
    c = [s.id for s in load_stimuli(StimuliSpec(source=str(f), format="crows_pairs", sample={"n": 7, "seed": 4}), None).stimuli]
    assert a == b and len(a) == 7 and a != c
    assert set(a) <= {str(i) for i in range(30)}


def test_ragged_csv_names_line(tmp_path: Path) -> None:
    f = tmp_path / "r.csv"
    f.write_text("a,b\n1,2\n3\n", encoding="utf-8")
    with pytest.raises(DataError) as ei:
        load_stimuli(StimuliSpec(source=str(f), format="csv"), None)
    assert "line 3" in ei.value.one_line()


def test_csv_fields_mapping(tmp_path: Path) -> None:
    f = tmp_path / "m.csv"
    f.write_text("x,y\nhello,world\n", encoding="utf-8")
    s = load_stimuli(StimuliSpec(source=str(f), format="csv", fields={"more": "x", "less": "y"}), None)
    assert s.stimuli[0].fields["more"] == "hello" and s.stimuli[0].fields["less"] == "world"


def test_clear_bias_adapter(tmp_path: Path) -> None:
    f = tmp_path / "cb.csv"
    f.write_text("BIAS CATEGORY,STEREOTYPE,COUNTER-STEREOTYPE,PROMPT\n"
                 "gender,stay home,go to work,\"Who should stay home with the kids, the mother or the father?\"\n", encoding="utf-8")
    s = load_stimuli(StimuliSpec(source=str(f), format="clear_bias"), None).stimuli[0]
    assert s.fields == {"category": "gender", "stereotype_option": "stay home", "counter_option": "go to work",
                        "statement": "Who should stay home with the kids, the mother or the father?"}
