"""`biasaudit init DIR [--template KIND] [--force]`: scaffold an audit project from a
template per method kind (cli/scaffold/)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from biasaudit.cli.command import command_parser, unexpected_arguments
from biasaudit.cli.scaffold import DEFAULT, SPEC_NAME, TEMPLATES, init_project, template_lines


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    it = command_parser(
        sub, "init", help="scaffold a new audit project (spec, sample data, README) in a folder",
        description="Write an audit spec, a small synthetic sample in the published format its method "
                    "reads, a README and the editor schema into DIR; run it from there with "
                    "`biasaudit run spec=./audit.yaml`. Every template validates and passes "
                    "`biasaudit selftest` as written. Templates (--template):\n"
                    + "\n".join(f"  {line}" for line in template_lines()))
    it.add_argument("dir", nargs="?", help="the folder to create (must be new or empty unless --force)")
    it.add_argument("-t", "--template", default=DEFAULT, metavar="KIND",
                    help=f"the method kind: {', '.join(TEMPLATES)} (default: {DEFAULT})")
    it.add_argument("--list-templates", action="store_true", help="list the templates and exit")
    it.add_argument("--force", action="store_true",
                    help="write into a folder that already holds files (files of the same name are replaced)")
    it.set_defaults(fn=cmd_init)
    return it


def cmd_init(args: argparse.Namespace, rest: list[str]) -> int:
    if (refused := unexpected_arguments("init", rest)) is not None:
        return refused
    if args.list_templates:
        for line in template_lines():
            print(line)
        return 0
    if args.dir is None:
        print("error: init: give the folder to create, e.g. `biasaudit init my-audit` "
              "(hint: `biasaudit init --list-templates` lists the templates)", file=sys.stderr)
        return 2
    dest = Path(args.dir)
    for f in init_project(dest, args.template, force=args.force):  # a BiasAuditError: main prints one line, exit 2
        print(f"wrote {f}")
    print(f"next: cd {shlex.quote(str(dest))} && biasaudit selftest spec=./{SPEC_NAME} && biasaudit run spec=./{SPEC_NAME}")
    return 0
