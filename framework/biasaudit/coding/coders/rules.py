"""`rules`: regular expressions or keyword lists -> a label, optionally per factor level.

Rules are tried in order on the first `head` characters of the input; the first that
fires gives the label. A rule fires when its pattern matches (starting before
`max_start`, when given) and either has a fixed `label` or its first capture group,
lower-cased, is a key of its `map` (an unmapped capture lets the next rule try). With
`by: <factor>`, only units whose level is listed under `levels` are coded (the common
`rules` first, then the level's own); other levels are not applicable. No rule firing is
an abstention (or the `otherwise` label), which a `fallback` layer may then code.

Patterns come from a spec, which is untrusted: they run under the `regex` module's
timeout (`MATCH_TIMEOUT_S` for all of a layer's rules on one input), so a pattern with
catastrophic backtracking stops the run with an error instead of hanging it; and what
they may compile to is bounded before compiling: `MAX_RULES` rules and `MAX_KEYWORDS`
keywords per layer, `MAX_PATTERN_SIZE` for the size of all of a layer's patterns (each
character counts 1, a counted repeat `x{1000}` counts 1000 times what it repeats: the
`regex` module compiles it into that many copies), `MAX_PATTERN` characters and
`MAX_NESTING` nested groups per pattern.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import regex
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from biasaudit.coding.base import Answers, CallEstimate, CoderDef, CoderEnv, CodingRequest
from biasaudit.errors import SpecError
from biasaudit.records.codes import Code, CodeDetail, Unit, new_code
from biasaudit.records.metric_result import ValidityFlag
from biasaudit.registry import CODERS
from biasaudit.spec import ValiditySpec

MATCH_TIMEOUT_S = 1.0
"""Seconds all of a layer's rules may take on one input."""
MAX_PATTERN = 2000
"""Characters of one `pattern`."""
MAX_RULES = 1000
"""Rules of one layer (`rules` plus every level's)."""
MAX_KEYWORDS = 10_000
"""Keywords of one layer, over all its rules."""
MAX_PATTERN_SIZE = 200_000
"""Size of all of one layer's patterns (keyword lists included), counted repeats expanded."""
MAX_NESTING = 100
"""Nested groups in one pattern (deeper nesting exhausts the regex parser's recursion)."""


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    pattern: str | None = Field(default=None, max_length=MAX_PATTERN)
    """A regular expression (Python syntax)."""
    keywords: list[str] | None = None
    """Words or phrases, any of which fires the rule (whole words, escaped)."""
    label: str | None = None
    """The label when the rule fires."""
    map: dict[str, str] | None = None
    """Captured text (group 1, lower-cased, trimmed) -> label; other captures do not fire."""
    max_start: int | None = Field(default=None, ge=0)
    """The match must start before this character (e.g. a refusal at the very start)."""
    ignore_case: bool = True
    """Match without regard to letter case."""

    @field_validator("map", mode="before")
    @classmethod
    def _text_keys(cls, v: Any) -> Any:
        # YAML reads `4: E` with an integer key; captures are text
        if isinstance(v, dict):
            return {str(k).strip().lower(): str(x) for k, x in v.items()}
        return v

    @model_validator(mode="after")
    def _one_each(self) -> Rule:
        if (self.pattern is None) == (self.keywords is None):
            raise ValueError("give a rule exactly one of `pattern` or `keywords`")
        if (self.label is None) == (self.map is None):
            raise ValueError("give a rule exactly one of `label` or `map`")
        if self.keywords is not None and not self.keywords:
            raise ValueError("`keywords` is empty")
        return self

    def source(self) -> str:
        if self.pattern is not None:
            return self.pattern
        words = sorted(self.keywords or [], key=len, reverse=True)
        return r"(?<!\w)(" + "|".join(regex.escape(w) for w in words) + r")(?!\w)"

    def labels(self) -> set[str]:
        return {self.label} if self.label is not None else set((self.map or {}).values())


class RulesOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    rules: list[Rule] = Field(default_factory=list)
    """Rules tried for every coded unit (before a level's own rules)."""
    by: str | None = None
    """A factor: code only units whose level is listed in `levels`."""
    levels: dict[str, list[Rule]] = Field(default_factory=dict)
    """Level of `by` -> its rules."""
    head: int = Field(default=300, ge=1, le=100_000)
    """Only the first `head` characters are searched."""
    otherwise: str | None = None
    """Label when no rule fires (default: abstain)."""

    @model_validator(mode="after")
    def _levels_need_by(self) -> RulesOptions:
        if self.levels and self.by is None:
            raise ValueError("`levels` needs `by` (the factor whose levels they name)")
        if not self.rules and not self.levels:
            raise ValueError("give `rules` or `levels`")
        return self


@dataclass(frozen=True)
class _Compiled:
    rule: Rule
    pattern: Any  # regex.Pattern[str]; the regex module ships no type information


