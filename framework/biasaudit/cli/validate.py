"""`biasaudit validate`: compose and check a spec (or a suite), load its data and render
every request, with no model loaded or called."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from biasaudit.cli.common import OVERRIDES_HELP, checked_overrides, fail, with_overrides
from biasaudit.errors import BiasAuditError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from biasaudit.spec import AuditConfig


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    v = sub.add_parser("validate", help="check a spec and its data without calling any model",
                       description="Compose and validate the spec, load its data and render every request; "
                                   "no model is loaded or called. The spec file may be given as is "
                                   "(`biasaudit validate path/to/spec.yaml`) or as spec=... . "
                                   "Exit code 0 when valid, 2 otherwise.",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=OVERRIDES_HELP)
    v.set_defaults(fn=cmd_validate)
    with_overrides(v)
    return v


def cmd_validate(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.plan.stream import count_plans
    from biasaudit.runner.pipeline import plan_inputs
    from biasaudit.spec.compose import compose

    try:
        from biasaudit.runner.pipeline import prepare
        from biasaudit.runner.suite import plan_jobs
        from biasaudit.spec.suite import load_suite

        rest = checked_overrides(rest, "validate")
        found = load_suite(list(rest))
        if found is not None:
            suite, path = found
            jobs = plan_jobs(suite, path, [ov for ov in rest if not ov.startswith("spec=")], False)
            for job in jobs:
                prepare(compose(job.overrides))
            print(f"ok: suite {path}: {len(suite.members)} member(s) x {len({j.subject for j in jobs})} subject(s), "
                  f"{len(jobs)} run(s) validated")
            return 0
        c = compose(list(rest))
        inp = plan_inputs(c)
        from biasaudit.runner.budget import check_budget

        check_budget(c.config, str(c.spec_file), c.choices.get("model"), inp.coding)  # as `run` refuses it
        counts = count_plans(c.config, inp.stimuli, [inp.identity], str(c.spec_file))  # renders every request
    except BiasAuditError as exc:
        return fail(exc)
    layers = f"{len(inp.coding.layers)} coding layer(s){' (defaults)' if inp.coding.defaults else ''}, "
    print(f"ok: {c.spec_file}: {len(counts.cells)} cell(s), {len(inp.stimuli.stimuli)} stimuli, "
          f"{counts.unique} requests, {layers}{len(c.config.metrics)} metric(s), "
          f"{len(c.config.thresholds)} threshold(s)")
    from biasaudit.cli.data import validate_line

    if (line := validate_line(inp.stimuli)) is not None:
        print(line)
    for line in design_lines(c.config, inp.params):
        print(line)
    return 0


def design_lines(cfg: AuditConfig, params: dict[str, BaseModel]) -> list[str]:
    """What a person should see before a run: each factor's level -> group table (a name
    put in the wrong group shows as "sarah: male") and a warning for each threshold band
    that claims parity without containing its estimate's no-bias value."""
    from biasaudit.runner.checks import level_groups, parity_warnings

    out = []
    for factor, groups in level_groups(cfg, params).items():
        out.append(f"groups of factor {factor} (level: group): "
                   + ", ".join(f"{level}: {group}" for level, group in groups.items()))
    out += [f"warning: {w}" for w in parity_warnings(cfg, params)]
    return out


__all__ = ["add_parser", "cmd_validate", "design_lines"]
