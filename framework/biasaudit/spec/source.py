"""Check an audit spec file before Hydra reads it: a spec is data, never code, and it
describes an audit, not the machine it runs on.

Hydra would act on parts of a spec merged at the config root: `hydra.callbacks` entries
are instantiated from `_target_` import paths (arbitrary code), a `defaults` list pulls
in other configs, and OmegaConf resolvers such as `oc.env` read the environment. A
`model:` block would choose where the operator's API key is sent, a `runtime:` block
where files are written. None of that belongs in an audit spec, so such files are
refused here with the file, the key path and the line. The same pass bounds the
document (size, nesting, alias expansion: `yaml_bounds`), gives YAML syntax errors with
line and column and catches duplicate keys (PyYAML keeps the last one silently; a
duplicated level name would drop a level).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from biasaudit._util.fileio import read_capped
from biasaudit.errors import SpecError
from biasaudit.spec import yaml_bounds
from biasaudit.spec.interp import HINT as INTERPOLATION_HINT
from biasaudit.spec.interp import interpolation_problem

TOP_LEVEL_REFUSED = {
    "hydra": "Hydra settings (callbacks, launchers, run folders) belong in conf/ or on the command line",
    "defaults": "choose config groups on the command line (model=..., judge=...), not in the spec",
}
# The operator's groups: which model is audited, where its key comes from and where it
# is sent, which judges and embedder run, where results are written and the resource
# limits. A spec only describes the audit; these come from conf/ and the command line.
OPERATOR_GROUPS = {
    "model": "the model under test is the operator's choice: model=<conf/model/...> or model.<key>=... "
             "on the command line",
    "judge": "the judge panel is the operator's choice: judge=<conf/judge/...> on the command line",
    "nli": "the NLI backend is the operator's choice: nli=<conf/nli/...> on the command line",
    "embedder": "the embedder is the operator's choice: embedder=<conf/embedder/...> on the command line",
    "runtime": "run-time settings (cache, reports folder, models folder, limits) are the operator's: "
               "runtime.<key>=... on the command line",
}
# Sections that are mappings (a list there would fail deep in Hydra's merge).
MAPPING_SECTIONS = ("audit", "stimuli", "factors", "design", "probe", "coding", "report", "validity")
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
            if not isinstance(knode, yaml.ScalarNode) or knode.tag == f"{_STANDARD_TAG}null":
                null = isinstance(knode, yaml.ScalarNode)
                raise SpecError(f"a key must be a name, not {'null' if null else 'a ' + knode.id} ({_where(knode)})",
                                file=file, key=path or "(root)",
                                hint="quote 'null' or '~' for that text" if null else "write each key as a plain name")
            key = str(knode.value)
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
            _check_scalar(knode, kpath, file, is_key=True)
            if key in INSTANTIATE_KEYS:
                raise SpecError(f"key {key!r} is not allowed ({_where(knode)})", file=file, key=kpath,
                                hint="specs name registered metrics, formats and coders; never Python import paths")
            _check_node(vnode, kpath, file, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_node(item, f"{path}[{i}]", file, seen)
    elif isinstance(node, yaml.ScalarNode):
        _check_scalar(node, path, file)


def _check_scalar(node: yaml.Node, path: str, file: str, is_key: bool = False) -> None:
    if not isinstance(node, yaml.ScalarNode):
        return
    text = str(node.value)
    if is_key and "${" in text:
        raise SpecError(f"an interpolation in a key is not allowed ({_where(node)})", file=file, key=path,
                        hint=INTERPOLATION_HINT)
    problem = interpolation_problem(text)
    if problem:
        raise SpecError(f"{problem} ({_where(node)})", file=file, key=path or "(root)", hint=INTERPOLATION_HINT)
    if any("\ud800" <= c <= "\udfff" for c in text):
        raise SpecError(f"text with an unpaired surrogate escape ({_where(node)})", file=file, key=path or "(root)",
                        hint="write the character itself, or a valid \\U escape")
    _check_yaml11(node, text, path, file)


def _check_yaml11(node: yaml.ScalarNode, text: str, path: str, file: str) -> None:
    """YAML 1.1 reads some plain words and numbers as another type than the one they look
    like: `yes`, `no`, `on`, `off` as true/false (a label `No` becomes False, a key `Yes:`
    becomes True), `1:30` as 5400 (base 60). Neither is coerced silently: a setting takes
    true or false, text is quoted."""
    if node.style is not None:  # quoted or a block scalar: text as written
        return
    if node.tag == f"{_STANDARD_TAG}bool" and text.lower() not in ("true", "false"):
        raise SpecError(f"{text!r} is read as {text.lower() in ('yes', 'on', 'y')} by YAML 1.1 ({_where(node)})",
                        file=file, key=path or "(root)",
                        hint=f"write true or false for a setting, or quote it ('{text}') for text")
    if node.tag in (f"{_STANDARD_TAG}int", f"{_STANDARD_TAG}float") and ":" in text:
        raise SpecError(f"{text!r} is read as a base-60 number by YAML 1.1 ({_where(node)})", file=file,
                        key=path or "(root)", hint=f"quote it ('{text}') for text, or write the number itself")


def check_yaml11_words(path: Path) -> None:
    """`_check_yaml11` on every scalar (keys too) of a YAML file other than a spec (a
    suite file), already read once within the bounds."""
    file = str(path)
    text = read_capped(path, yaml_bounds.MAX_BYTES, file=file, key="spec", what="YAML file").decode("utf-8-sig")
    root = yaml_bounds.compose(text, file)
    stack: list[tuple[yaml.Node, str]] = [(root, "")] if root is not None else []
    seen: set[int] = set()
    while stack:
        node, path_ = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            _check_yaml11(node, str(node.value), path_, file)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{path_}[{i}]") for i, item in enumerate(node.value))
        elif isinstance(node, yaml.MappingNode):
            for knode, vnode in node.value:
                key = _join(path_, str(knode.value) if isinstance(knode, yaml.ScalarNode) else "?")
                stack.extend([(knode, key), (vnode, key)])


def _root_keys(root: yaml.MappingNode) -> list[yaml.Node]:
    """The key nodes of the top-level mapping, those merged in with `<<:` included (a
    merged mapping may be an alias of one checked elsewhere, at another path)."""
    out: list[yaml.Node] = []
    stack: list[yaml.Node] = [root]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):  # `<<: [*a, *b]`
            stack.extend(node.value)
            continue
        if not isinstance(node, yaml.MappingNode):
            continue
        for knode, vnode in node.value:
            if isinstance(knode, yaml.ScalarNode) and knode.value == "<<":
                stack.append(vnode)
            else:
                out.append(knode)
    return out


def check_spec_file(path: Path) -> None:
    """Raise `SpecError` unless `path` is a UTF-8 YAML mapping that is safe to compose."""
    file = str(path)
    raw = read_capped(path, yaml_bounds.MAX_BYTES, file=file, key="spec", what="spec file",
                      size_hint="a spec describes an audit; keep large data in its stimuli file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(f"not UTF-8 text (invalid byte on line {line})", file=file, key="(file)",
                        hint="save the spec as UTF-8") from None
    root = yaml_bounds.compose(text, file)
    if root is None:
        raise SpecError("the spec file is empty", file=file, key="(file)",
                        hint="a spec is a mapping with audit, stimuli, probe and metrics")
    if not isinstance(root, yaml.MappingNode):
        raise SpecError(f"the spec must be a mapping of sections, not a {root.id} ({_where(root)})",
                        file=file, key="(root)", hint="start with `audit:`, `stimuli:`, `probe:`, `metrics:`")
    for knode in _root_keys(root):
        key = str(knode.value) if isinstance(knode, yaml.ScalarNode) else "?"
        why = TOP_LEVEL_REFUSED.get(key) or OPERATOR_GROUPS.get(key)
        if why:
            raise SpecError(f"a spec cannot set {key!r} ({_where(knode)})", file=file, key=key, hint=why)
    _check_node(root, "", file, set())
    for knode, vnode in root.value:  # a list for a section Hydra merges with a mapping: say which
        key = str(knode.value) if isinstance(knode, yaml.ScalarNode) else ""
        if key in MAPPING_SECTIONS and isinstance(vnode, yaml.SequenceNode):
            raise SpecError(f"`{key}` must be a mapping, not a list ({_where(vnode)})", file=file, key=key,
                            hint=f"write {key}: {{...}}; `biasaudit schema` shows each section")
