"""Every code block in README.md and docs/ that shows Python, a spec or a config is
checked by this test (issue 40, section 2: "every code block in docs/ that shows Python or
a spec is executed by a test, marked otherwise where it cannot run, with the reason").

A block says how it is checked in an HTML comment on the line before its fence:

    <!-- docblock: run -->                 Python, run as written in a fresh interpreter
    <!-- docblock: spec specs/x.yaml -->   that shipped spec, abridged: every key the block
                                           gives has the file's value (lists: the same items),
                                           keys left out aside; and the file validates
    <!-- docblock: excerpt FILE -->        the same check against any YAML file, or for
                                           Python and TOML: every line of the block is in FILE
    <!-- docblock: merge specs/x.yaml [OVERRIDE...] -->
                                           a spec fragment: its sections replace those of the
                                           shipped spec, and the result validates (with
                                           model=scripted and the overrides given)
    <!-- docblock: model-config [SPEC] --> a model config group file: a spec validates with it
                                           (crows_pairs_tp, or the shipped SPEC named)
    <!-- docblock: suite -->               a suite file: it validates
    <!-- docblock: keys MODULE:CLASS -->   JSON whose keys (and its lists' objects' keys) are
                                           fields of that record
    <!-- docblock: skip REASON -->         not run, for the reason given (still parsed)

An unmarked python/yaml/toml/json block, or an unlabelled block that looks like one, fails
with the file and line to mark.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

import biasaudit
from tests.helpers import operator_conf

ROOT = Path(__file__).resolve().parents[3]
SPECS = ROOT / "specs"
FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
MARK = re.compile(r"<!--\s*docblock:\s*([\w-]+)\s*(.*?)\s*-->\s*$")
CHECKED = {"python", "py", "yaml", "yml", "toml", "json"}
# An unlabelled block starting like this is Python or a spec and must say so.
LOOKS_LIKE = re.compile(r"^(audit|stimuli|probe|metrics|thresholds|coding|suite|reliability):|^(import |from \S+ import |class |def )")


@dataclass(frozen=True)
class Block:
    file: Path
    line: int
    lang: str
    body: str
    mark: str
    arg: str
    root: Path = ROOT

    @property
    def where(self) -> str:
        return f"{self.file.relative_to(self.root)}:{self.line}"


def _blocks(root: Path = ROOT) -> list[Block]:
    out = []
    for f in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
        if not f.is_file():
            continue
        text = f.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            mark = MARK.search(before)
            out.append(Block(file=f, line=text[:m.start()].count("\n") + 1, lang=m.group(1).lower(), body=m.group(2),
                             mark=mark.group(1) if mark else "", arg=mark.group(2) if mark else "", root=root))
    return out


def _fence_lines(root: Path = ROOT) -> int:
    """Lines that open or close a fence, however indented or labelled (``` or ~~~)."""
    files = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    return sum(1 for f in files if f.is_file() for ln in f.read_text(encoding="utf-8").splitlines()
               if re.match(r"^\s*(```|~~~)", ln))


def _problems(blocks: list[Block]) -> list[str]:
    checked = [b for b in blocks if b.lang in CHECKED]
    unmarked = [f"{b.where}: a ```{b.lang} block with no `<!-- docblock: ... -->` line before it" for b in checked
                if not b.mark]
    unlabelled = [f"{b.where}: looks like Python or a spec: label the fence (```python / ```yaml) and mark it"
                  for b in blocks if not b.lang and LOOKS_LIKE.search(b.body)]
    known = {"run", "spec", "excerpt", "merge", "model-config", "suite", "keys", "skip"}
    bad = [f"{b.where}: unknown docblock kind {b.mark!r}" for b in checked if b.mark and b.mark not in known]
    bad += [f"{b.where}: `skip` needs its reason" for b in checked if b.mark == "skip" and len(b.arg) < 10]
    return unmarked + unlabelled + bad


BLOCKS = _blocks()
MARKED = [b for b in BLOCKS if b.lang in CHECKED]


def test_every_python_spec_or_config_block_is_marked() -> None:
    problems = _problems(BLOCKS)
    assert not problems, "\n".join(problems)
    assert len(MARKED) >= 25  # the finder still finds the docs' blocks
    # nothing escapes the finder: every fence line of the docs opens or closes a found block
    # (an indented, ~~~ or attribute-labelled fence would be missed, or pair the wrong lines)
    assert _fence_lines() == 2 * len(BLOCKS)


