"""`biasaudit verify audit.zip`: check an evidence pack written by `biasaudit pack`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from biasaudit.cli.command import bad_input, command_parser, unexpected_arguments
from biasaudit.errors import BiasAuditError, printable

DESCRIPTION = """Check an evidence pack: the SHA-256 of every file against MANIFEST.json (a
changed, removed or added file is named), the Ed25519 signature of MANIFEST.json (against
--public-key when given, else the packed MANIFEST.pub, which proves only integrity), and
the estimates and verdicts re-computed from the packed responses and cache rows with no
model call, through the same path as `biasaudit report`: they must be byte-identical to
the packed summary.json. The zip is untrusted input: unsafe member names, links, zip bombs
and oversized packs are refused, and nothing is extracted outside a temporary folder.
Exit code 0 when every check passes, 1 when any fails (one line per problem), 2 on bad
input (not a file, not a zip, an unsafe zip, a bad public key)."""


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = command_parser(sub, "verify", help="check an evidence pack: digests, signature, re-computed verdicts",
                       description=DESCRIPTION, epilog="example: biasaudit verify audit.zip --public-key pub.pem")
    p.add_argument("pack", metavar="PACK_ZIP", help="the evidence pack (.zip)")
    p.add_argument("--public-key", metavar="FILE",
                   help="the Ed25519 public key (PEM) the pack must be signed with")
    p.set_defaults(fn=cmd_verify)


def cmd_verify(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.runner.evidence.signing import read_public_key
    from biasaudit.runner.evidence.verify import verify_pack

    if (refused := unexpected_arguments("verify", rest)) is not None:
        return refused
    try:
        key = read_public_key(args.public_key) if args.public_key else None
        rep = verify_pack(Path(args.pack), key)
    except BiasAuditError as exc:
        return bad_input(exc)
    if rep.problems:
        for p in rep.problems:
            print(f"FAILED: {printable(p)}")  # names from the pack may hold any character
        print(f"verify: {args.pack}: {len(rep.problems)} problem(s)", file=sys.stderr)
        return 1
    for line in rep.lines:
        print(f"ok: {line}")
    print(f"verified: {args.pack}")
    return 0
