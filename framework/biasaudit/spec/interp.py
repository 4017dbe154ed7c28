"""Which `${...}` interpolations an audit config may hold: plain references to other keys.

A resolver (`${oc.env:VAR}`, `${oc.decode:...}`, `${hydra:...}`, any resolver a plugin
registers) could read the environment, files or run-time values, and a computed key
(`${${a}}`, `${oc.${a}:X}`) could assemble a resolver call from parts, so every
interpolation is parsed with OmegaConf's own grammar (the parser it resolves with) and
refused unless each `${...}` in it is a literal key path. This runs on spec files, on
command-line overrides and on the composed config, always before OmegaConf resolves
anything. An escaped `\\${...}` is text, not an interpolation, and stays allowed.
"""

from __future__ import annotations

import re
from typing import Any

from omegaconf import grammar_parser
from omegaconf.errors import GrammarParseError
from omegaconf.grammar.gen.OmegaConfGrammarParser import OmegaConfGrammarParser as G

from biasaudit.errors import SpecError

_SURROGATE = re.compile("[\ud800-\udfff]")
HINT = "use plain ${other.key} references (write \\${ for a literal ${); secrets come only from api_key_env"


def interpolation_problem(text: str) -> str | None:
    """Why `text` may not be used, or None when it holds no interpolation other than
    plain key references."""
    if "${" not in text:
        return None
    try:
        tree = grammar_parser.parse(text)
    except GrammarParseError as exc:
        return f"malformed interpolation ({str(exc).splitlines()[0][:80]})"
    except RecursionError:
        return "interpolation nested too deeply"
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, G.InterpolationResolverContext):
            return f"interpolation resolver {node.resolverName().getText()[:80]!r} is not allowed"
        if isinstance(node, G.InterpolationNodeContext):
            for key in node.configKey():
                if key.interpolation() is not None:
                    return f"computed interpolation key {key.getText()[:80]!r} is not allowed"
        stack.extend(node.getChildren() if hasattr(node, "getChildren") else [])
    return None


def check_text(text: str, *, file: str | None, key: str, where: str = "") -> None:
    problem = interpolation_problem(text)
    if problem:
        raise SpecError(problem + (f" ({where})" if where else ""), file=file, key=key or "(root)", hint=HINT)


def check_tree(node: Any, path: str, file_of: Any) -> None:
    """Every key and string of a plain container (from `OmegaConf.to_container(resolve=False)`):
    no resolver, no computed key, no unpaired surrogate (an undecodable command-line byte or
    a `\ud800` escape, which no report or store can encode). `file_of(key path)` names the
    file a key came from."""
    stack: list[tuple[Any, str]] = [(node, path)]
    while stack:
        x, p = stack.pop()
        if isinstance(x, dict):
            for k, v in x.items():
                kp = f"{p}.{k}" if p else str(k)
                if isinstance(k, str) and "${" in k:
                    raise SpecError("an interpolation in a key is not allowed", file=file_of(kp), key=kp, hint=HINT)
                stack.append((v, kp))
        elif isinstance(x, list):
            stack.extend((v, f"{p}[{i}]") for i, v in enumerate(x))
        elif isinstance(x, str):
            check_text(x, file=file_of(p), key=p)
            if _SURROGATE.search(x):
                raise SpecError("text with an unpaired surrogate (an undecodable byte or a \\ud800 escape)",
                                file=file_of(p), key=p, hint="give the value as valid UTF-8 text")


def override_values(value: Any) -> list[str]:
    """Every string inside a parsed Hydra override value (lists, dicts, sweeps)."""
    out: list[str] = []
    stack = [value]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, list | tuple):
            stack.extend(x)
        elif hasattr(x, "list"):  # ChoiceSweep
            stack.extend(x.list)
        elif hasattr(x, "include"):  # Glob
            stack.extend([*x.include, *x.exclude])
    return out
