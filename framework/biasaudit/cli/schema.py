"""`biasaudit schema [spec|suite|config|plots]`: a JSON Schema on standard output (spec/schema.py
builds it)."""

from __future__ import annotations

import argparse

from biasaudit.cli.command import unexpected_arguments


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    sc = sub.add_parser("schema", help="print the JSON Schema of a spec file, a suite file or the run config",
                        description="Print a JSON Schema (draft 2020-12) to standard output: of a spec file "
                                    "(the default; for editors, as docs/schema/spec.schema.json), of a suite "
                                    "file, or of the composed run configuration (spec plus the operator's "
                                    "model, judge, nli, embedder and runtime groups).")
    sc.add_argument("kind", nargs="?", choices=["spec", "suite", "config", "plots"], default="spec",
                    help="spec (default), suite, config (with every registered backend's model config) or plots "
                         "(every registered plot kind's data)")
    sc.set_defaults(fn=cmd_schema)
    return sc


def cmd_schema(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.spec.schema import json_schema, schema_text

    if (refused := unexpected_arguments("schema", rest)) is not None:
        return refused
    print(schema_text(json_schema(args.kind)), end="")
    return 0


__all__ = ["add_parser", "cmd_schema"]
