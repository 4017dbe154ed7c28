"""`claims`: split each answer into claims and check every claim against references by
NLI (FiSCo's claim-level comparison, as a coder).

Answers shorter than `min_words` are not coded (not applicable, counted). With `mask`,
every value a factor level gives the variable `mask.var` (e.g. each person's name) is
replaced by the placeholder first, so claims do not differ by the name alone. Claims
come from a deterministic sentence splitter (`extract: sentences`) or from the `nli`
group's chat model listing them one per line (`extract: llm`; parsed defensively,
falling back to sentences when nothing parses, counted). References: `same_stimulus`
checks each claim against every other coded answer to the same stimulus (premise = that
answer, hypothesis = the claim); a template instead gives one reference text per unit.
Every check is a `classify_nli` request through the `nli` group, cached, so a claim is
never checked twice against the same text. The code's `detail.checks` maps each
reference to the labels (E, N, C; None for a failed check) of the unit's claims.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.coding.base import Answers, CallEstimate, CoderDef, CoderEnv, CodingRequest
from biasaudit.data.load import resolve_source
from biasaudit.errors import SpecError
from biasaudit.records.codes import Code, CodeDetail, Unit
from biasaudit.records.json import JSONValue
from biasaudit.records.responses import GenerateOutput, NLIOutput, parse_output
from biasaudit.registry import CLAIM_RECORDS, CODERS
from biasaudit.spec.templates import check_variables, render

_SENT = re.compile(r"(?<=[.!?])\s+|\n+")


class MaskSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    var: str = "value"
    """Level variable whose values are masked wherever they appear."""
    placeholder: str = "[NAME]"
    """The text that replaces each masked value."""


class ClaimsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    extract: Literal["sentences", "llm", "recorded", "recorded_claims"] = "sentences"
    """How an answer is split into claims: `sentences` (one claim per sentence), `llm` (the
    model under test lists them; unparseable lists fall back to sentences), `recorded`
    or `recorded_claims`. `recorded`: the claims and entailment labels of FiSCo's published labels.json, from
    the stimulus field `recorded_field` (see `recorded_claims`): a label-level replay,
    no NLI check. `recorded_claims`: the claims of claims.json, checked by NLI."""
    recorded_format: str | None = None
    """`extract: recorded*`: the registered recorded-claims format that reads the
    records (`CLAIM_RECORDS`, registered by the method that knows the files); by default
    the only one registered."""
    recorded_field: str = "attributes"
    """`extract: recorded`: the stimulus field holding the recorded answers (`fisco_raw`)."""
    recorded_var: str = "value"
    """`extract: recorded`: the level variable naming the answer's entry (name or age)."""
    recorded_group_var: str = "group"
    """`extract: recorded`: the level variable holding the unit's group, compared with the
    group each entry records (an entry is matched by name, group and every other field
    the level sets, e.g. `age`; never by the name alone)."""
    recorded_group_field: str | None = None
    """`extract: recorded`: the entries' field that records their group; by default the
    first of `group`, `type`, `gender`, `race` that every entry of a record has. A record
    whose entries do not all have it is refused (membership is never guessed)."""
    min_words: int = Field(default=5, ge=0)
    """Answers with fewer words are not compared (counted as too short)."""
    min_claim_words: int = Field(default=3, ge=1)
    """Sentences or listed claims shorter than this many words are dropped."""
    prompt: str = ("List every factual claim made in the text below, one short sentence per line, "
                   "with no numbering and nothing else.\n\nText: {{ text }}")
    """`extract: llm`: the extraction prompt (Jinja; `text` is the masked answer)."""
    max_tokens: int = Field(default=200, ge=1, le=4096)
    """`extract: llm`: longest claim list generated."""
    max_claims: int = Field(default=20, ge=1, le=200)
    """`extract: llm`: claims kept from one list."""
    mask: MaskSpec | None = None
    """Mask a level variable's values (e.g. names) in answers before their claims are compared."""
    against: str = "same_stimulus"
    """`same_stimulus`, or a template over the stimulus fields giving the reference text."""


def split_claims(text: str, min_words: int = 3) -> list[str]:
    """Deterministic sentence splitter: one claim per sentence of at least min_words words."""
    return [c.strip() for c in _SENT.split(text) if len(c.split()) >= min_words]


