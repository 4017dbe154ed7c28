"""docs/planning-an-audit.md shows commands and their real output. The commands must stay
valid as the CLI changes: each `biasaudit ...` line of the page is parsed by the real
argument parser (no unknown flag left over, exactly as `biasaudit` itself refuses one),
and the Hydra overrides of `run` and `plan` are composed and validated into the audit
config, so a renamed key, a bad value or a spec that no longer ships fails here. The page's
links must resolve (docs/tools/check_links.py). The runs themselves call the real
model (not here); the figures were pasted from those runs."""

from __future__ import annotations

import importlib.util
import re
import shlex

import pytest

from biasaudit.cli.app import build_parser
from biasaudit.cli.common import positional_spec
from biasaudit.spec.compose import compose, prepare_overrides
from tests.helpers import REPO

PAGE = REPO / "docs" / "planning-an-audit.md"
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


def page_commands() -> list[str]:
    """Every line of a fenced block that is a `biasaudit` command (with or without `$ `)."""
    out = []
    for block in FENCED.findall(PAGE.read_text(encoding="utf-8")):
        for line in block.splitlines():
            line = line.removeprefix("$ ").strip()
            if line.startswith("biasaudit "):
                out.append(line)
    return out


COMMANDS = page_commands()


def test_the_page_shows_the_whole_flow() -> None:
    verbs = [shlex.split(c)[1] for c in COMMANDS]
    # pilot run -> power plan -> full sequential run -> pack -> verify, in that order
    for a, b in [("run", "plan"), ("plan", "pack"), ("pack", "verify")]:
        assert verbs.index(a) < verbs.index(b), verbs
    assert any("runtime.sequential.look_every=" in c for c in COMMANDS if shlex.split(c)[1] == "run")
    assert any("--power" in c and "--pilot" in c for c in COMMANDS)


def test_each_step_uses_the_previous_steps_output() -> None:
    """The flow is one audit: power reads the pilot's run folder, pack packs the
    sequential run's folder (each as printed on its `report:` line), verify checks that zip."""
    text = PAGE.read_text(encoding="utf-8")
    reports = [r.rsplit("/", 1)[0] for r in re.findall(r"^report: (\S+)$", text, re.M)]
    argv = [shlex.split(c) for c in COMMANDS]
    pilot = next(a[a.index("--pilot") + 1] for a in argv if "--pilot" in a)
    pack = next(a for a in argv if a[1] == "pack")
    verify = next(a for a in argv if a[1] == "verify")
    runs = [a for a in argv if a[1] == "run"]
    assert "+stimuli.sample.n=15" in runs[0] and "runtime.sequential.look_every=10" in runs[1]
    assert pilot == reports[0], (pilot, reports)
    assert pack[2] == reports[1], (pack, reports)
    assert verify[2] == pack[pack.index("-o") + 1]
    models = {x for a in argv if "spec=crows_pairs_tp" in a for x in a if x.startswith("model=")}
    assert models == {"model=smollm2_fair"}  # one model throughout


@pytest.mark.parametrize("line", COMMANDS, ids=[f"{i}:{c.split()[1]}" for i, c in enumerate(COMMANDS)])
def test_every_command_parses_and_composes(line: str) -> None:
    argv = shlex.split(line)[1:]
    args, rest = build_parser().parse_known_args(argv)
    assert args.command is not None
    assert not [a for a in rest if a.startswith("-")], f"unknown flags in: {line}"
    if args.command in ("run", "plan"):
        composed = compose(prepare_overrides(positional_spec(rest, args.command)))
        assert composed.config.audit.name  # the spec composed and validated
    else:  # pack and verify take a path and flags only: nothing may be left over
        assert rest == [], f"unexpected arguments in: {line}"


def test_a_bad_command_is_caught() -> None:
    """The check above can fail: a misspelt flag and a misspelt key are refused."""
    _, rest = build_parser().parse_known_args(["plan", "spec=crows_pairs_tp", "--powr"])
    assert "--powr" in rest
    with pytest.raises(Exception, match="look_evry"):
        compose(prepare_overrides(["spec=crows_pairs_tp", "runtime.sequential.look_evry=10"]))


def test_links_resolve() -> None:
    spec = importlib.util.spec_from_file_location("check_links", REPO / "docs" / "tools" / "check_links.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.check(PAGE) == []
    assert "planning-an-audit.md" in (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    assert "planning-an-audit.md" in (REPO / "docs" / "getting-started.md").read_text(encoding="utf-8")
