"""An evidence pack's MANIFEST.json (`records.evidence.PackManifest`), version by version.
The version is in its `format` string, `biasaudit-evidence-pack/<N>`, as packs have
always said it.

1. `biasaudit-evidence-pack/1`: written before the run's files carried versions: its
   trail/responses.jsonl and trail/codes.jsonl have no header (tests/fixtures/format_v1).
2. `biasaudit-evidence-pack/2`: each packed file says its own version (a trail's header,
   `_util.trail.header`, a JSON file's `format_version`), read by `biasaudit verify`
   through records/upgrade. MANIFEST.json lists files as before.

The signature is over MANIFEST.json's bytes as written: `biasaudit verify` checks it on
those bytes and upgrades only what it then reads."""

from __future__ import annotations

import re

from biasaudit.records.json import JSONObject

CURRENT = 2
PREFIX = "biasaudit-evidence-pack/"
_FORMAT = re.compile(r"^biasaudit-evidence-pack/([1-9][0-9]{0,5})$")


def version_of(raw: JSONObject) -> int:
    """N of `format: biasaudit-evidence-pack/N` (another value: left to the record's check)."""
    value = raw.get("format")
    m = _FORMAT.match(value) if isinstance(value, str) else None
    return int(m.group(1)) if m else 1


def _trail_headers(raw: JSONObject) -> JSONObject:
    """1 -> 2: MANIFEST.json's keys are unchanged; the version says the trails have headers."""
    if raw.get("format", f"{PREFIX}1") != f"{PREFIX}1":  # not a pack's format: left for the record to refuse
        return raw
    return {**raw, "format": f"{PREFIX}2"}


STEPS = {1: _trail_headers}
