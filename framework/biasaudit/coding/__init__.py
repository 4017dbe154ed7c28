"""Coders: turn responses into labels (selection rules; judge panels follow)."""

from .selection import (
    FREE_TEXT_TASKS,
    SELECTION_TASKS,
    Selection,
    code_selection,
    from_parser,
    label_for,
    parser_prompt,
    strip_marker,
)

__all__ = [
    "FREE_TEXT_TASKS",
    "SELECTION_TASKS",
    "Selection",
    "code_selection",
    "from_parser",
    "label_for",
    "parser_prompt",
    "strip_marker",
]
