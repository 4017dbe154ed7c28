"""YAML parsed within bounds: a spec of a few hundred bytes must not hang or exhaust the
machine before anything checks it.

PyYAML shares an aliased node instead of copying it, but everything downstream (OmegaConf,
Hydra, Pydantic) copies: nine levels of ten aliases (the "billion laughs") become 10^9
nodes there. So the document's size *after* alias expansion is counted here, on the node
graph (each distinct node once, with memoised subtree sizes), before anyone expands it;
recursive aliases are refused; nesting depth and file size are bounded, and PyYAML's own
recursion on a deeply nested document is caught. The bounds are fixed: a spec describes
an audit, and anything near them (large stimulus lists) belongs in a data file.
"""

from __future__ import annotations

from typing import Any

import yaml

from biasaudit.errors import SpecError

MAX_BYTES = 8 * 2**20
MAX_NODES = 100_000
"""Scalars, mappings and sequences after alias expansion (keys count)."""
MAX_DEPTH = 64


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [x for kv in node.value for x in kv]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def check_expansion(root: yaml.Node, file: str) -> None:
    memo: dict[int, tuple[int, int]] = {}  # id -> (expanded size, height)
    active: set[int] = set()

    def walk(node: yaml.Node, depth: int) -> tuple[int, int]:
        if depth > MAX_DEPTH:
            raise _deep(node, file)
        got = memo.get(id(node))
        if got is not None:
            if depth + got[1] > MAX_DEPTH:
                raise _deep(node, file)
            return got
        if id(node) in active:
            raise SpecError(f"recursive YAML alias (line {node.start_mark.line + 1})", file=file, key="(file)",
                            hint="an alias may not refer to a node that contains it")
        active.add(id(node))
        size, height = 1, 0
        for child in _children(node):
            s, h = walk(child, depth + 1)
            size += s
            height = max(height, h + 1)
            if size > MAX_NODES:
                raise SpecError(f"the document expands to more than {MAX_NODES} nodes (YAML aliases repeat what "
                                f"they name; line {node.start_mark.line + 1})", file=file, key="(file)",
                                hint="use fewer aliases, or put large stimulus lists in a data file")
        active.discard(id(node))
        memo[id(node)] = (size, height)
        return size, height

    walk(root, 0)


def _deep(node: yaml.Node, file: str) -> SpecError:
    return SpecError(f"the document is nested more than {MAX_DEPTH} levels deep (line {node.start_mark.line + 1})",
                     file=file, key="(file)", hint="flatten the structure")


def compose(text: str, file: str) -> yaml.Node | None:
    """The YAML node graph of `text`, checked against the bounds; syntax errors name the
    line and column."""
    if len(text) > MAX_BYTES:
        raise SpecError(f"the file is {len(text)} characters long, over {MAX_BYTES}", file=file, key="(file)",
                        hint="put large stimulus lists in a data file (stimuli.source)")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise SpecError(f"the document is nested more than {MAX_DEPTH} levels deep", file=file, key="(file)",
                        hint="flatten the structure") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        raise SpecError(f"YAML syntax error at {where}: {exc.problem or exc.context}", file=file, key="(file)",
                        hint="check indentation, quoting and brackets near that line") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"YAML error: {str(exc).splitlines()[0]}", file=file, key="(file)",
                        hint="check the file is YAML") from None
    if root is not None:
        check_expansion(root, file)
    return root


def load(text: str, file: str) -> Any:
    """Python data from YAML text, within the bounds."""
    root = compose(text, file)
    if root is None:
        return None
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_document(root)
    except yaml.YAMLError as exc:
        raise SpecError(f"YAML error: {str(exc).splitlines()[0]}", file=file, key="(file)",
                        hint="check the file is YAML") from None
    finally:
        loader.dispose()