def test_the_check_fails_on_a_block_without_its_mark(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("<!-- docblock: run -->\n```python\nprint(1)\n```\n", encoding="utf-8")
    assert _problems(_blocks(tmp_path)) == []
    (tmp_path / "docs" / "x.md").write_text(
        "text\n\n```python\nimport biasaudit\n```\n\n```\naudit:\n  name: a\n```\n\n"
        "<!-- docblock: skip why -->\n```yaml\na: 1\n```\n\n<!-- docblock: bogus -->\n```json\n{}\n```\n",
        encoding="utf-8")
    found = _problems(_blocks(tmp_path))
    assert [p.split(": ", 1)[0] for p in found] == ["docs/x.md:3", "docs/x.md:7", "docs/x.md:18", "docs/x.md:13"], found
    assert _fence_lines(tmp_path) == 2 * len(_blocks(tmp_path))


def _parse(b: Block) -> object:
    if b.lang in ("yaml", "yml"):
        return yaml.safe_load(b.body)
    if b.lang == "json":
        return json.loads(b.body)
    if b.lang == "toml":
        return tomllib.loads(b.body)
    if b.mark != "excerpt":  # an excerpt may be part of a statement
        compile(b.body, b.where, "exec")
    return None


@pytest.mark.parametrize("block", MARKED, ids=[b.where for b in MARKED])
def test_block(block: Block, tmp_path: Path) -> None:
    data = _parse(block)  # every block at least parses, skipped ones included
    if block.lang == "toml" and isinstance(data, dict):  # a plugin's entry point names the registry's group
        from biasaudit.registry import PLUGIN_GROUP

        groups = set(data.get("project", {}).get("entry-points", {}))
        assert groups <= {PLUGIN_GROUP}, f"{block.where}: entry-point group {groups} is not {PLUGIN_GROUP!r}"
    kind, arg = block.mark, block.arg
    if kind in ("", "skip"):
        return
    if kind == "run":
        _run_python(block, tmp_path)
    elif kind == "spec":
        _excerpt(block, data, ROOT / arg)
        biasaudit.validate(ROOT / arg, ["model=scripted"])
    elif kind == "excerpt":
        _excerpt(block, data, ROOT / arg)
    elif kind == "merge":
        assert isinstance(data, dict)
        path, *overrides = arg.split()
        base = yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))
        _validate({**base, **data}, ROOT / path, tmp_path, overrides)
    elif kind == "model-config":
        assert isinstance(data, dict)
        conf = operator_conf(tmp_path, model=data)
        biasaudit.validate(ROOT / arg if arg else SPECS / "crows_pairs_tp.yaml", conf)  # arg: a spec it fits
    elif kind == "suite":
        assert isinstance(data, dict) and "suite" in data
        _validate(data, SPECS / "default_suite.yaml", tmp_path, model=None)  # its own subjects
    elif kind == "keys":
        module, _, cls = arg.partition(":")
        model = getattr(importlib.import_module(module), cls)
        assert isinstance(data, dict)
        _keys_are_fields(block, data, model)


def _validate(spec: dict, beside: Path, tmp: Path, overrides: list[str] | None = None,
              model: str | None = "scripted") -> None:
    """Validate `spec` as if it sat beside `beside` (its relative data paths resolve)."""
    folder = tmp / "specs"
    folder.mkdir()
    for entry in beside.parent.iterdir():
        if entry.is_dir():
            (folder / entry.name).symlink_to(entry)
    path = folder / beside.name
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    given = list(overrides or [])
    if model is not None and not any(o.startswith("model=") for o in given):
        given.insert(0, f"model={model}")
    biasaudit.validate(path, given)


def _abridged(given: object, full: object, where: str) -> list[str]:
    """Where `given` (a block) differs from `full` (the file): a key the block gives with
    another value, a list of another length; keys the block leaves out do not count."""
    if isinstance(given, dict):
        if not isinstance(full, dict):
            return [f"{where}: a mapping in the docs, {type(full).__name__} in the file"]
        out = []
        for k, v in given.items():
            out += [f"{where}.{k}: not in the file"] if k not in full else _abridged(v, full[k], f"{where}.{k}")
        return out
    if isinstance(given, list):
        if not isinstance(full, list) or len(full) != len(given):
            return [f"{where}: {given!r} in the docs, {full!r} in the file"]
        return [p for i, (a, b) in enumerate(zip(given, full, strict=True)) for p in _abridged(a, b, f"{where}[{i}]")]
    return [] if given == full else [f"{where}: {given!r} in the docs, {full!r} in the file"]


def _excerpt(block: Block, data: object, source: Path) -> None:
    text = source.read_text(encoding="utf-8")
    if block.lang in ("yaml", "yml") and data is not None:
        problems = _abridged(data, yaml.safe_load(text), "")
        assert not problems, f"{block.where}: not as in {source.relative_to(ROOT)}: " + "; ".join(problems)
        return
    lines = {ln.strip() for ln in text.splitlines()}
    missing = [ln for ln in block.body.splitlines() if ln.strip() and ln.strip() not in lines]
    assert not missing, f"{block.where}: not in {source.relative_to(ROOT)}: {missing}"


def _keys_are_fields(block: Block, data: dict, model: type) -> None:
    fields = model.model_fields  # type: ignore[attr-defined]
    unknown = sorted(set(data) - set(fields))
    assert not unknown, f"{block.where}: {unknown} are not fields of {model.__name__}"
    for key, value in data.items():
        inner = fields[key].annotation
        args = getattr(inner, "__args__", ())
        sub = next((a for a in args if hasattr(a, "model_fields")), None)
        if isinstance(value, list) and sub is not None:
            for item in value:
                _keys_are_fields(block, item, sub)


