"""Steps several kinds share (a module whose name starts with `_` is not a file kind)."""

from __future__ import annotations

from biasaudit.records.json import JSONObject


def header_added(raw: JSONObject) -> JSONObject:
    """A trail's 1 -> 2: the file gained its header record; a line is as it was."""
    return raw


def optional_group_added(raw: JSONObject) -> JSONObject:
    """A JSON file's 1 -> 2 when estimates gained their optional typed `group`: every key of
    a format-1 file is still read (its estimates have no group), and the record then holds
    today's layout."""
    return {**raw, "format_version": 2}
