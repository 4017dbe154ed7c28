"""Check an audit spec file before Hydra reads it: a spec is data, never code.

Hydra would act on parts of a spec merged at the config root: `hydra.callbacks` entries
are instantiated from `_target_` import paths (arbitrary code), a `defaults` list pulls
in other configs, and OmegaConf resolvers such as `oc.env` read the environment. None of
that belongs in an audit spec, so such files are refused here with the file, the key
path and the line. The same pass gives YAML syntax errors with line and column and
catches duplicate keys (PyYAML keeps the last one silently; a duplicated level name
would drop a level).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ..errors import SpecError

# Interpolations a spec may use are plain references to other keys (`${probe.system}`).
# A resolver call (`${name:...}`) could pull in environment variables (API keys), files
# or run-time values, so every resolver is refused.
RESOLVER = re.compile(r"\$\{\s*([A-Za-z_][\w.-]*)\s*:")

TOP_LEVEL_REFUSED = {
    "hydra": "Hydra settings (callbacks, launchers, run folders) belong in conf/ or on the command line",
    "defaults": "choose config groups on the command line (model=..., judge=...), not in the spec",
}
# Keys Hydra's `instantiate` reads as import paths or call arguments.
INSTANTIATE_KEYS = {"_target_", "_partial_", "_args_", "_recursive_", "_convert_"}
_STANDARD_TAG = "tag:yaml.org,2002:"
_PLAIN_TAGS = {f"{_STANDARD_TAG}{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq", "merge",
                                                "timestamp", "value")}


def _where(node: yaml.Node) -> str:
    m = node.start_mark
    return f"line {m.line + 1}, column {m.column + 1}"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check_node(node: yaml.Node, path: str, file: str, seen: set[int]) -> None:
    if id(node) in seen:  # an alias to a node already checked (and no exponential walk)
        return
    seen.add(id(node))
    if node.tag not in _PLAIN_TAGS:
        raise SpecError(f"YAML tag {node.tag!r} is not allowed ({_where(node)})", file=file, key=path or "(root)",
                        hint="specs are plain data: remove the !tag")
    if isinstance(node, yaml.MappingNode):
        first: dict[str, yaml.Node] = {}
        for knode, vnode in node.value:
            key = str(knode.value) if isinstance(knode, yaml.ScalarNode) else "?"
            if key == "<<":  # a merge key: its mapping is checked as a value
                _check_node(vnode, path, file, seen)
                continue
            kpath = _join(path, key)
            if key in first:
                raise SpecError(
                    f"duplicate key {key!r} ({_where(knode)}; first at line {first[key].start_mark.line + 1})",
                    file=file, key=kpath, hint="give each key (factor, level, metric option) once",
                )
            first[key] = knode
            if key in INSTANTIATE_KEYS:
                raise SpecError(f"key {key!r} is not allowed ({_where(knode)})", file=file, key=kpath,
                                hint="specs name registered metrics, formats and coders; never Python import paths")
            if not path and key in TOP_LEVEL_REFUSED:
                raise SpecError(f"a spec cannot set {key!r} ({_where(knode)})", file=file, key=key,
                                hint=TOP_LEVEL_REFUSED[key])
            _check_node(vnode, kpath, file, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_node(item, f"{path}[{i}]", file, seen)
    elif isinstance(node, yaml.ScalarNode):
        m = RESOLVER.search(str(node.value))
        if m:
            raise SpecError(
                f"interpolation resolver {m.group(1)!r} is not allowed ({_where(node)})",
                file=file, key=path or "(root)",
                hint="use plain ${other.key} references; secrets come only from api_key_env",
            )


def check_spec_file(path: Path) -> None:
    """Raise `SpecError` unless `path` is a UTF-8 YAML mapping that is safe to compose."""
    file = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SpecError("spec file not found", file=file, key="spec", hint="check the path") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(f"not UTF-8 text (invalid byte on line {line})", file=file, key="(file)",
                        hint="save the spec as UTF-8") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        raise SpecError(f"YAML syntax error at {where}: {exc.problem or exc.context}", file=file, key="(file)",
                        hint="check indentation, quoting and brackets near that line") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"YAML error: {str(exc).splitlines()[0]}", file=file, key="(file)",
                        hint="check the file is YAML") from None
    if root is None:
        raise SpecError("the spec file is empty", file=file, key="(file)",
                        hint="a spec is a mapping with audit, stimuli, probe and metrics")
    if not isinstance(root, yaml.MappingNode):
        raise SpecError(f"the spec must be a mapping of sections, not a {root.id} ({_where(root)})",
                        file=file, key="(root)", hint="start with `audit:`, `stimuli:`, `probe:`, `metrics:`")
    _check_node(root, "", file, set())
