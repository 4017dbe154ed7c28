"""Bad input: one line naming the file and key path with a hint, exit code 2, no run
folder and no store rows (foundation issue, acceptance 5)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import isolation
from tests.helpers import tp_spec, write_spec


def assert_clean_failure(result: tuple[int, str, str], workdir: Path, *must: str) -> str:
    code, out, err = result
    assert code == 2, (out, err)
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("error: ") and "hint:" in line, line
    for m in must:
        assert m in line, (m, line)
    assert not any((workdir / "reports").iterdir()), "a run folder was written"
    assert not (workdir / "cache.sqlite").exists(), "the store was touched"
    return line


def test_unknown_spec_key(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 3)
    spec.write_text(spec.read_text().replace("format: crows_pairs", "format: crows_pairs, smaple: {n: 2}"))
    line = assert_clean_failure(cli("run", f"spec={spec}", *isolation(workdir)), workdir, str(spec), "stimuli.smaple")
    assert "did you mean 'sample'" in line


def test_undefined_level(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    tp_spec(workdir, 3)
    spec = write_spec(workdir / "f.yaml", """
audit: {name: f, method: token_probability}
stimuli: {source: pairs.csv, format: crows_pairs}
factors:
  frame: {plain: {vars: {p: ""}}, quoted: {vars: {p: "'"}}}
design: {kind: oat, baseline: {frame: fancy}}
probe: {kind: sequence_logprob, inputs: {more: "{{ p }}{{ more }}", less: "{{ p }}{{ less }}"}}
metrics: [{name: bias_score}]
""")
    assert_clean_failure(cli("run", f"spec={spec}", *isolation(workdir)), workdir, str(spec), "design.baseline.frame", "'fancy'")


def test_undefined_factor(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    tp_spec(workdir, 3)
    spec = write_spec(workdir / "g.yaml", """
audit: {name: g, method: token_probability}
stimuli: {source: pairs.csv, format: crows_pairs}
factors:
  frame: {plain: {}}
design: {kind: explicit, cells: [{frame: plain, tone: calm}]}
probe: {kind: sequence_logprob, inputs: {more: "{{ more }}", less: "{{ less }}"}}
metrics: [{name: bias_score}]
""")
    assert_clean_failure(cli("run", f"spec={spec}", *isolation(workdir)), workdir, "design.cells[0].tone", "undefined factor")


def test_template_variable_without_source(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 3)
    spec.write_text(spec.read_text().replace("{{ less }}", "{{ lesser }}"))
    assert_clean_failure(cli("run", f"spec={spec}", *isolation(workdir)), workdir, str(spec), "probe.inputs.less", "'lesser'")


def test_missing_data_file(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    missing = workdir / "nowhere.csv"
    assert_clean_failure(cli("run", f"stimuli.source={missing}", *isolation(workdir)), workdir, str(missing), "stimuli.source", "not found")


def test_csv_lacking_required_column(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    bad = workdir / "bad.csv"
    bad.write_text(",sent_more,sent_less,bias_type\n0,A x.,B x.,gender\n", encoding="utf-8")
    assert_clean_failure(cli("run", f"stimuli.source={bad}", *isolation(workdir)), workdir, str(bad), "stereo_antistereo")


def test_unknown_model_config(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    line = assert_clean_failure(cli("run", "model=gpt-nine", *isolation(workdir)), workdir, "conf/model/", "'gpt-nine'")
    assert re.search(r"available: .*smollm2", line)


def test_unknown_spec_name(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    assert_clean_failure(cli("run", "spec=crows_pair_tp", *isolation(workdir)), workdir, "unknown spec", "crows_pairs_tp")


def test_override_of_missing_key(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    assert_clean_failure(cli("run", "stimuli.sorce=x.csv", *isolation(workdir)), workdir, "stimuli.sorce")


def test_env_resolver_is_rejected(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 3)
    spec.write_text(spec.read_text().replace("name: tp-test", "name: tp-test, description: '${oc.env:HOME}'"))
    assert_clean_failure(cli("run", f"spec={spec}", *isolation(workdir)), workdir, "oc.env", "audit.description")


def test_validate_and_plan_commands(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 4)
    code, out, _ = cli("validate", f"spec={spec}", "model=scripted")
    assert code == 0 and "1 cell(s), 4 stimuli, 8 requests" in out
    code, out, _ = cli("plan", f"spec={spec}", "model=scripted", *isolation(workdir))
    assert code == 0 and re.search(r"subject requests\s+8", out) and re.search(r"subject calls needed\s+8", out)
