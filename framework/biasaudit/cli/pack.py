"""`biasaudit pack RUN_OR_SUITE -o audit.zip`: the evidence pack of a finished run or suite."""

from __future__ import annotations

import argparse
from pathlib import Path

from biasaudit.cli.command import bad_input, command_parser, unexpected_arguments
from biasaudit.errors import BiasAuditError

DESCRIPTION = """Bundle a finished run (or every member run of a suite) into one zip for an
outside reviewer: the report (HTML, and PDF when the run has one or headless Chromium can
render it), the spec as run, the resolved config, the stimulus data and its SHA-256, the
model identities (weights' digests), the installed package versions, the responses and
codes, the cache rows the estimates are computed from, the self-test (--selftest), a
crosswalk page (CROSSWALK.md: which EU AI Act Annex IV point and NIST AI RMF subcategory
each file serves) and MANIFEST.json with the SHA-256 of every file; optionally an Ed25519
signature of MANIFEST.json (MANIFEST.sig, public key in MANIFEST.pub).

Before writing, the pack is re-computed from its own contents with no model call and must
give the run's estimates and verdicts byte for byte (what `biasaudit verify` checks). API
keys named by the config (`api_key_env`) and the signing key never land in the pack, in
any encoding. The output is written atomically and an existing file is kept unless --force.
Exit code 0 when written, 2 on bad input (nothing written)."""

EPILOG = """examples:
  biasaudit pack reports/crows-pairs-tp/20261122-101500-000000 -o audit.zip
  biasaudit pack reports/my-suite/20261122-101500-000000 -o suite.zip --selftest
  biasaudit pack RUN -o audit.zip --sign-key key.pem        (openssl genpkey -algorithm ed25519 -out key.pem)
  biasaudit pack RUN -o audit.zip --sign-key-env AUDIT_SIGNING_KEY
then: biasaudit verify audit.zip --public-key pub.pem      (openssl pkey -in key.pem -pubout -out pub.pem)"""


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = command_parser(sub, "pack", help="bundle a finished run or suite into a signed, verifiable evidence zip",
                       description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("source", metavar="RUN_OR_SUITE", help="a run folder (reports/<audit>/<run>) or a suite folder")
    p.add_argument("-o", "--output", required=True, metavar="ZIP", help="the evidence pack to write (e.g. audit.zip)")
    p.add_argument("--force", action="store_true", help="replace the output file if it exists")
    key = p.add_mutually_exclusive_group()
    key.add_argument("--sign-key", metavar="FILE", help="sign with this Ed25519 private key (PEM, unencrypted)")
    key.add_argument("--sign-key-env", metavar="VAR", help="sign with the Ed25519 private key (PEM) held in this "
                                                           "environment variable")
    p.add_argument("--selftest", action="store_true",
                   help="run the spec's self-test (oracle responders, no model) and include its results")
    p.set_defaults(fn=cmd_pack)


def cmd_pack(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.runner.evidence.build import build_pack
    from biasaudit.runner.evidence.signing import load_signing_key

    if (refused := unexpected_arguments("pack", rest)) is not None:
        return refused
    try:
        key = load_signing_key(args.sign_key, args.sign_key_env)
        res = build_pack(Path(args.source), Path(args.output), force=args.force, key=key, selftest=args.selftest)
    except BiasAuditError as exc:
        return bad_input(exc, redacted=True)  # the signing key may be in the message
    for line in res.checks:
        print(f"self-check (what `biasaudit verify` checks): {line}")
    for note in res.notes:
        print(f"note: {note}")
    signed = f", signed by key sha256:{res.fingerprint[:16]}..." if res.fingerprint else ", not signed"
    print(f"wrote {res.path}: {res.files} files, {res.size} bytes, {len(res.runs)} run(s){signed}")
    print(f"check it with: biasaudit verify {res.path}" + (" --public-key PUB.pem" if res.fingerprint else ""))
    return 0