_COUNTED = regex.compile(r"\{(\d*),?(\d*)\}")


def pattern_shape(src: str) -> tuple[int, int]:
    """(size, deepest group nesting) of a pattern, read from its text without compiling:
    each character counts 1 and a counted repeat multiplies what it repeats (an upper
    bound of what the `regex` module compiles it into)."""
    stack = [0]  # the size of each open group so far
    last = 0  # the size of the last atom: what a quantifier repeats
    deepest = 0
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            i, last = i + 2, 1
            stack[-1] += 1
            continue
        if c == "[":  # a character class is one atom
            j = i + 1
            if j < n and src[j] == "^":
                j += 1
            if j < n and src[j] == "]":
                j += 1
            while j < n and src[j] != "]":
                j += 2 if src[j] == "\\" else 1
            i, last = j + 1, 1
            stack[-1] += 1
            continue
        if c == "(":
            stack.append(0)
            deepest = max(deepest, len(stack) - 1)
        elif c == ")" and len(stack) > 1:
            last = stack.pop()
            stack[-1] += last
        elif c == "{" and (m := _COUNTED.match(src, i)) and (m.group(1) or m.group(2)):
            times = max(int(m.group(1) or 0), int(m.group(2) or 0), 1)
            stack[-1] += last * (times - 1)
            last *= times
            i = m.end()
            continue
        else:
            last = 1
            stack[-1] += 1
        i += 1
    return sum(stack), deepest


def _check_size(options: RulesOptions, env: CoderEnv) -> None:
    """What the layer's rules may compile to, bounded before any is compiled."""
    every = [(f"rules[{i}]", r) for i, r in enumerate(options.rules)]
    every += [(f"levels.{lv}[{i}]", r) for lv, rs in options.levels.items() for i, r in enumerate(rs)]
    fix = "use fewer, broader rules (a long word list belongs in a classifier or a judge)"
    if len(every) > MAX_RULES:
        raise SpecError(f"the layer has {len(every)} rules, over the limit of {MAX_RULES} rules per layer",
                        file=env.spec_file, key=env.key("rules"), hint=fix)
    words = sum(len(r.keywords or []) for _, r in every)
    if words > MAX_KEYWORDS:
        raise SpecError(f"the layer's rules list {words} keywords, over the limit of {MAX_KEYWORDS} keywords per "
                        "layer", file=env.spec_file, key=env.key("rules"), hint=fix)
    total = 0
    for where, r in every:
        size, depth = pattern_shape(r.source())
        if depth > MAX_NESTING:
            raise SpecError(f"the pattern nests groups {depth} deep, over the limit of {MAX_NESTING}",
                            file=env.spec_file, key=env.key(where), hint="flatten the nested groups")
        total += size
        if total > MAX_PATTERN_SIZE:
            raise SpecError(f"the layer's patterns are larger than the limit of {MAX_PATTERN_SIZE} characters per "
                            "layer (counted repeats such as x{1000} count as that many copies)", file=env.spec_file,
                            key=env.key(where), hint=f"{fix}; or use * or + instead of a large counted repeat")


def _compile(rule: Rule, key: str, env: CoderEnv) -> _Compiled:
    try:
        pat = regex.compile(rule.source(), regex.IGNORECASE if rule.ignore_case else 0)
    except regex.error as exc:
        raise SpecError(f"invalid regular expression: {exc}", file=env.spec_file, key=key,
                        hint="Python regular-expression syntax; quote it in single quotes in YAML") from None
    except (RecursionError, MemoryError, OverflowError) as exc:  # within the bounds above: a last guard
        raise SpecError(f"the regular expression is too complex to compile ({type(exc).__name__})",
                        file=env.spec_file, key=key, hint="simplify the pattern") from None
    if rule.map is not None and pat.groups < 1:
        raise SpecError("a rule with `map` needs a capture group in its pattern", file=env.spec_file, key=key,
                        hint="wrap the answer in parentheses, e.g. '^(yes|no)\\b'")
    return _Compiled(rule, pat)


class RulesEvidence(CodeDetail):
    """What a rule matched: its span, the text it read the label from, which rule."""

    span: tuple[int, int] | None = None
    """The character span the rule matched (a later layer's `strip` removes it)."""
    token: str | None = None
    """The text the rule read the label from (its first group, or the whole match)."""
    rule: int | Literal["otherwise"] | None = None
    """The index of the rule that fired among the rules of the unit's level, or
    `otherwise` when none did and the layer's `otherwise` label was given."""

    def matched_span(self) -> tuple[int, int] | None:
        return self.span


