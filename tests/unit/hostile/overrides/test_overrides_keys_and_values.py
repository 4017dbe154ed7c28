"""A fresh round on the overrides surface (issue 26): keys with zero-width or look-alike
characters, very long keys and values, `+` on a key that exists, `~` deleting required
keys, interpolation tricks (recursive, to a parent, across groups), null for sections
and paths, floats, bools and negatives where whole numbers belong, Hydra settings and
empty or malformed groups. Each ends with exit code 0, or one line with a hint and exit
code 2; never a traceback, never a run folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.hostile._cases import Case, case_spec, run_case, with_args

CASES: dict[str, Case] = {
    # -- keys ------------------------------------------------------------------------------------
    "zero-width space in a key": Case("KEY", with_args("report.max_r\u200bows=3"), ["overrides"]),
    "Cyrillic e in a key": Case("KEY", with_args("runtime.se\u0435d=1"), ["overrides"]),
    "a 10k-character key": Case("KEY", with_args("k" * 10_000 + "=1"), ["overrides"]),
    "a key ending in a dot": Case("KEY", with_args("runtime.=1"), ["overrides"]),
    "+ on a key that exists": Case("KEY", with_args("+audit.name=x"), ["Could not append", "audit.name"]),
    "~ on the audit section": Case("KEY", with_args("~audit"), ["audit", "required key is missing"]),
    "~ on probe.kind": Case("KEY", with_args("~probe.kind"), ["probe.kind", "required key is missing"]),
    "~ on the model group": Case("KEY", with_args("~model"), ["model", "required key is missing"]),
    "~ on runtime.limits keeps the defaults": Case("KEY", with_args("~runtime.limits")),
    # -- values ----------------------------------------------------------------------------------
    "a 100k-character description": Case("VAL", with_args("+audit.description=" + "d" * 100_000)),
    "an = inside a value": Case("VAL", with_args("+audit.description=a=b"), ["overrides"]),
    "a bidi override in audit.name": Case("VAL", with_args("audit.name=t\u202egnp"), ["\\u202e"]),
    "a float where a whole number belongs": Case("VAL", with_args("runtime.limits.max_cells=1e9"),
                                                 ["runtime.limits.max_cells", "(got 1000000000.0)"]),
    "true where a whole number belongs": Case("VAL", with_args("runtime.batch_size=true"),
                                              ["runtime.batch_size", "(got True)"]),
    "1 where true/false belongs": Case("VAL", with_args("runtime.progress=1"), ["runtime.progress", "(got 1)"]),
    "a negative seed": Case("VAL", with_args("runtime.seed=-1"), ["runtime.seed", "greater than or equal to 0"]),
    "a negative sample seed": Case("VAL", with_args("+stimuli.sample={n: 1, seed: -5}"),
                                   ["stimuli.sample.seed", "greater than or equal to 0"]),
    "NaN temperature": Case("VAL", with_args("+probe.temperature=nan"), ["probe.temperature", "(got nan)"]),
    "a zero byte limit": Case("VAL", with_args("runtime.limits.max_data_bytes=0"),
                              ["runtime.limits.max_data_bytes"]),
    "null for runtime.limits": Case("VAL", with_args("runtime.limits=null"), ["runtime.limits", "(got None)"]),
    "null for the cache path": Case("VAL", with_args("runtime.cache=null"), ["runtime.cache", "(got None)"]),
    "a mapping where a list belongs": Case("VAL", with_args("+report.formats={a: 1}"), ["report.formats"]),
    "an unknown report format": Case("VAL", with_args("report.formats=[exe]"), ["report.formats[0]"]),
    # -- interpolation ------------------------------------------------------------------------------
    "a recursive interpolation": Case("INT", with_args("audit.name=${audit.name}"), ["Recursive interpolation"]),
    "an interpolation to its own parent": Case("INT", with_args("+report.title=${report}"),
                                               ["Interpolation to parent node"]),
    "a relative interpolation to itself": Case("INT", with_args("+report.title=${.title}"),
                                               ["Recursive interpolation"]),
    "an interpolation across groups": Case("INT", with_args("report.max_rows=${runtime.seed}"),
                                           ["report.max_rows", "greater than or equal to 1"]),
    # -- groups and Hydra settings --------------------------------------------------------------------
    "an empty group choice": Case("GRP", with_args("model="), ["model"]),
    "a group listed twice without -m": Case("GRP", with_args("model=scripted,scripted"),
                                            ["is a sweep", "biasaudit run -m"]),
    "a spec path that climbs out": Case("GRP", lambda w: ["spec=../../../../../../etc/passwd.yaml"],
                                        ["file not found"]),
    "Hydra settings the operator needs (logging)": Case("GRP", with_args("hydra.verbose=true")),
    "a run folder of the command line's choosing (issue 39)": Case("GRP", with_args("hydra.run.dir=/tmp/biasaudit-never-used"),
                                                                   ["hydra.run.dir", "runtime.reports_dir"]),
    "Hydra settings outside the allow-list (issue 39)": Case("GRP", with_args("hydra.job.chdir=true"),
                                                             ["hydra.job.chdir", "is not among the Hydra settings"]),
    "a sweep of a spec and a glob": Case("GRP", lambda w: [case_spec(w).replace("spec=", "spec=glob(*),")],
                                         ["overrides"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_override(workdir: Path, cli, monkeypatch: pytest.MonkeyPatch, name: str) -> None:  # type: ignore[no-untyped-def]
    run_case(CASES[name], workdir, cli, monkeypatch)
