"""The Python API's `spec` argument is one spec file, whatever characters its name holds
(issue 26, low). Before, `biasaudit.validate("a,b.yaml")` was read as a sweep of two specs
("these functions do one"), `"x=y.yaml"` and names with quotes, brackets, braces or
parentheses as override syntax errors. A path is now registered under a name Hydra's
grammar takes; a spec *name* (not a path) with such characters is one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import biasaudit
from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec

NAMES = ["a,b.yaml", "x=y.yaml", "a,b=c,d.yaml", "q'uote.yaml", 'd"q.yaml', "br[ack]et.yaml", "cur{ly}.yaml",
         "paren(1).yaml", "glob(*).yaml", "${oc.env:HOME}.yaml", "sp ace, and=more.yaml", "~tilde.yaml",
         "+plus.yaml", "é,ü=ö.yaml"]


@pytest.mark.parametrize("name", NAMES)
def test_a_spec_file_of_any_name_validates(workdir: Path, name: str) -> None:
    spec = workdir / name
    shutil.copy(tp_spec(workdir, 3), spec)
    result = biasaudit.validate(spec, ["model=scripted"])
    assert result.spec_file == spec.resolve() and result.stimuli == 3
    assert biasaudit.validate(str(spec), ["model=scripted"]).requests == 6  # as a str too


def test_a_spec_file_named_with_a_comma_runs_once(workdir: Path) -> None:
    spec = workdir / "a,b=c.yaml"
    shutil.copy(tp_spec(workdir, 3), spec)
    result = biasaudit.run(spec, ["model=scripted", *isolation(workdir)])
    assert [result.run_dir] == run_dirs(workdir)
    assert biasaudit.plan(spec, ["model=scripted", *isolation(workdir)]).requests == 6


@pytest.mark.parametrize("name", ["a,b", "x=y", "crows_pairs_tp,crows_pairs_mlm", "has space", "q'uote", ""])
def test_a_spec_name_with_grammar_characters_is_one_line(name: str) -> None:
    with pytest.raises(biasaudit.BiasAuditError) as ei:
        biasaudit.validate(name, ["model=scripted"])
    text = str(ei.value)
    assert "\n" not in text and "is not a spec name" in text and "hint:" in text, text