# Further checks of a `run` block, by the heading it sits under: what its text promises.
AFTER_RUN = {
    "## Adding an NLI classifier or an embedder": textwrap.dedent("""
        import biasaudit
        from pathlib import Path
        conf = Path("conf").resolve()
        (conf / "nli").mkdir(parents=True)
        (conf / "nli" / "negation.yaml").write_text("backend: negation_nli\\nname: negation-rule\\n")
        (conf / "nli" / "typo.yaml").write_text("backend: negation_nli\\nname: n\\nnegation: [not]\\n")
        search = f"hydra.searchpath=[biasaudit-specs://specs,file://{conf}]"
        v = biasaudit.validate(Path(SPECS, "winoqueer_nli.yaml"), [search, "nli=negation"])
        print("validated", v)
        try:
            biasaudit.validate(Path(SPECS, "winoqueer_nli.yaml"), [search, "nli=typo"])
        except biasaudit.BiasAuditError as exc:
            print("refused", exc)
            assert "nli.negation: unknown key" in str(exc), exc
        else:
            raise SystemExit("a misspelt NLI option validated")
        # the NLI kind answers; the embedder's rows reach the embedding cache
        from pydantic import TypeAdapter
        from biasaudit.backends.embedder import Embedder
        from biasaudit.spec import EmbedderConfig, NLIConfig
        nli = TypeAdapter(NLIConfig).validate_python({"backend": "negation_nli", "name": "n"})
        got = []
        NLI_KINDS.get("negation_nli").build(nli, None).execute(
            [Request(key="k", kind="classify_nli", text="Ann is not here.", text_pair="Ann is here.")], got.append)
        assert got[0].output["probs"]["contradiction"] == 0.8, got
        emb = Embedder(TypeAdapter(EmbedderConfig).validate_python({"backend": "letter_counts", "name": "l"}),
                       "cache.sqlite")
        vec = emb.embed(["ab", "ab", "ba"])
        assert emb.calls == 2 and abs(float(vec[0] @ vec[2]) - 1) < 1e-6, vec
    """),
    "## Adding a coder": textwrap.dedent("""
        import yaml, biasaudit
        from pathlib import Path
        spec = yaml.safe_load(Path(SPECS, "refusal_stance.yaml").read_text())
        spec["coding"]["length"] = {"coder": "my_coder", "threshold": 30}
        folder = Path("specs"); folder.mkdir()
        for entry in Path(SPECS).iterdir():
            if entry.is_dir():
                (folder / entry.name).symlink_to(entry)
        (folder / "with_coder.yaml").write_text(yaml.safe_dump(spec))
        v = biasaudit.validate(folder / "with_coder.yaml", ["model=scripted"])
        print("validated", v)
        spec["coding"]["length"]["treshold"] = 30   # a misspelt option is refused
        (folder / "typo.yaml").write_text(yaml.safe_dump(spec))
        try:
            biasaudit.validate(folder / "typo.yaml", ["model=scripted"])
        except biasaudit.BiasAuditError as exc:
            print("refused", exc)
        else:
            raise SystemExit("a misspelt coder option validated")
        # the coder's evidence is its own record, and a stored line reads back into it
        import json
        from biasaudit.records.codes import Code
        line = {"unit": "u", "status": "coded", "label": "long", "source": "my_coder", "detail": {"words": 31}}
        back = Code.model_validate(line)
        assert type(back.detail) is MyEvidence and back.detail.words == 31, back
        assert back.trail()["detail"] == {"words": 31}
        # registration refuses an evidence record or an options model that accepts unknown keys
        from pydantic import ConfigDict
        class LooseEvidence(CodeDetail):
            model_config = ConfigDict(extra="allow")
        class LooseOptions(BaseModel):
            threshold: int = 20
        for kw in ({"options": MyOptions, "evidence": LooseEvidence}, {"options": LooseOptions}):
            try:
                CODERS.add("loose", CoderDef(build=MyCoder, title="loose", **kw))
            except ValueError as exc:
                print("refused", exc)
            else:
                raise SystemExit(f"a coder with {kw} registered")
        """),
}


def _heading(block: Block) -> str:
    text = block.file.read_text(encoding="utf-8").splitlines()[:block.line]
    return next((ln for ln in reversed(text) if ln.startswith("#")), "")


def _run_python(block: Block, tmp: Path) -> None:
    after = AFTER_RUN.get(_heading(block), "")
    script = f"SPECS = {str(SPECS)!r}\n" + block.body + "\n" + after
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, cwd=tmp)
    assert proc.returncode == 0, f"{block.where}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    if after:
        assert "validated" in proc.stdout and "refused" in proc.stdout, proc.stdout
