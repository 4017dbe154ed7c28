"""FiSCo's published `raw.json`, replayed by the `replay` backend: for each question,
`base_question` with placeholders (`[NAME]`, and `[age]` in the authors' age task) and,
per answer, who answered (`name`, `age`, the group in `type` / `gender`) and the recorded
`outputs`. The prompt an answer is replayed for is `base_question` with every placeholder
replaced by the entry's field of that name (any case), so the authors' young and old
Abigail ("I am 24 years old. Abigail ..." / "I am 75 years old. Abigail ...") are two
prompts, not one. Entries whose prompts are the same and who say the same about who
answered are samples of one prompt (sample k is the k-th, cycling); entries whose prompts
are the same but who differ (another group, another age) are refused: no request could
say which of them it wants."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from biasaudit.errors import DataError
from biasaudit.methods.fisco.claim_records import identity

_PLACEHOLDER = re.compile(r"\[([A-Za-z_]+)\]")


def matches(path: Path, data: Any) -> bool:
    return isinstance(data, dict) and bool(data) and all(
        isinstance(v, dict) and "base_question" in v for v in data.values())


def render(question: str, entry: dict[str, Any]) -> str:
    """`question` with each `[FIELD]` replaced by the entry's field of that name (any case);
    a placeholder the entry has no value for stays as it is."""
    fields = {k.lower(): v for k, v in identity(entry).items()}
    return _PLACEHOLDER.sub(lambda m: fields.get(m.group(1).lower(), m.group(0)), question)


def prompts(data: Any) -> dict[str, list[str]]:
    """Prompt -> its recorded answers (samples), in file order."""
    out: dict[str, list[str]] = {}
    for record, rec in data.items():
        q = str(rec["base_question"])
        seen: dict[str, tuple[int, dict[str, str]]] = {}
        for i, attr in enumerate(rec.get("other_attributes", [])):
            prompt = render(q, attr)
            who = identity(attr)
            first = seen.setdefault(prompt, (i, who))
            if first[1] != who:
                diff = sorted(f for f in set(who) | set(first[1]) if who.get(f) != first[1].get(f))
                raise DataError(f"entries {first[0]} and {i} are asked the same prompt but differ in {', '.join(diff)}: "
                                "a replayed request cannot say which of their answers it wants", key=f"record {record}",
                                hint="the question needs a placeholder for each field that tells them apart, e.g. [age]")
            outs = attr.get("outputs", [])
            out.setdefault(prompt, []).extend([outs] if isinstance(outs, str) else [str(o) for o in outs])
    return out