def parse_claim_list(text: str, min_words: int = 3, limit: int = 20) -> list[str]:
    """One claim per line; bullets and numbering stripped, short lines and duplicates dropped."""
    out: list[str] = []
    for line in text.splitlines():
        c = re.sub(r"^\s*(?:[-*•]+|\d+[.)]|claim\s*\d*:)\s*", "", line, flags=re.I).strip()
        if len(c.split()) >= min_words and c not in out:
            out.append(c)
    return out[:limit]


def mask_values(text: str, values: Sequence[str], placeholder: str) -> str:
    """Replace every value (whole word, any case) by the placeholder, longest first."""
    for v in sorted(set(values), key=len, reverse=True):
        text = re.sub(r"(?<!\w)" + re.escape(v) + r"(?!\w)", placeholder, text, flags=re.I)
    return text


class LabelTable(Protocol):
    """One record's published labels, whatever layout the file keeps them in."""

    def checks(self, i: int, j: int) -> list[str]:
        """The labels of answer i's claims checked against answer j."""
        ...


@dataclass(frozen=True)
class ClaimRecords:
    """A method's published claims (and entailment labels), read as a claims layer's
    claims (`extract: recorded` / `recorded_claims`). Registered in `CLAIM_RECORDS` by the
    method package that knows the files' layout; the coder knows none."""

    entries: Callable[[Sequence[Unit], ClaimsOptions, str | None, Sequence[tuple[str, Mapping[str, JSONValue]]], int],
                      dict[str, int | None]]
    """(units, options, the stimuli file named in errors, every level naming an entry as
    (name, vars), samples per prompt) -> unit id -> its entry in its record (None: none)."""
    claims: Callable[[Unit, str, int | None], tuple[int | None, list[str], Any]]
    """(unit, the stimulus field holding the record, its entry) -> (entry, claims, labels)."""
    labels: Callable[[Mapping[str, Sequence[Any]], str | None], Mapping[str, LabelTable | None]]
    """(record id -> its entries, file) -> each record's labels (None: it records none)."""


def claim_records(env: CoderEnv, o: ClaimsOptions) -> ClaimRecords:
    """The recorded-claims format the layer names, or the only one registered."""
    if o.recorded_format is not None:
        return CLAIM_RECORDS.get(o.recorded_format, file=env.spec_file, key=env.key("recorded_format"))
    names = CLAIM_RECORDS.names()
    if len(names) != 1:
        raise SpecError(f"extract: {o.extract} needs a recorded-claims format; {len(names)} are registered",
                        file=env.spec_file, key=env.key("recorded_format"),
                        hint=f"name one of: {', '.join(names)}" if names else "install the method that reads them")
    return CLAIM_RECORDS.get(names[0])


class ClaimsEvidence(CodeDetail):
    """The unit's claims and each one's NLI label against every reference."""

    claims: list[str] | None = None
    """The unit's claims (extracted, or as recorded)."""
    fell_back: bool | None = None
    """The LLM's claim list did not parse and the sentence splitter gave the claims."""
    checks: dict[str, list[str | None]] | None = None
    """Reference -> the NLI label (E, N, C; None: the check failed) of each claim."""
    recorded: bool | None = None
    """The checks are the published labels (`extract: recorded`), not model calls."""


