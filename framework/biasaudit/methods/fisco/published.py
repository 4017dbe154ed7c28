"""A replay spec for one of the authors' published FiSCo folders (HuXiangkun/FiSCo:
`tiny_dataset/case*` and `dataset/<model>/<task>`), written from the file itself: one
factor level per person the record lists (name, the group its entry records, and its age
where it has one), as many samples as the record holds answers for that person, and a
prompt that fills every placeholder of the question the recorded prompts fill (the age
from the record's own entry for that person).

    python -m biasaudit.methods.fisco.published specs/data/fisco/dataset/Mistral/age > age.yaml
    biasaudit run spec=age.yaml model=replay model.responses=specs/data/fisco/dataset/Mistral/age/labels.json

The levels come from the first record; a file whose records list other people (names and
groups), or whose group membership cannot be read, is refused (one line, exit 2)."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from biasaudit.errors import DataError
from biasaudit.methods.fisco.claim_records import GROUP_FIELDS

LABEL_FILES = ("labels.json", "label.json")
"""The authors name the labelled file `labels.json` (dataset/, tiny_dataset case3, case4) or
`label.json` (tiny_dataset case1, case2)."""


def labels_file(folder: Path) -> Path:
    """The folder's labelled file."""
    for name in LABEL_FILES:
        if (folder / name).is_file():
            return folder / name
    raise DataError("no labels.json or label.json in the folder", file=str(folder),
                    hint="point at one of the authors' folders, e.g. dataset/Mistral/age")


def _group_field(attrs: list[Any], file: Path) -> str:
    for f in GROUP_FIELDS:
        if attrs and all(isinstance(a, dict) and a.get(f) not in (None, "") for a in attrs):
            return f
    raise DataError(f"group membership cannot be read: not every entry has a {' / '.join(GROUP_FIELDS)} field",
                    file=str(file), key="record 0", hint="give each entry of other_attributes its group")


def _slug(*parts: object) -> str:
    return "_".join(re.sub(r"[^a-z0-9]+", "_", str(p).lower()).strip("_") for p in parts if p not in (None, ""))


def _people(attrs: list[Any], gf: str) -> Counter[tuple[str, str]]:
    """(name, group) -> how many answers the record holds for that person."""
    return Counter((str(a.get("name", "")), str(a[gf])) for a in attrs)


def spec_for(folder: Path, weights: tuple[float, float, float] = (1.0, 0.5, 0.0)) -> str:
    """The spec (YAML text) that replays the folder's labels, the stimuli file named by its
    absolute path. `weights` defaults to the authors' label scores (Contradiction 0,
    Neutral 0.5, Entailment 1). A level is a person (name and recorded group); a
    placeholder other than [NAME] (the age task's [age]) is filled from the record's entry
    for that person, since the authors drew the ages per question."""
    file = labels_file(folder)
    data = json.loads(file.read_text(encoding="utf-8"))
    records = list(data.items())
    if not records:
        raise DataError("no record in the file", file=str(file))
    first_id, first = records[0]
    attrs = first.get("other_attributes", [])
    gf = _group_field(attrs, file)
    people = _people(attrs, gf)
    for rid, rec in records[1:]:
        if _people(rec.get("other_attributes", []), _group_field(rec.get("other_attributes", []), file)) != people:
            raise DataError(f"record {rid} lists other people than record {first_id}", file=str(file),
                            key=f"record {rid}", hint="replay such a file with a spec of your own")
    samples = set(people.values())
    if len(samples) != 1:
        raise DataError(f"the people of record {first_id} have {sorted(samples)} answers each: one sample count "
                        "cannot read them all", file=str(file), key=f"record {first_id}")
    n = samples.pop()
    question = str(first.get("base_question", ""))
    levels = [f"    {_slug(name, group)}: {{vars: {{group: {json.dumps(group)}, value: {json.dumps(name)}}}}}"
              for name, group in people]
    prompt = "{{ question | replace('[NAME]', value)"
    for ph in sorted(set(re.findall(r"\[age\]", question, flags=re.I))):
        # the entry of this person (name and group) in the record gives its age
        prompt += (f" | replace('{ph}', attributes | selectattr('name', 'equalto', value) | selectattr('{gf}', "
                   f"'equalto', group) | map(attribute='age') | first | default('{ph}') | string)")
    prompt += " }}"
    groups = sorted({group for _, group in people})
    axis = {"type": "age"}.get(gf, gf)  # the age task records young / old in `type`
    return f"""# Replays the authors' published FiSCo folder {folder.name}: their claims and labels
# (no model is asked anything). Written by biasaudit.methods.fisco.published from {file.name}.
audit:
  name: fisco-published-{_slug(folder.parent.name, folder.name)}
  method: fisco
  description: The authors' recorded answers and entailment labels, replayed ({' vs '.join(groups)}).
stimuli: {{source: {file.resolve()}, format: fisco_raw}}
factors:
  person:
{chr(10).join(levels)}
design: {{kind: full}}
probe:
  kind: generate
  samples: {n}
  temperature: {1.0 if n > 1 else 0.0}   # samples are distinct requests only above 0 (the replay ignores it)
  max_tokens: 1024
  prompt: "{prompt}"
coding:
  claims: {{coder: claims, extract: recorded, min_words: 0}}
metrics:
  - {{name: fisco, id: fisco, axis: {axis}, baselines: [], weights: {list(weights)}}}
  - {{name: fisco, id: fisco_authors, axis: {axis}, baselines: [], weights: {list(weights)}, normalisation: authors}}
"""


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m biasaudit.methods.fisco.published <published folder>", file=sys.stderr)
        return 2
    try:
        print(spec_for(Path(argv[0])), end="")
    except DataError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"error: {argv[0]}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
