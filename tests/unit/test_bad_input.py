"""The bad-input catalogue (issue 11): each malformed input gives one line naming the
file, the key path and a hint, exit code 2, and nothing written (no run folder, no
store). Cases already covered in test_cli_errors.py (unknown key, undefined factor and
level, template variable without a source, missing file, missing csv column, unknown
model config or spec, override of a missing key, `${oc.env:...}`) are not repeated."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import isolation
from tests.helpers import tp_spec, write_spec
from tests.unit.test_cli_errors import assert_clean_failure

Case = Callable[[Path], tuple[list[str], list[str]]]
"""workdir -> (command-line arguments after `run`, strings the error line must contain)."""

BASE = """
audit: {name: t, method: token_probability}
stimuli: {source: pairs.csv, format: crows_pairs}
probe:
  kind: sequence_logprob
  inputs: {more: "{{ more }}", less: "{{ less }}"}
metrics:
  - {name: bias_score, mode: ar_full}
"""


def spec_with(workdir: Path, body: str, name: str = "bad.yaml") -> Path:
    tp_spec(workdir, 4)  # writes pairs.csv
    return write_spec(workdir / name, body)


def yaml_syntax_error(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, "audit: {name: t, method: x}\nstimuli: {source: pairs.csv\nprobe: {kind: generate}\n")
    return [f"spec={spec}"], [str(spec), "YAML syntax error at line 3, column 6"]


def yaml_not_a_mapping(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, "- audit\n- stimuli\n")
    return [f"spec={spec}"], [str(spec), "(root)", "must be a mapping"]


def wrong_type(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE.replace("kind: sequence_logprob", "kind: sequence_logprob\n  samples: many"))
    return [f"spec={spec}"], [str(spec), "probe.samples", "(got 'many')", "expected a whole number"]


def wrong_type_of_section(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE.replace("metrics:\n  - {name: bias_score, mode: ar_full}", "metrics: bias_score"))
    return [f"spec={spec}"], [str(spec), "metrics", "valid list", "expected a list of mappings"]


def misspelt_choice(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE.replace("mode: ar_full", "mode: ar_fool"))
    return [f"spec={spec}"], [str(spec), "metrics[0].mode", "did you mean 'ar_full'"]


def unknown_metric_option(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE.replace("mode: ar_full", "mood: ar_full"))
    return [f"spec={spec}"], [str(spec), "metrics[0].mood", "did you mean 'mode'"]


def duplicate_level_name(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE + "factors:\n  frame:\n    plain: {vars: {p: ''}}\n    plain: {vars: {p: 'x'}}\n")
    return [f"spec={spec}"], [str(spec), "factors.frame.plain", "duplicate key 'plain' (line 12, column 5; first at line 11)"]


def duplicate_level_in_sub_grid(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE + "factors:\n  frame: {a: {}, b: {}}\ndesign: {kind: fractional, levels: {frame: [a, b, a]}}\n")
    return [f"spec={spec}"], [str(spec), "design.levels.frame[2]", "listed twice"]


def duplicate_explicit_cell(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE + "factors:\n  frame: {a: {}, b: {}}\ndesign: {kind: explicit, cells: [{frame: a}, {frame: a}]}\n")
    return [f"spec={spec}"], [str(spec), "design.cells[1]", "listed twice"]


def zero_cells(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE + "factors:\n  frame: {a: {}, b: {}}\ndesign: {kind: fractional, levels: {frame: []}}\n")
    return [f"spec={spec}"], [str(spec), "design.levels.frame", "zero cells"]


def undefined_threshold_metric(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE + "thresholds:\n  - {metric: nli_bias.m6, max: 60}\n")
    return [f"spec={spec}"], [str(spec), "thresholds[0].metric", "'nli_bias'", "metrics: bias_score"]


def empty_after_filter(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE.replace("format: crows_pairs}", "format: crows_pairs, where: {bias_type: [astrology]}}"))
    return [f"spec={spec}"], [str(w / "pairs.csv"), "stimuli.where.bias_type", "no stimuli left", "values of bias_type"]


def filter_on_missing_field(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE.replace("format: crows_pairs}", "format: crows_pairs, where: {colour: [red]}}"))
    return [f"spec={spec}"], [str(w / "pairs.csv"), "stimuli.where.colour", "fields: bias_type"]


def empty_data_file(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE)
    (w / "pairs.csv").write_text(",sent_more,sent_less,stereo_antistereo,bias_type\n", encoding="utf-8")
    return [f"spec={spec}"], [str(w / "pairs.csv"), "stimuli", "no stimuli to run"]


def non_utf8_data(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE)
    data = w / "pairs.csv"
    data.write_bytes(data.read_bytes().replace(b"He", "H\u00e9".encode("latin-1"), 1))
    return [f"spec={spec}"], [str(data), "stimuli.source", "not UTF-8", "UTF-8"]


def non_utf8_spec(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE)
    spec.write_bytes(spec.read_bytes().replace(b"name: t", "name: t, description: caf\u00e9".encode("latin-1")))
    return [f"spec={spec}"], [str(spec), "not UTF-8 text (invalid byte on line 2)"]


def ragged_csv(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE)
    data = w / "pairs.csv"
    lines = data.read_text(encoding="utf-8").splitlines()
    lines[2] += ",extra"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [f"spec={spec}"], [str(data), "stimuli.source", "line 3 has 9 fields, the header has 8"]


def jsonl_bad_line(w: Path) -> tuple[list[str], list[str]]:
    data = w / "pairs.jsonl"
    data.write_text('{"more": "A.", "less": "B."}\n{"more": "C.", "less": \n', encoding="utf-8")
    spec = write_spec(w / "j.yaml", BASE.replace("{source: pairs.csv, format: crows_pairs}",
                                                 "{source: pairs.jsonl, format: jsonl}"))
    return [f"spec={spec}"], [str(data), "stimuli.source", "line 2 is not valid JSON"]


def jinja_syntax_error(w: Path) -> tuple[list[str], list[str]]:
    spec = spec_with(w, BASE.replace('less: "{{ less }}"', 'less: "{{ less }"'))
    return [f"spec={spec}"], [str(spec), "probe.inputs.less", "template syntax error"]


def probe_kind_the_backend_lacks(w: Path) -> tuple[list[str], list[str]]:
    return ["spec=crows_pairs_mlm", "model=openai_compat"], [
        "conf/model/openai_compat.yaml", "probe.kind", "cannot give pseudo_loglik", "use a local masked LM"]


def nli_by_a_model_without_label_logprobs(w: Path) -> tuple[list[str], list[str]]:
    return ["spec=winoqueer_nli", "model=scripted"], ["conf/model/scripted.yaml", "model.backend", "llm_nli needs"]


def conflicting_values(w: Path) -> tuple[list[str], list[str]]:
    return ["runtime.seed=1", "runtime.seed=2"], ["command line", "runtime.seed", "conflicting overrides"]


def conflicting_group_choices(w: Path) -> tuple[list[str], list[str]]:
    return ["model=scripted", "model=smollm2"], ["command line", "model", "'model=scripted' and 'model=smollm2'"]


CASES: list[Case] = [
    yaml_syntax_error, yaml_not_a_mapping, wrong_type, wrong_type_of_section, misspelt_choice,
    unknown_metric_option, duplicate_level_name, duplicate_level_in_sub_grid, duplicate_explicit_cell, zero_cells,
    undefined_threshold_metric, empty_after_filter, filter_on_missing_field, empty_data_file, non_utf8_data,
    non_utf8_spec, ragged_csv, jsonl_bad_line, jinja_syntax_error, probe_kind_the_backend_lacks,
    nli_by_a_model_without_label_logprobs, conflicting_values, conflicting_group_choices,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_bad_input_is_one_line_exit_2_nothing_written(case: Case, workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    args, must = case(workdir)
    assert_clean_failure(cli("run", *args, *isolation(workdir)), workdir, *must)


def test_where_keeps_matching_stimuli(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    tp_spec(workdir, 40)
    spec = write_spec(workdir / "where.yaml", BASE.replace("format: crows_pairs}", "format: crows_pairs, where: {bias_type: [gender]}}"))
    code, out, err = cli("validate", f"spec={spec}", "model=scripted")
    from biasaudit.data.readers import read_csv

    _, rows = read_csv(workdir / "pairs.csv")
    n = sum(r["bias_type"] == "gender" for r in rows)
    assert 0 < n < len(rows)
    assert code == 0 and f"{n} stimuli, {2 * n} requests" in out, err