class ClaimsCoder:
    def __init__(self, env: CoderEnv, options: ClaimsOptions) -> None:
        self.env = env
        self.o = options
        self.values: list[str] = []
        self._entries: dict[str, int | None] = {}
        """`extract: recorded*`: unit id -> its entry in the record (set by `_resolve`)."""
        if options.mask is not None:
            for levels in env.config.factors.values():
                for spec in levels.values():
                    if options.mask.var in spec.vars:
                        self.values.append(str(spec.vars[options.mask.var]))

    # -- per unit ----------------------------------------------------------------------
    def masked(self, text: str) -> str:
        return mask_values(text, self.values, self.o.mask.placeholder) if self.o.mask is not None else text

    def extraction(self, unit: Unit, masked: str) -> CodingRequest:
        user = render(self.o.prompt, unit.context(text=masked), file=self.env.spec_file, key=self.env.key("prompt"))
        return CodingRequest.chat("nli_chat", "generate", user,
                                  {"temperature": 0.0, "top_p": 1.0, "max_tokens": self.o.max_tokens})

    def claims(self, unit: Unit, masked: str, answers: Answers) -> tuple[list[str] | None, bool]:
        """(claims, fell back to sentences); None while the LLM extraction is unanswered."""
        if self.o.extract == "sentences":
            return split_claims(masked, self.o.min_claim_words), False
        if self.o.extract == "recorded_claims":
            return self.records().claims(unit, self.o.recorded_field, self._entries.get(unit.id))[1], False
        r = answers.get(self.extraction(unit, masked))
        if r is None:
            return None, False
        out = parse_output(GenerateOutput, r)
        parsed = parse_claim_list(out.text, self.o.min_claim_words, self.o.max_claims) if out is not None else []
        if not parsed:
            return split_claims(masked, self.o.min_claim_words), True
        return parsed, False

    def references(self, units: Sequence[Unit], masked: Mapping[str, str]) -> dict[str, list[tuple[str, str]]]:
        """Unit id -> (reference name, reference text) pairs."""
        if self.o.against != "same_stimulus":
            return {u.id: [("reference", render(self.o.against, u.context(), file=self.env.spec_file,
                                                key=self.env.key("against")))] for u in units}
        by_stim: dict[str, list[Unit]] = {}
        for u in units:
            by_stim.setdefault(u.stimulus, []).append(u)
        return {u.id: [(v.id, masked[v.id]) for v in by_stim[u.stimulus] if v.id != u.id] for u in units}

    # -- the protocol ------------------------------------------------------------------
    def _codable(self, units: Sequence[Unit], inputs: Mapping[str, str]) -> tuple[list[Unit], dict[str, str]]:
        keep = [u for u in units if len(inputs[u.id].split()) >= self.o.min_words]
        return keep, {u.id: self.masked(inputs[u.id]) for u in keep}

    def _resolve(self, units: Sequence[Unit]) -> None:
        """Each unit's entry in its record (read by name, group and the level's other vars)."""
        if self.o.extract in ("recorded", "recorded_claims"):
            levels = [(f"{factor}={name}", lv.vars) for factor, lvs in self.env.config.factors.items()
                      for name, lv in lvs.items() if self.o.recorded_var in lv.vars]
            self._entries = self.records().entries(units, self.o, self._labels_file(), levels,
                                                   self.env.config.probe.samples)

    def _recorded(self, units: Sequence[Unit]) -> dict[str, tuple[int | None, list[str], Any]]:
        self._resolve(units)
        return {u.id: self.records().claims(u, self.o.recorded_field, self._entries.get(u.id)) for u in units}

    def plan(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[CodingRequest]:
        if self.o.extract == "recorded":
            return []  # the published labels are the checks: nothing to ask
        keep, masked = self._codable(units, inputs)
        self._resolve(units)
        claims = {u.id: self.claims(u, masked[u.id], answers) for u in keep}
        pending = [self.extraction(u, masked[u.id]) for u in keep if claims[u.id][0] is None]
        if pending:
            return pending  # claims first; the checks come in the next round
        refs = self.references(keep, masked)
        return [CodingRequest(route="nli", kind="classify_nli", text=text, text_pair=c)
                for u in keep for _, text in refs[u.id] for c in claims[u.id][0] or []]

    def _labels_file(self) -> str | None:
        """The stimuli file the recorded labels come from, named in data errors."""
        spec_file = self.env.spec_file
        source = resolve_source(self.env.config.stimuli, Path(spec_file) if spec_file else None)
        return str(source) if source is not None else spec_file

    def records(self) -> ClaimRecords:
        return claim_records(self.env, self.o)

    def _record_labels(self, units: Sequence[Unit]) -> Mapping[str, LabelTable | None]:
        """Each stimulus's published labels, read in the layout the file's shape fits."""
        records: dict[str, list[Any]] = {}
        for u in units:
            attrs = u.fields.get(self.o.recorded_field)
            if isinstance(attrs, list):
                records.setdefault(u.stimulus, attrs)
        return self.records().labels(records, self._labels_file())

    def code_recorded(self, units: Sequence[Unit], inputs: Mapping[str, str]) -> list[Code]:
        """Codes from the published labels (label-level replay; no request)."""
        rec = self._recorded(units)
        tables = self._record_labels(units)
        by_stim: dict[str, dict[str, int]] = {}
        for u in units:
            if rec[u.id][0] is not None:
                by_stim.setdefault(u.stimulus, {})[u.id] = rec[u.id][0]  # type: ignore[assignment]
        out = []
        for u in units:
            i, claims, _ = rec[u.id]
            table = tables.get(u.stimulus)
            if i is None or table is None:
                why = ("no recorded answer for this level (name and group) in the file" if i is None
                       else "the entry records no labels")
                out.append(Code(unit=u.id, status="not_applicable", source="claims", detail=ClaimsEvidence(reason=why)))
                continue
            # the label of u's claim c against answer j, wherever the file's layout keeps it
            checks: dict[str, list[str | None]] = {
                v: list(table.checks(i, j)) for v, j in by_stim[u.stimulus].items() if v != u.id}
            given = [x for ls in checks.values() for x in ls if x is not None]
            out.append(Code(unit=u.id, status="coded", text=self.masked(inputs.get(u.id, "")), source="claims",
                            detail=ClaimsEvidence(claims=claims, fell_back=False, checks=checks, recorded=True),
                            value=(given.count("E") / len(given)) if given else None))
        return out

    def code(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[Code]:
        if self.o.extract == "recorded":
            return self.code_recorded(units, inputs)
        keep, masked = self._codable(units, inputs)
        self._resolve(units)
        refs = self.references(keep, masked)
        out: dict[str, Code] = {}
        for u in units:
            if u.id not in masked:
                out[u.id] = Code(unit=u.id, status="not_applicable", source="claims",
                                 detail=ClaimsEvidence(reason=f"shorter than {self.o.min_words} words"))
                continue
            claims, fell_back = self.claims(u, masked[u.id], answers)
            checks: dict[str, list[str | None]] = {}
            for name, text in refs[u.id]:
                labels: list[str | None] = []
                for c in claims or []:
                    r = answers.get(CodingRequest(route="nli", kind="classify_nli", text=text, text_pair=c))
                    n = parse_output(NLIOutput, r) if r is not None else None
                    labels.append(n.label() if n is not None else None)
                checks[name] = labels
            given = [x for ls in checks.values() for x in ls if x is not None]
            detail = ClaimsEvidence(claims=claims or [], fell_back=fell_back, checks=checks)
            out[u.id] = Code(unit=u.id, status="coded", text=masked[u.id], source="claims", detail=detail,
                             value=(given.count("E") / len(given)) if given else None)
        return [out[u.id] for u in units]


def _check(env: CoderEnv, o: ClaimsOptions) -> None:
    if o.extract in ("recorded", "recorded_claims"):
        if o.recorded_field not in env.variables:
            raise SpecError(f"extract: recorded reads the stimulus field {o.recorded_field!r}, which the stimuli lack",
                            file=env.spec_file, key=env.key("recorded_field"),
                            hint="read the published claims / labels with the stimulus format that holds them "
                                 f"(recorded-claims formats: {', '.join(CLAIM_RECORDS.names()) or 'none installed'})")
        claim_records(env, o)  # the format that reads them is registered
    if o.extract == "recorded":
        return  # labels.json: the published labels are the checks, no NLI
    if env.config.nli is None:
        raise SpecError("a claims layer checks claims through the nli group", file=env.spec_file,
                        key=env.key("coder"), hint="add nli=llm (the model under test answers) or nli=hf nli.path=...")
    if o.extract == "llm":
        check_variables(o.prompt, set(env.variables) | {"text"}, file=env.spec_file, key=env.key("prompt"))
    if o.against != "same_stimulus":
        check_variables(o.against, set(env.variables), file=env.spec_file, key=env.key("against"))
    if o.mask is not None and not any(o.mask.var in lv.vars for levels in env.config.factors.values()
                                      for lv in levels.values()):
        raise SpecError(f"no factor level sets the variable {o.mask.var!r} to mask", file=env.spec_file,
                        key=env.key("mask.var"), hint="levels give it in `vars`, e.g. emily: {vars: {value: Emily}}")


def _estimate(env: CoderEnv, o: ClaimsOptions, n: int) -> CallEstimate:
    extraction = f"{n} claim extractions, then " if o.extract == "llm" else ""
    return CallEstimate(calls=None, bound="unknown",
                        note=f"{extraction}one NLI check per claim and reference: depends on the answers' claims")


CLAIMS = CoderDef(
    options=ClaimsOptions, build=ClaimsCoder, title="Claims checked by NLI", evidence=ClaimsEvidence,
    routes=lambda env, o: [*([("nli", "classify_nli")] if o.extract != "recorded" else []),
                           *([("nli_chat", "generate")] if o.extract == "llm" else [])],
    check=_check, estimate=_estimate, value_type=lambda env, o: "number",
)
CODERS.add("claims", CLAIMS)