class RulesCoder:
    def __init__(self, env: CoderEnv, options: RulesOptions) -> None:
        self.env = env
        self.o = options
        _check_size(options, env)
        self.common = [_compile(r, env.key(f"rules[{i}]"), env) for i, r in enumerate(options.rules)]
        self.by_level = {lv: [_compile(r, env.key(f"levels.{lv}[{i}]"), env) for i, r in enumerate(rs)]
                         for lv, rs in options.levels.items()}
        self._details: dict[tuple[tuple[str, Any], ...], RulesEvidence] = {}

    def plan(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[CodingRequest]:
        return []

    def code(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[Code]:
        return [self.code_text(u, inputs[u.id]) for u in units]

    def code_text(self, unit: Unit, text: str) -> Code:
        if self.o.by is not None:
            level = unit.levels.get(self.o.by)
            if level not in self.by_level:
                # one shared evidence record per level, as for coded units (issue 42)
                return new_code(unit.id, "not_applicable", self._detail(reason=f"no rules for {self.o.by}={level}"),
                                source="rules")
            rules = [*self.common, *self.by_level[level]]
        else:
            rules = self.common
        head = text[: self.o.head]
        deadline = time.monotonic() + MATCH_TIMEOUT_S  # for all the rules together
        for i, c in enumerate(rules):
            try:
                m = c.pattern.search(head, timeout=max(deadline - time.monotonic(), 1e-3))
            except TimeoutError:
                raise SpecError(f"the rules took longer than {MATCH_TIMEOUT_S:g} s on one response",
                                file=self.env.spec_file, key=self.env.key("rules"),
                                hint="simplify the pattern (nested repetition backtracks without end)") from None
            if m is None or (c.rule.max_start is not None and m.start() >= c.rule.max_start):
                continue
            token = m.group(1) if c.pattern.groups >= 1 and m.group(1) is not None else m.group(0)
            label = c.rule.label if c.rule.label is not None else (c.rule.map or {}).get(token.strip().lower())
            if label is None:
                continue
            # (new_code: the record Code(...) gives, without validating what is already typed)
            return new_code(unit.id, "coded", self._detail(span=(m.start(), m.end()), token=token, rule=i),
                            label=label, source="rules")
        if self.o.otherwise is not None:
            return new_code(unit.id, "coded", self._detail(rule="otherwise"), label=self.o.otherwise, source="rules")
        return new_code(unit.id, "abstain", self._detail(reason="no rule fired"), source="rules")

    def _detail(self, **fields: Any) -> RulesEvidence:
        """One (frozen) evidence record per distinct evidence: most answers match the same
        rule at the same place, and a million units held a million equal records (issue 42)."""
        key = tuple(fields.items())
        got = self._details.get(key)
        if got is None:
            got = self._details[key] = RulesEvidence(**fields)
        return got


def _labels(env: CoderEnv, o: RulesOptions) -> list[str]:
    found: set[str] = set()
    for r in [*o.rules, *(r for rs in o.levels.values() for r in rs)]:
        found |= r.labels()
    if o.otherwise is not None:
        found.add(o.otherwise)
    return sorted(found)


def _check(env: CoderEnv, o: RulesOptions) -> None:
    if o.by is not None:
        env.check_levels(o.by, o.levels)
    RulesCoder(env, o)  # compiles every pattern: syntax errors are found before any model call


def _validity(env: CoderEnv, o: RulesOptions, coded: Sequence[Code], v: ValiditySpec) -> list[ValidityFlag]:
    """The share of units no rule matched, which took the layer's `otherwise` label."""
    if not o.otherwise or not coded:
        return []
    # units no rule matched (not those a fallback coded)
    k = sum(1 for c in coded if c.source == "rules" and isinstance(c.detail, RulesEvidence)
            and c.detail.rule == "otherwise")
    if k / len(coded) <= v.max_otherwise_share:
        return []
    # a detector (refusal or not) leaves most units to `otherwise` by design: the layer
    # says so with expect_dominant, and the share stays a warning
    name, accepted = env.layer, env.spec.expect_dominant
    return [ValidityFlag(
        kind="otherwise_share", layer=name, blocking=not accepted,
        message=f"layer {name!r}: no rule matched {k}/{len(coded)} units, which took its "
                f"`otherwise` label {o.otherwise!r} ({100 * k / len(coded):.0f}%, above "
                f"validity.max_otherwise_share {100 * v.max_otherwise_share:.0f}%)"
                + (" (accepted: expect_dominant)" if accepted else
                   f"; if the layer is a detector meant to leave most units to {o.otherwise!r}, set "
                   f"coding.{name}.expect_dominant: true"))]


RULES = CoderDef(options=RulesOptions, build=RulesCoder, title="Rules (regular expressions / keywords)",
                 evidence=RulesEvidence, labels=_labels, check=_check,
                 estimate=lambda env, o, n: CallEstimate(calls=0), validity=_validity, per_unit=True)
CODERS.add("rules", RULES)
