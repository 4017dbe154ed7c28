"""Values of another type are refused, not coerced (issue 26, low): `"3"`, `3.0` or `true`
for a whole number, `"0.5"` for a number, `1` or `"true"` for true/false, in a spec file,
a metric's parameters, a coding layer's options or a suite file; YAML 1.1's `yes`/`no`/
`on`/`off` (read as true/false) and base-60 numbers (`1:30` is 5400) in a spec file are
refused with how to write them. Before, each was silently taken (`max_rows: yes` was 1).
A whole number for a number stays fine, and command-line overrides arrive typed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import isolation
from tests.helpers import write_spec
from tests.unit.cli.test_cli_errors import assert_clean_failure
from tests.unit.hostile._cases import BASE, error_lines, spec_with

KIND = "kind: sequence_logprob"

# (old, new or "" to append `new`, key path, what the line must hold)
COERCED: dict[str, tuple[str, str, str, str]] = {
    "string for a count": (KIND, KIND + "\n  samples: '3'", "probe.samples", "(got '3')"),
    "fraction-free float for a count": (KIND, KIND + "\n  samples: 3.0", "probe.samples", "(got 3.0)"),
    "true for a count": ("", "report: {max_rows: true}\n", "report.max_rows", "(got True)"),
    "string for a number": (KIND, KIND + "\n  temperature: '0.5'", "probe.temperature", "(got '0.5')"),
    "string for a share": ("", "validity: {min_valid_share: '0.5'}\n", "validity.min_valid_share", "(got '0.5')"),
    "string for a threshold": ("", "thresholds:\n  - {metric: bias_score, max: '60'}\n", "thresholds[0].max",
                               "(got '60')"),
    "1 for true/false": ("", "thresholds:\n  - {metric: bias_score, max: 60, sanity: 1}\n", "thresholds[0].sanity",
                         "(got 1)"),
    "string 'true' for true/false": ("", "thresholds:\n  - {metric: bias_score, max: 60, sanity: 'true'}\n",
                                     "thresholds[0].sanity", "(got 'true')"),
    "string for a sample size": ("format: crows_pairs}", "format: crows_pairs, sample: {n: '2'}}", "stimuli.sample.n",
                                 "(got '2')"),
    "float for a seed": ("format: crows_pairs}", "format: crows_pairs, sample: {n: 2, seed: 1.0}}",
                         "stimuli.sample.seed", "(got 1.0)"),
    "negative seed": ("format: crows_pairs}", "format: crows_pairs, sample: {n: 2, seed: -1}}",
                      "stimuli.sample.seed", "greater than or equal to 0"),
    "string for a metric parameter": ("mode: ar_full", "mode: ar_full, decimals: '3'", "metrics[0].decimals",
                                      "(got '3')"),
    "float for a metric parameter": ("mode: ar_full", "mode: ar_full, decimals: 3.0", "metrics[0].decimals",
                                     "(got 3.0)"),
    "yes for true/false": ("", "thresholds:\n  - {metric: bias_score, max: 60, sanity: yes}\n",
                           "thresholds[0].sanity", "'yes' is read as True by YAML 1.1"),
    "off for true/false": ("", "thresholds:\n  - {metric: bias_score, max: 60, sanity: off}\n",
                           "thresholds[0].sanity", "'off' is read as False by YAML 1.1"),
    "yes for a count": ("", "report: {max_rows: yes}\n", "report.max_rows", "'yes' is read as True"),
    "On as a title": ("", "report: {title: On}\n", "report.title", "quote it ('On') for text"),
    "No as a level name": ("", "factors:\n  f:\n    No: {}\n    b: {}\n", "factors.f.No", "'No' is read as False"),
    "base-60 count": ("", "report: {max_rows: 1:30}\n", "report.max_rows", "base-60 number"),
    "base-60 title": ("", "report: {title: 12:30:00}\n", "report.title", "quote it ('12:30:00')"),
}


@pytest.mark.parametrize("name", list(COERCED))
def test_a_value_of_another_type_is_refused(workdir: Path, cli, name: str) -> None:  # type: ignore[no-untyped-def]
    old, new, key, shown = COERCED[name]
    spec = spec_with(workdir, new) if not old else spec_with(workdir, replace=(old, new))
    line = assert_clean_failure(cli("run", f"spec={spec}", "model=scripted", *isolation(workdir)), workdir,
                                str(spec), key, shown)
    assert "Traceback" not in line


CODER = """
coding:
  r: {coder: rules, labels: [x, y], otherwise: y, rules: [{keywords: [a], label: x}], OPTION}
