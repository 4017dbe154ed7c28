"""`biasaudit schema [spec|suite|config|plots|<file kind>]`: a JSON Schema on standard output:
of a spec file, a suite file, the run config or the registered plot kinds (spec/schema.py
builds those), or of a file biasaudit writes for later reading at its current format version (records/formats.py;
committed under docs/schemas/<kind>/v<N>.json)."""

from __future__ import annotations

import argparse
from typing import Any

from biasaudit.cli.command import unexpected_arguments

INPUTS = ("spec", "suite", "config", "plots")
FILES = ("run-summary", "manifest", "responses", "codes", "jobs", "suite-summary", "compare", "pack",
         "annotation-sample")
"""records.formats.FORMATS (listed here so that `--help` does not import the records)."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    sc = sub.add_parser("schema", help="print the JSON Schema of a spec or suite file, the run config, "
                                       "or a file biasaudit writes",
                        description="Print a JSON Schema (draft 2020-12) to standard output: of a spec file "
                                    "(the default; for editors, as docs/schema/spec.schema.json), of a suite "
                                    "file, or of the composed run configuration (spec plus the operator's "
                                    "model, judge, nli, embedder and runtime groups, with every registered "
                                    "backend's model config), of the registered plot kinds' data; or of a file "
                                    "biasaudit writes, at the format version this biasaudit writes (docs/schemas/<kind>/"
                                    "v<N>.json; docs/file-formats.md): run-summary (summary.json), manifest, "
                                    "responses and codes (one line of the .jsonl trail), jobs (the sweep's "
                                    "ledger), suite-summary, compare (compare.json), pack (an evidence pack's "
                                    "MANIFEST.json), annotation-sample (an annotation sheet's "
                                    "<sheet>.sample.json).")
    sc.add_argument("kind", nargs="?", choices=[*INPUTS, *FILES], default="spec",
                    help="spec (default), suite, config (every registered backend's model config), plots "
                         "(every registered plot kind's data), or a file kind: " + ", ".join(FILES))
    sc.set_defaults(fn=cmd_schema)
    return sc


def file_schema(kind: str, *, shipped_only: bool = False) -> dict[str, Any]:
    """The schema of a file kind; a codes line's `detail` is one of the registered coders'
    evidence records (`shipped_only`: biasaudit's own coders, not plug-ins', as committed
    under docs/schemas/)."""
    from biasaudit.records.formats import format_schema

    if kind != "codes":
        return format_schema(kind)
    from biasaudit.registry import CODERS

    coders = [CODERS.get(n) for n in CODERS.names()]
    if shipped_only:  # a plug-in coder may reuse a shipped evidence record: filtered by the coder's own module
        coders = [c for c in coders if getattr(c.build, "__module__", "").startswith("biasaudit.")]
    evidence = list(dict.fromkeys(c.evidence for c in coders))  # each record once, in registration order
    return format_schema(kind, evidence)


def cmd_schema(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.spec.schema import json_schema, schema_text

    if (refused := unexpected_arguments("schema", rest)) is not None:
        return refused
    if args.kind in FILES:
        print(schema_text(file_schema(args.kind)), end="")
        return 0
    print(schema_text(json_schema(args.kind)), end="")
    return 0


__all__ = ["add_parser", "cmd_schema", "file_schema"]
