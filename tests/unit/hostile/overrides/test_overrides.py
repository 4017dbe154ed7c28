"""Hostile command-line overrides: what a careless user, or a script that builds a command
line, can give after `biasaudit run`. No resolver runs, no key is echoed, a malformed or
conflicting override is one line with a hint and exit code 2, and a sweep is bounded.

Gathered from issues 11 (bad input, secrets) and 15 (hardening II and its catalogue)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import GENERATE_SPEC, tp_spec, write_crows_subset, write_spec
from tests.unit.cli.test_cli_errors import assert_clean_failure
from tests.unit.hostile._cases import (  # noqa: F401  (the *_fixture names register fixtures)
    BASE,
    KEY_ENV,
    BadInput,
    Case,
    assert_one_line_nothing_changed,
    case_spec,
    clean_failure,
    planted_fixture,
    planted_key_fixture,
    run_case,
    spec_with,
    with_args,
)

# -- resolvers on the command line (issues 11 and 15) -------------------------------------------

@pytest.mark.parametrize("override", [
    "+report.title=${oc.env:KEY}",
    "+report.title='${oc.${audit.name}:KEY}'",
    "+report.title=[${oc.env:KEY}]",
    "+report.title={a: '${oc.env:KEY}'}",
    "+report.title=choice('${oc.env:KEY}',b)",
    "+report.title='${${audit.name}}'",
])
def test_resolvers_on_the_command_line_are_refused(workdir: Path, cli, planted: str, override: str) -> None:  # type: ignore[no-untyped-def]
    spec = spec_with(workdir)
    clean_failure(cli("run", f"spec={spec}", "model=scripted", "audit.name=env", override.replace("KEY", KEY_ENV),
                      *isolation(workdir)), workdir, "command line", "report.title", "is not allowed")


def test_resolver_given_on_the_command_line_is_refused(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 3)
    assert_clean_failure(cli("run", f"spec={spec}", "model=scripted", "+report.title=${oc.env:HOME}",
                             *isolation(workdir)), workdir, "report.title", "'oc.env' is not allowed")


# -- a key given where a variable name belongs (issue 11) ----------------------------------------

def test_key_on_the_command_line_is_refused_and_not_echoed(workdir: Path, cli, planted_key: str) -> None:  # type: ignore[no-untyped-def]
    spec = write_spec(workdir / "s.yaml", GENERATE_SPEC)
    code, out, err = cli("run", f"spec={spec}", "model=openai_compat", f"+model.api_key={planted_key}",
                         *isolation(workdir))
    assert code == 2 and "model.api_key: unknown key 'api_key'" in err and "api_key_env" in err
    assert planted_key not in out + err
    assert not any((workdir / "reports").iterdir()) and not (workdir / "cache.sqlite").exists()


# -- sweeps over spec files with the same name are distinct jobs (issue 15, class 10) ------------

def test_sweep_over_same_named_spec_files_runs_each(workdir: Path, cli, planted: str) -> None:  # type: ignore[no-untyped-def]
    specs = []
    for d, name in (("a", "first"), ("b", "second")):
        (workdir / d).mkdir()
        write_crows_subset(workdir / d / "pairs.csv", 3)
        specs.append(write_spec(workdir / d / "x.yaml", BASE.replace("name: t", f"name: {name}")))
    code, _, err = cli("run", "-m", f"spec={specs[0]},{specs[1]}", "model=scripted", *isolation(workdir))
    assert code == 0, err
    ran = sorted(json.loads((d / "manifest.json").read_text())["spec_file"] for d in run_dirs(workdir))
    assert ran == sorted(str(s) for s in specs)


# -- malformed and conflicting overrides: one line, exit 2, nothing written (issue 11) -----------

def probe_kind_the_backend_lacks(w: Path) -> tuple[list[str], list[str]]:
    return ["spec=crows_pairs_mlm", "model=openai_compat"], [
        "conf/model/openai_compat.yaml", "probe.kind", "cannot give pseudo_loglik", "use a local masked LM"]


def nli_by_a_model_without_label_logprobs(w: Path) -> tuple[list[str], list[str]]:
    return ["spec=winoqueer_nli", "model=scripted"], ["conf/model/scripted.yaml", "model.backend", "llm_nli needs"]


def conflicting_values(w: Path) -> tuple[list[str], list[str]]:
    return ["runtime.seed=1", "runtime.seed=2"], ["command line", "runtime.seed", "conflicting overrides"]


def conflicting_group_choices(w: Path) -> tuple[list[str], list[str]]:
    return ["model=scripted", "model=smollm2"], ["command line", "model", "'model=scripted' and 'model=smollm2'"]


BAD_OVERRIDES: list[BadInput] = [
    probe_kind_the_backend_lacks, nli_by_a_model_without_label_logprobs, conflicting_values, conflicting_group_choices,
]


@pytest.mark.parametrize("case", BAD_OVERRIDES, ids=[c.__name__ for c in BAD_OVERRIDES])
def test_bad_input_is_one_line_exit_2_nothing_written(case: BadInput, workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    args, must = case(workdir)
    assert_clean_failure(cli("run", *args, *isolation(workdir)), workdir, *must)


BAD_VALUES = {
    "300-character audit.name": (lambda w: [f"audit.name={'a' * 300}"], ["audit.name", "at most 100 characters"]),
}


@pytest.mark.parametrize("case", list(BAD_VALUES))
def test_bad_paths_and_values_end_in_one_line(workdir: Path, cli, planted: str, case: str) -> None:  # type: ignore[no-untyped-def]
    make, must = BAD_VALUES[case]
    assert_one_line_nothing_changed(workdir, cli, make, must)


# -- the catalogue: resolvers, numbers and syntax on the command line (issue 15) -----------------

CASES: dict[str, Case] = {
    # -- INT: interpolation ------------------------------------------------------------------
    "override audit.name resolver": Case("INT", with_args(f"audit.name=${{oc.env:{KEY_ENV}}}"),
                                         ["command line", "'oc.env' is not allowed"]),
    "override nested dict key": Case("INT", with_args(f"+report.title={{'${{oc.env:{KEY_ENV}}}': 1}}"),
                                     ["command line"]),
    "override hydra resolver": Case("INT", with_args("+report.title=${hydra:runtime.cwd}"), ["'hydra' is not allowed"]),
    # -- NUM: numbers -------------------------------------------------------------------------
    "negative max_rows": Case("NUM", with_args("report.max_rows=-1"), ["report.max_rows"]),
    "samples times cells over the plan limit": Case("NUM", lambda w: [
        case_spec(w, old="kind: sequence_logprob",
                  new="kind: generate\n  temperature: 1\n  samples: 100000000\n  prompt: x"),
        "metrics=[{name: label_rate, layer: r, labels: [x]}]",
        "+coding={r: {coder: rules, labels: [x, y], otherwise: y, rules: [{keywords: [a], label: x}]}}"],
        ["the plan has", "runtime.limits.max_plan_items"]),
    "sample.n huge": Case("NUM", with_args("+stimuli.sample={n: 99999999999999999999}")),
    # -- CLI: override syntax -----------------------------------------------------------------
    "empty override": Case("CLI", with_args("="), ["error"]),
    "empty spec": Case("CLI", lambda w: ["spec="], ["spec"]),
    "spec list with empty item": Case("CLI", lambda w: [case_spec(w) + ","], ["overrides"]),
    "group traversal": Case("CLI", with_args("model=../../../etc/passwd"), ["model"]),
    "spec is /etc/passwd": Case("CLI", lambda w: ["spec=/etc/passwd"], ["/etc/passwd"]),
    "limit negative": Case("CLI", with_args("runtime.limits.max_cells=-1"), ["runtime.limits.max_cells"]),
    "limit NaN": Case("CLI", with_args("runtime.limits.template_seconds=nan"), ["runtime.limits.template_seconds"]),
    "100k-character override": Case("CLI", with_args("+report.title=" + "x" * 100_000)),
    "huge sweep": Case("CLI", lambda w: [case_spec(w), "report.max_rows=range(1,100000000)"], ["sweep"],
                       command="plan -m"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input(workdir: Path, cli, monkeypatch: pytest.MonkeyPatch, name: str) -> None:  # type: ignore[no-untyped-def]
    run_case(CASES[name], workdir, cli, monkeypatch)