"""


def test_a_coding_layer_option_of_another_type_is_refused(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    body = BASE.replace(KIND, "kind: generate\n  prompt: '{{ more }}'").replace(
        "  - {name: bias_score, mode: ar_full}", "  - {name: label_rate, layer: r, labels: [x]}")
    spec = spec_with(workdir, replace=(BASE, body + CODER.replace("OPTION", "expect_dominant: 'true'")))
    assert_clean_failure(cli("run", f"spec={spec}", "model=scripted", *isolation(workdir)), workdir,
                         str(spec), "coding.r.expect_dominant", "(got 'true')")


@pytest.mark.parametrize("value,shown", [("1", "(got 1)"), ("'true'", "(got 'true')"),
                                         ("yes", "'yes' is read as True by YAML 1.1")])
def test_a_suite_value_of_another_type_is_refused(workdir: Path, cli, value: str, shown: str) -> None:  # type: ignore[no-untyped-def]
    member = spec_with(workdir)
    suite = write_spec(workdir / "suite.yaml",
                       f"suite:\n  name: s\n  members:\n    - {{spec: {member}, sanity: {value}}}\n")
    code, out, err = cli("validate", f"spec={suite}")
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"error: {suite}: suite.members[0].sanity: ") and shown in lines[0], lines[0]


# What stays accepted: a whole number for a number, quoted words, typed overrides.
ACCEPTED_SPECS = {
    "whole number for a number": (KIND, KIND + "\n  temperature: 0"),
    "whole number for a share": ("", "validity: {min_valid_share: 0, max_failed_share: 1}\n"),
    "whole number threshold": ("", "thresholds:\n  - {metric: bias_score, min: 0, max: 100}\n"),
    "quoted yes as text": ("", "report: {title: 'yes'}\n"),
    "quoted time as text": ("", "report: {title: '12:30'}\n"),
    "true and false": ("", "thresholds:\n  - {metric: bias_score, max: 60, sanity: true}\n"),
    "True as YAML writes it": ("", "thresholds:\n  - {metric: bias_score, max: 60, sanity: True}\n"),
    "hex count": ("", "report: {max_rows: 0x10}\n"),
    "underscores in a count": ("", "report: {max_rows: 1_000}\n"),
    "a yes/no word in a block scalar": ("", "report:\n  title: |\n    yes\n"),
}


@pytest.mark.parametrize("name", list(ACCEPTED_SPECS))
def test_what_the_schema_takes_is_accepted(workdir: Path, cli, name: str) -> None:  # type: ignore[no-untyped-def]
    old, new = ACCEPTED_SPECS[name]
    spec = spec_with(workdir, new) if not old else spec_with(workdir, replace=(old, new))
    code, out, err = cli("validate", f"spec={spec}")
    assert code == 0, err


@pytest.mark.parametrize("override", ["runtime.batch_size=8", "validity.min_valid_share=0", "runtime.progress=false",
                                      "runtime.limits.template_seconds=1", "runtime.threads=null", "report.max_rows=3",
                                      "runtime.gpu_memory_fraction=0.5", "+stimuli.sample={n: 2, seed: 3}"])
def test_typed_overrides_still_work(workdir: Path, cli, override: str) -> None:  # type: ignore[no-untyped-def]
    spec = spec_with(workdir)
    code, out, err = cli("validate", f"spec={spec}", override)
    assert code == 0, err


@pytest.mark.parametrize("override,key,shown", [
    ("runtime.batch_size=8.0", "runtime.batch_size", "(got 8.0)"),
    ("runtime.limits.max_cells=1e9", "runtime.limits.max_cells", "(got 1000000000.0)"),
    ("runtime.progress=yes", "runtime.progress", "(got 'yes')"),
    ("report.max_rows='7'", "report.max_rows", "(got '7')"),
    ("runtime.seed=-1", "runtime.seed", "greater than or equal to 0"),
])
def test_an_override_of_another_type_is_refused(workdir: Path, cli, override: str, key: str, shown: str) -> None:  # type: ignore[no-untyped-def]
    spec = spec_with(workdir)
    code, out, err = cli("validate", f"spec={spec}", override)
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and key in lines[0] and shown in lines[0] and "hint:" in lines[0], err
