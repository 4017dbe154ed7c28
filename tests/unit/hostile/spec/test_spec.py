"""Hostile spec files: what a spec author (or a careless one) can write, and the outcome
it must have. A spec is data: it cannot run code, read the environment, choose the
model, where its key goes or where files are written; everything it can grow is
bounded; a malformed spec is one line naming the file and key path with a hint, exit
code 2, and nothing written.

Gathered from issues 11 (spec safety, bad input), 15 (hardening II and its catalogue)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from biasaudit.errors import SpecError
from biasaudit.spec.templates import render
from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec, write_spec
from tests.support.fault_server import FaultServer
from tests.unit.cli.test_cli_errors import assert_clean_failure
from tests.unit.hostile._cases import (  # noqa: F401  (the *_fixture names register fixtures)
    BASE,
    KEY_ENV,
    SECRET,
    BadInput,
    Case,
    assert_no_leak,
    bad_spec,
    case_spec,
    clean_failure,
    planted_fixture,
    run_case,
    spec_file,
    spec_with,
)

# -- resolvers: any nesting, refused before anything resolves (issue 15, class 1) -------------

RESOLVER_SPECS = {
    "nested resolver name": ('report: {title: "${oc.${audit.name}:KEY}"}\n', ("name: t", "name: env")),
    "computed key": ('report: {title: "${${audit.name}}"}\n', ("", "")),
    "in a list item": ("", ("format: crows_pairs}", "format: crows_pairs, where: {bias_type: ['${oc.env:KEY}']}}")),
    "in a mapping key": ('factors: {"${oc.env:KEY}": {a: {}}}\n', ("", "")),
    "oc.decode": ("report: {title: \"${oc.decode:'${oc.env:KEY}'}\"}\n", ("", "")),
    "inside a key path": ('report: {title: "${audit.${oc.env:KEY}}"}\n', ("", "")),
    "spaces": ('report: {title: "x ${ oc.env : KEY } y"}\n', ("", "")),
    "hydra resolver": ('report: {title: "${hydra:runtime.cwd}"}\n', ("", "")),
    "plugin resolver": ('report: {title: "${leak:}"}\n', ("", "")),
    "behind an alias": ('report: &r {title: "${oc.env:KEY}"}\nx: *r\n', ("", "")),
}


@pytest.mark.parametrize("case", list(RESOLVER_SPECS))
def test_resolvers_in_a_spec_are_refused_at_any_nesting(workdir: Path, cli, planted: str, case: str) -> None:  # type: ignore[no-untyped-def]
    from omegaconf import OmegaConf

    OmegaConf.register_new_resolver("leak", lambda: SECRET, replace=True)  # as a plugin could
    extra, replace = RESOLVER_SPECS[case]
    spec = spec_with(workdir, extra.replace("KEY", KEY_ENV), replace=(replace[0], replace[1].replace("KEY", KEY_ENV)))
    line = clean_failure(cli("run", f"spec={spec}", "model=scripted", *isolation(workdir)), workdir, str(spec),
                         "is not allowed", "plain ${other.key}")
    assert "line " in line  # where in the file


def test_escaped_interpolation_is_literal_text(workdir: Path, cli, planted: str) -> None:  # type: ignore[no-untyped-def]
    spec = spec_with(workdir, f'report: {{title: "costs \\\\${{oc.env:{KEY_ENV}}} literally"}}\n')
    code, out, err = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir))
    assert code == 0, err
    s = json.loads((run_dirs(workdir)[0] / "summary.json").read_text())
    assert s["audit"]["title"] == f"costs ${{oc.env:{KEY_ENV}}} literally"
    assert_no_leak(workdir, out, err)


@pytest.mark.parametrize("value", ["${oc.env:HOME}", "${oc.decode:'{a: 1}'}", "x ${ oc.env : PATH } y",
                                   "${hydra:runtime.cwd}", "${oc.create:{}}"])
def test_resolvers_in_a_spec_are_refused(workdir: Path, cli, value: str) -> None:  # type: ignore[no-untyped-def]
    spec = spec_file(workdir, f"report: {{title: {json.dumps(value)}}}\n")
    assert_clean_failure(cli("run", f"spec={spec}", "model=scripted", *isolation(workdir)), workdir,
                         str(spec), "report.title", "resolver", "not allowed")


def test_plain_interpolation_still_works(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = spec_file(workdir, "report: {title: 'Audit of ${audit.name}'}\n")
    code, _, err = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir))
    assert code == 0, err
    assert "Audit of t" in (run_dirs(workdir)[0] / "report.html").read_text()


# -- a spec cannot run code (issue 11) ----------------------------------------------------------

def test_hydra_callbacks_in_a_spec_cannot_run_code(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    # Before this check, Hydra instantiated the callback: os.makedirs ran and the folder appeared.
    target = workdir / "pwned"
    spec = spec_file(workdir, f"hydra:\n  callbacks:\n    x: {{_target_: os.makedirs, name: '{target}'}}\n")
    assert_clean_failure(cli("run", f"spec={spec}", "model=scripted", *isolation(workdir)), workdir,
                         str(spec), "hydra: a spec cannot set 'hydra' (line 9")
    assert not target.exists()


def test_package_header_cannot_make_the_spec_hydra_settings(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    tp_spec(workdir, 3)
    spec = write_spec(workdir / "p.yaml", f"# @package hydra\nrun: {{dir: '{workdir / 'elsewhere'}'}}\n")
    assert_clean_failure(cli("run", f"spec={spec}", "model=scripted", *isolation(workdir)), workdir,
                         str(spec), "cannot choose its package ('hydra')")
    assert not (workdir / "elsewhere").exists()


def test_defaults_list_in_a_spec_is_refused(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = spec_file(workdir, "", head="defaults:\n  - /model: smollm2\n")
    assert_clean_failure(cli("run", f"spec={spec}", "model=scripted", *isolation(workdir)), workdir,
                         str(spec), "a spec cannot set 'defaults'", "command line")


@pytest.mark.parametrize("where", ["metrics:\n  - {name: bias_score, _target_: os.system}\n",
                                   "factors:\n  f: {a: {vars: {x: {_target_: builtins.eval}}}}\n"])
def test_import_paths_are_refused_anywhere(workdir: Path, cli, where: str) -> None:  # type: ignore[no-untyped-def]
    spec = spec_file(workdir, "").read_text().replace("metrics:\n  - {name: bias_score, mode: ar_full}\n", where)
    (workdir / "s.yaml").write_text(spec)
    assert_clean_failure(cli("run", f"spec={workdir / 's.yaml'}", "model=scripted", *isolation(workdir)), workdir,
                         "._target_", "key '_target_' is not allowed", "never Python import paths")


def test_python_yaml_tags_do_not_construct_objects(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    target = workdir / "pwned"
    spec = spec_file(workdir, f"report: {{title: !!python/object/apply:os.makedirs ['{target}']}}\n")
    assert_clean_failure(cli("run", f"spec={spec}", "model=scripted", *isolation(workdir)), workdir,
                         str(spec), "report.title", "python/object/apply:os.makedirs")
    assert not target.exists()


def test_registered_names_are_not_import_paths(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = spec_file(workdir, "").read_text().replace("name: bias_score", "name: biasaudit.methods.token_probability.metric.compute")
    (workdir / "s.yaml").write_text(spec)
    assert_clean_failure(cli("run", f"spec={workdir / 's.yaml'}", "model=scripted", *isolation(workdir)), workdir,
                         "metrics[0].name", "unknown metric", "known: ")


@pytest.mark.parametrize("template", [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.environ }}",
    "{{ range(10**7) | list | length }}",
    "{{ 'x' * 10**9 }}",
    "{{ 10 ** 100000000 }}",
])
def test_templates_are_sandboxed(template: str) -> None:
    with pytest.raises(SpecError) as ei:
        render(template, {"more": "a"}, file="s.yaml", key="probe.inputs.more")
    assert ei.value.one_line().startswith("error: s.yaml: probe.inputs.more: template error")


def test_unsafe_template_fails_before_any_model_call(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = spec_file(workdir, "")
    spec.write_text(spec.read_text().replace('more: "{{ more }}"', 'more: "{{ more.__class__ }}"'))
    assert_clean_failure(cli("run", f"spec={spec}", "model=scripted", *isolation(workdir)), workdir,
                         str(spec), "probe.inputs.more", "unsafe")


# -- a spec cannot set the operator's groups (issue 15, class 2) ---------------------------------

def _operator_blocks(url: str) -> dict[str, str]:
    model = f"{{backend: openai_compat, name: m, base_url: '{url}', api_key_env: {KEY_ENV}}}"
    return {
        "model": f"model: {model}\n",
        "judge": f"judge: {{judges: [{{name: j, model: {model}, prompt: '{{{{ text }}}}'}}]}}\n",
        "nli": f"nli: {{backend: llm_nli, name: n, model: {model}}}\n",
        "embedder": "embedder: {name: e, path: /etc}\n",
        "runtime": "runtime: {cache: /tmp/elsewhere.sqlite}\n",
        "model (merged in)": f"base: &b {{model: {model}}}\n<<: *b\n",
    }


@pytest.mark.parametrize("block", ["model", "judge", "nli", "embedder", "runtime", "model (merged in)"])
def test_a_spec_cannot_set_the_operators_groups(workdir: Path, cli, planted: str, block: str) -> None:  # type: ignore[no-untyped-def]
    with FaultServer() as server:
        spec = spec_with(workdir, _operator_blocks(server.url)[block])
        key = block.split()[0]
        clean_failure(cli("run", f"spec={spec}", *isolation(workdir)), workdir, f"{spec}: {key}:",
                      f"a spec cannot set '{key}'", "operator")
        assert server.seen == []  # nothing was sent anywhere


def test_a_suite_member_cannot_override_the_operators_groups(workdir: Path, cli, planted: str) -> None:  # type: ignore[no-untyped-def]
    member = spec_with(workdir)
    with FaultServer() as server:
        suite = write_spec(workdir / "suite.yaml", f"""
suite:
  name: s
  members:
    - spec: {member}
      overrides: ["model.base_url={server.url}", "+model.api_key_env={KEY_ENV}"]
""")
        clean_failure(cli("run", f"spec={suite}", "model=openai_compat", *isolation(workdir)), workdir, str(suite),
                      "suite.members[0].overrides[0]", "cannot override 'model.base_url'")
        assert server.seen == []


# -- templates are bounded in size, steps and time (issue 15, class 4) ----------------------------

@pytest.mark.parametrize("template,message", [
    ("{{ more|center(10**10) }}", "`center` width"),
    ("{{ more|indent(99999999, true) }}", "`indent` would be"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{{ more }}",
     "loop iterations and calls"),
    ("{% set ns = namespace(x=more * 1000) %}{% for i in range(20) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}"
     "{{ more }}", "characters long"),
    ("{{ range(100000)|join(more * 1000) }}", "`join` would be"),
    ("{{ '%0999999999d' % 1 }}{{ more }}", "format width"),
    ("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}{{ more }}",
     "loop iterations and calls"),
])
def test_templates_are_bounded(workdir: Path, cli, planted: str, template: str, message: str) -> None:  # type: ignore[no-untyped-def]
    spec = spec_with(workdir, replace=('more: "{{ more }}"', f"more: {json.dumps(template)}"))
    # the time bound set far off: on a loaded machine 200,000 steps can take over the
    # default 5 s, and the time bound (test_template_time_limit_is_the_operators) would fire first
    clean_failure(cli("validate", f"spec={spec}", "runtime.limits.template_steps=200000",
                      "runtime.limits.template_seconds=600"), workdir,
                  str(spec), "probe.inputs.more", "template error", message, "runtime.limits.template_")


def test_template_time_limit_is_the_operators(workdir: Path, cli, planted: str) -> None:  # type: ignore[no-untyped-def]
    slow = "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}{{ more }}"
    spec = spec_with(workdir, replace=('more: "{{ more }}"', f"more: {json.dumps(slow)}"))
    clean_failure(cli("validate", f"spec={spec}", "runtime.limits.template_seconds=0.2",
                      "runtime.limits.template_steps=1000000000"), workdir, "longer than 0.2 s")


# -- YAML: alias expansion, nesting depth and recursive aliases (issue 15, class 5) --------------

def _laughs(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + f"\nreport: {{title: x, formats: *a{levels}}}\n"


@pytest.mark.parametrize("body,message", [
    (_laughs(), "expands to more than 100000 nodes"),
    ("x: " + "[" * 20000 + "]" * 20000 + "\n", "nested more than 64 levels"),
    ("x: " + "{a: " * 100 + "1" + "}" * 100 + "\n", "nested more than 64 levels"),
    ("x: &a [*a]\n", "recursive YAML alias"),
])
def test_yaml_is_bounded_before_omegaconf(workdir: Path, cli, planted: str, body: str, message: str) -> None:  # type: ignore[no-untyped-def]
    assert len(body) < 100_000
    spec = spec_with(workdir, body)
    clean_failure(cli("validate", f"spec={spec}"), workdir, str(spec), "(file)", message)


# -- design size: counted before expanding, over the operator's cap (issue 15, class 6) ----------

def test_design_cells_are_counted_before_expanding(workdir: Path, cli, planted: str) -> None:  # type: ignore[no-untyped-def]
    factors = "factors:\n" + "".join(f"  f{i}: {{{', '.join(f'l{j}: {{}}' for j in range(10))}}}\n" for i in range(12))
    spec = spec_with(workdir, factors + "design: {kind: full}\n")
    clean_failure(cli("validate", f"spec={spec}"), workdir, str(spec), "design",
                  "expands to 1000000000000 cells, over the limit of 100000", "runtime.limits.max_cells")
    small = spec_with(workdir, "factors: {f: {a: {}, b: {}}, g: {a: {}, b: {}}}\ndesign: {kind: full}\n")
    clean_failure(cli("validate", f"spec={small}", "runtime.limits.max_cells=3"), workdir,
                  "expands to 4 cells, over the limit of 3")
    code, out, _ = cli("validate", f"spec={small}", "runtime.limits.max_cells=4")  # the operator raises it
    assert code == 0 and "4 cell(s)" in out


def test_plan_items_and_generated_rows_are_bounded(workdir: Path, cli, planted: str) -> None:  # type: ignore[no-untyped-def]
    spec = spec_with(workdir)
    clean_failure(cli("validate", f"spec={spec}", "runtime.limits.max_plan_items=5"), workdir,
                  "the plan has 6 items", "runtime.limits.max_plan_items")
    gen = spec_with(workdir, replace=("stimuli: {source: pairs.csv, format: crows_pairs}",
                                      "stimuli:\n  generate:\n    vars: {a: [1, 2, 3], b: [1, 2, 3], c: [1, 2]}\n"
                                      "    fields: {more: 'x{{ a }}', less: 'y{{ b }}'}\n  format: csv"))
    clean_failure(cli("validate", f"spec={gen}", "runtime.limits.max_stimuli=10"), workdir,
                  "stimuli.generate.vars", "makes 18 rows, over the limit of 10")


# -- thresholds: finite, inside the metric's range, min <= max (issue 15, class 8) ----------------

@pytest.mark.parametrize("threshold,key,message", [
    ("{metric: bias_score, min: .nan}", "thresholds[0].min", "finite number"),
    ("{metric: bias_score, max: .inf}", "thresholds[0].max", "finite number"),
    ("{metric: bias_score, min: -.inf}", "thresholds[0].min", "finite number"),
    ("{metric: bias_score, max: 150}", "thresholds[0].max", "outside the range of 'bias_score' (0 to 100)"),
    ("{metric: bias_score.neutral, max: 50}", "thresholds[0].max", "(0 to 1)"),
    ("{metric: bias_score, min: 60, max: 40}", "thresholds[0]", "`min` is larger than `max`"),
])
def test_thresholds_are_validated_before_any_model_call(workdir: Path, cli, planted: str, threshold: str, key: str,
                                                        message: str) -> None:  # type: ignore[no-untyped-def]
    spec = spec_with(workdir, f"thresholds:\n  - {threshold}\n")
    clean_failure(cli("run", f"spec={spec}", "model=scripted", *isolation(workdir)), workdir, str(spec), key, message)


# -- malformed specs: one line, exit 2, nothing written (issue 11) -------------------------------
# Cases already covered in test_cli_errors.py (unknown key, undefined factor and level,
# template variable without a source, missing file, missing csv column, unknown model
# config or spec, override of a missing key, `${oc.env:...}`) are not repeated.

def yaml_syntax_error(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, "audit: {name: t, method: x}\nstimuli: {source: pairs.csv\nprobe: {kind: generate}\n")
    return [f"spec={spec}"], [str(spec), "YAML syntax error at line 3, column 6"]


def yaml_not_a_mapping(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, "- audit\n- stimuli\n")
    return [f"spec={spec}"], [str(spec), "(root)", "must be a mapping"]


def wrong_type(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE.replace("kind: sequence_logprob", "kind: sequence_logprob\n  samples: many"))
    return [f"spec={spec}"], [str(spec), "probe.samples", "(got 'many')", "expected a whole number"]


def wrong_type_of_section(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE.replace("metrics:\n  - {name: bias_score, mode: ar_full}", "metrics: bias_score"))
    return [f"spec={spec}"], [str(spec), "metrics", "valid list", "expected a list of mappings"]


def misspelt_choice(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE.replace("mode: ar_full", "mode: ar_fool"))
    return [f"spec={spec}"], [str(spec), "metrics[0].mode", "did you mean 'ar_full'"]


def unknown_metric_option(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE.replace("mode: ar_full", "mood: ar_full"))
    return [f"spec={spec}"], [str(spec), "metrics[0].mood", "did you mean 'mode'"]


def duplicate_level_name(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE + "factors:\n  frame:\n    plain: {vars: {p: ''}}\n    plain: {vars: {p: 'x'}}\n")
    return [f"spec={spec}"], [str(spec), "factors.frame.plain", "duplicate key 'plain' (line 12, column 5; first at line 11)"]


def duplicate_level_in_sub_grid(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE + "factors:\n  frame: {a: {}, b: {}}\ndesign: {kind: fractional, levels: {frame: [a, b, a]}}\n")
    return [f"spec={spec}"], [str(spec), "design.levels.frame[2]", "listed twice"]


def duplicate_explicit_cell(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE + "factors:\n  frame: {a: {}, b: {}}\ndesign: {kind: explicit, cells: [{frame: a}, {frame: a}]}\n")
    return [f"spec={spec}"], [str(spec), "design.cells[1]", "listed twice"]


def zero_cells(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE + "factors:\n  frame: {a: {}, b: {}}\ndesign: {kind: fractional, levels: {frame: []}}\n")
    return [f"spec={spec}"], [str(spec), "design.levels.frame", "zero cells"]


def undefined_threshold_metric(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE + "thresholds:\n  - {metric: nli_bias.m6, max: 60}\n")
    return [f"spec={spec}"], [str(spec), "thresholds[0].metric", "'nli_bias'", "metrics: bias_score"]


def non_utf8_spec(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE)
    spec.write_bytes(spec.read_bytes().replace(b"name: t", "name: t, description: caf\u00e9".encode("latin-1")))
    return [f"spec={spec}"], [str(spec), "not UTF-8 text (invalid byte on line 2)"]


def jinja_syntax_error(w: Path) -> tuple[list[str], list[str]]:
    spec = bad_spec(w, BASE.replace('less: "{{ less }}"', 'less: "{{ less }"'))
    return [f"spec={spec}"], [str(spec), "probe.inputs.less", "template syntax error"]


BAD_SPECS: list[BadInput] = [
    yaml_syntax_error, yaml_not_a_mapping, wrong_type, wrong_type_of_section, misspelt_choice,
    unknown_metric_option, duplicate_level_name, duplicate_level_in_sub_grid, duplicate_explicit_cell, zero_cells,
    undefined_threshold_metric, non_utf8_spec, jinja_syntax_error,
]


@pytest.mark.parametrize("case", BAD_SPECS, ids=[c.__name__ for c in BAD_SPECS])
def test_bad_input_is_one_line_exit_2_nothing_written(case: BadInput, workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    args, must = case(workdir)
    assert_clean_failure(cli("run", *args, *isolation(workdir)), workdir, *must)


# -- the catalogue: interpolation, Jinja, unicode, numbers, suites (issue 15) --------------------

def _more(template: str) -> Callable[[Path], list[str]]:
    return lambda w: [case_spec(w, old='more: "{{ more }}"', new=f"more: {json.dumps(template)}")]


def _title(value: str) -> Callable[[Path], list[str]]:
    return lambda w: [case_spec(w, f"report: {{title: {json.dumps(value)}}}\n")]


def _raw_spec(text: str | bytes) -> Callable[[Path], list[str]]:
    def build(w: Path) -> list[str]:
        tp_spec(w, 3)
        p = w / "raw.yaml"
        p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
        return [f"spec={p}"]
    return build


def _suite(body: str) -> Callable[[Path], list[str]]:
    def build(w: Path) -> list[str]:
        member = case_spec(w).removeprefix("spec=")
        return [f"spec={write_spec(w / 'suite.yaml', body.replace('MEMBER', member))}"]
    return build


CASES: dict[str, Case] = {
    # -- INT: interpolation ------------------------------------------------------------------
    "oc.select": Case("INT", _title("${oc.select:audit.name}"), ["'oc.select' is not allowed"]),
    "oc.dict.keys": Case("INT", _title("${oc.dict.keys:audit}"), ["'oc.dict.keys' is not allowed"]),
    "now resolver": Case("INT", _title("${now:%Y}"), ["'now' is not allowed"]),
    "unknown resolver": Case("INT", _title("${python.eval:1+1}"), ["'python.eval' is not allowed"]),
    "env with default": Case("INT", _title(f"${{oc.env:{KEY_ENV},none}}"), ["'oc.env' is not allowed"]),
    "escaped backslash then resolver": Case("INT", _title(f"\\\\${{oc.env:{KEY_ENV}}}"), ["'oc.env' is not allowed"]),
    "unbalanced": Case("INT", _title("${audit.name"), ["malformed interpolation"]),
    "dollar-space is text": Case("INT", _title(f"$ {{oc.env:{KEY_ENV}}}")),
    "plain reference": Case("INT", _title("Audit ${audit.name}")),
    "relative reference": Case("INT", lambda w: [case_spec(w, "report: {title: 'rows ${.max_rows}'}\n")]),
    "interpolation to hydra node": Case("INT", _title("${hydra.runtime.cwd}"), ["cannot resolve interpolation"]),
    # -- JE: Jinja sandbox escapes ------------------------------------------------------------
    "attr filter dunder": Case("JE", _more("{{ more|attr('__class__') }}"), ["template error"]),
    "escaped dunder": Case("JE", _more("{{ ()|attr('\\x5f\\x5fclass\\x5f\\x5f') }}"), ["template error"]),
    "self context": Case("JE", _more("{{ self._TemplateReference__context }}{{ more }}"), ["template error"]),
    "cycler globals": Case("JE", _more("{{ cycler.__init__.__globals__ }}"), ["template error"]),
    "namespace init": Case("JE", _more("{{ namespace.__init__.__globals__ }}"), ["template error"]),
    "function globals": Case("JE", _more("{{ frame_prompt.__globals__ }}"), ["template error"]),
    "format_map attribute walk": Case("JE", _more("{{ '{0.__class__}'.format(more) }}"), ["template error"]),
    "include": Case("JE", _more("{% include '/etc/passwd' %}{{ more }}"), ["template error"]),
    "config global": Case("JE", _more("{{ config }}{{ more }}"), ["'config' has no source"]),
    "lipsum removed": Case("JE", _more("{{ lipsum(100000) }}{{ more }}"), ["'lipsum' has no source"]),
    # -- JR: Jinja resource bounds ------------------------------------------------------------
    "zfill": Case("JR", _more("{{ more.zfill(10**9) }}"), ["str.zfill width"]),
    "expandtabs": Case("JR", _more("{{ ('\\t' * 1000).expandtabs(10**6) }}{{ more }}"), ["expandtabs"]),
    "str.replace growth": Case("JR", _more("{{ (more * 1000).replace('', more * 1000) }}"), ["str.replace"]),
    "nested format width": Case("JR", _more("{{ '{:{}}'.format(more, 10**9) }}"), ["format width"]),
    "filter block width": Case("JR", _more("{% filter center(10**9) %}{{ more }}{% endfilter %}"), ["`center` width"]),
    "map center": Case("JR", _more("{{ [more]|map('center', 10**9)|list }}"), ["`center` width"]),
    "string of shared lists": Case("JR", _more(
        "{% set a = [more * 10000] * 100 %}{{ ([a] * 10)|string|length }}"), ["characters long"]),
    "recursive loop": Case("JR", _more(
        "{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}{{ more }}"), ["template"]),
    "deep brackets": Case("JR", _more("{{ " + "(" * 3000 + "more" + ")" * 3000 + " }}"), ["nested too deeply"]),
    "power tower": Case("JR", _more("{{ 9 ** 999999999 }}{{ more }}"), ["too large"]),
    # -- UNI: unicode tricks ------------------------------------------------------------------
    "BOM before the spec": Case("UNI", lambda w: [case_spec(w).replace("spec=", "spec=")]),
    "zero-width space in a key": Case("UNI", lambda w: [case_spec(w, "report: {ti\u200btle: x}\n")],
                                      ["report.ti\u200btle", "unknown key"]),
    "homoglyph section": Case("UNI", lambda w: [case_spec(w, "\u0430udit_extra: 1\n")], ["unknown key"]),
    "RTL override in audit.name": Case("UNI", lambda w: [case_spec(w, old="name: t", new="name: 't\u202egnp.exe'")],
                                       ["audit.name", "\\u202e"]),
    "lone surrogate escape in YAML": Case("UNI", _title("\ud800"), ["surrogate"]),
    "NUL in YAML": Case("UNI", _raw_spec("audit: {name: t\x00}\n"), ["unacceptable character #x0000"]),
    "spec not UTF-8": Case("UNI", _raw_spec(b"audit: {name: \xff}\n"), ["not UTF-8"]),
    # -- NUM: numbers -------------------------------------------------------------------------
    "huge integer": Case("NUM", lambda w: [case_spec(w, old="kind: sequence_logprob",
                                                     new="kind: sequence_logprob\n  samples: " + "9" * 400)],
                         []),  # one sample per scoring request whatever `samples` says
    "float as count": Case("NUM", lambda w: [case_spec(w, old="kind: sequence_logprob",
                                                       new="kind: sequence_logprob\n  max_tokens: 1e400")],
                           ["probe.max_tokens"]),
    "max_tokens over the limit": Case("NUM", lambda w: [case_spec(w, old="kind: sequence_logprob",
                                                                  new="kind: sequence_logprob\n  max_tokens: 1000000")],
                                      ["probe.max_tokens", "runtime.limits.max_tokens"]),
    "NaN temperature": Case("NUM", lambda w: [case_spec(w, old="kind: sequence_logprob",
                                                        new="kind: sequence_logprob\n  temperature: .nan")],
                            ["probe.temperature"]),
    # -- SUITE -----------------------------------------------------------------------------------
    "suite member overrides hydra": Case("SUITE", _suite(
        "suite:\n  name: s\n  members:\n    - {spec: MEMBER, overrides: ['hydra.run.dir=/tmp/x']}\n"),
        ["cannot override 'hydra.run.dir'"]),
    "suite member overrides runtime": Case("SUITE", _suite(
        "suite:\n  name: s\n  members:\n    - {spec: MEMBER, overrides: ['runtime.limits.max_cells=999999999']}\n"),
        ["cannot override 'runtime.limits.max_cells'"]),
    "suite subject with override syntax": Case("SUITE", _suite(
        "suite:\n  name: s\n  subjects: ['smollm2 model.base_url=http://x']\n  members:\n    - {spec: MEMBER}\n"),
        ["not a config name"]),
    "suite alias bomb": Case("SUITE", _raw_spec("a0: &a0 [x]\n" + "".join(
        f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 9)) + "suite: {name: s, members: *a8}\n"),
        ["expands to more than"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input(workdir: Path, cli, monkeypatch: pytest.MonkeyPatch, name: str) -> None:  # type: ignore[no-untyped-def]
    run_case(CASES[name], workdir, cli, monkeypatch)


def test_catalogue_size() -> None:
    """The closing note of issue 15 counts these: keep the catalogue at 60+ cases across
    its classes (the catalogue tables of every surface, and the hostile servers)."""
    from tests.unit.hostile.data_files import test_data_files
    from tests.unit.hostile.file_system import test_file_system
    from tests.unit.hostile.overrides import test_overrides
    from tests.unit.hostile.server_answers import test_server_answers

    by_class: dict[str, int] = {}
    for table in (CASES, test_data_files.CASES, test_overrides.CASES, test_file_system.CASES):
        for c in table.values():
            by_class[c.cls] = by_class.get(c.cls, 0) + 1
    by_class["HTTP"] = len(test_server_answers.HTTP_CASES)
    assert sum(by_class.values()) >= 60 and len(by_class) >= 10, by_class
