"""`biasaudit annotate export`: a seeded, stratified sample of a run's coded units as an
annotation sheet for people to label (coding/human_sheet.py holds the sheet's format;
the `human` coder reads it back as a coding layer).

The sample is drawn from the units the layer coded (a unit it abstained on has no
machine label to compare with). With `--stratify`, each stratum (a cell, a factor's
level or a stimulus field's value) first gets two units, or all it has, so every
stratum's correction can be estimated; the rest of `n` is shared in proportion to the
strata's sizes (largest remainders); units are drawn without replacement within each
stratum, and the rows are shuffled so the sheet shows no order. The same run, layer,
`n`, strata and seed give the same sheet.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from biasaudit._util.fileio import check_output_file, names_excerpt, read_capped, write_output_file
from biasaudit._util.trail import json_records
from biasaudit.coding.human_sheet import (
    CODE_COLUMNS,
    COLUMNS,
    SampledUnit,
    SampleRecord,
    answer_hash,
    label_legend,
    record_path,
    sheet_text,
    shown_hash,
    stratum_of,
)
from biasaudit.coding.stage import response_text
from biasaudit.coding.units import units_of
from biasaudit.errors import BiasAuditError, StoreError
from biasaudit.records.codes import Code, Unit
from biasaudit.records.responses import Response
from biasaudit.records.upgrade import current, validated
from biasaudit.report.answers import prompt_text
from biasaudit.runner.pipeline import Prepared, prepare, read_manifest

MIN_PER_STRATUM = 2
"""A stratum's PPI correction needs the variance of two labelled units at least."""
RATIONALE_CHARS = 1000
MAX_TRAIL_BYTES = 2 * 2**30


@dataclass(frozen=True)
class Exported:
    sheet: Path
    record: Path
    rows: int
    population: dict[str, int]
    sampled: dict[str, int]


def allocate(sizes: Mapping[str, int], n: int, where: str = "--n") -> dict[str, int]:
    """Units to draw per stratum: min(2, size) each, the rest of `n` in proportion to the
    sizes (largest remainders, ties by stratum name), never more than a stratum has."""
    total = sum(sizes.values())
    if n >= total:
        return dict(sizes)
    base = {h: min(MIN_PER_STRATUM, s) for h, s in sizes.items()}
    if sum(base.values()) > n:
        raise BiasAuditError(f"{n} units cannot give each of the {len(sizes)} strata {MIN_PER_STRATUM} units",
                             key=where, hint=f"use --n {sum(base.values())} or more, or stratify by a coarser field")
    out = dict(base)
    left = n - sum(base.values())
    while left > 0:
        room = {h: sizes[h] - out[h] for h in sizes if sizes[h] > out[h]}
        weight = sum(sizes[h] for h in room)
        quota = {h: left * sizes[h] / weight for h in room}
        give = {h: min(room[h], math.floor(q)) for h, q in quota.items()}
        order = sorted(room, key=lambda h: (-(quota[h] - math.floor(quota[h])), h))
        for h in order:  # largest remainders, one unit each
            if sum(give.values()) >= left:
                break
            if give[h] < room[h]:
                give[h] += 1
        if not any(give.values()):
            break
        for h, g in give.items():
            out[h] += g
        left -= sum(give.values())
    return out


def _jsonl(path: Path, what: Literal["codes", "responses"]) -> list[dict[str, Any]]:
    """The rows of a run's jsonl trail (codes.jsonl, responses.jsonl)."""
    hint = "give a run folder written by `biasaudit run` (with codes.jsonl and responses.jsonl)"
    if not path.is_file():
        raise StoreError(f"no {path.name} in the run folder", file=str(path.parent), hint=hint)
    raw = read_capped(path, MAX_TRAIL_BYTES, what=what, error=StoreError)
    return [row for _, row in json_records(raw, file=str(path), error=StoreError, hint=hint, objects=False,
                                          kind=what)
            if isinstance(row, dict)]


def _prepared(run_dir: Path) -> tuple[Prepared, str, str]:
    from biasaudit.spec import validate_config
    from biasaudit.spec.compose import Composed

    m = read_manifest(run_dir)
    spec_file = Path(m.spec_file)
    cfg = validate_config(m.config, spec_file=str(spec_file), choices=m.choices)
    prep = prepare(Composed(config=cfg, data=m.config, spec_file=spec_file, choices=m.choices,
                            overrides=m.overrides))
    if prep.stimuli.sha256 != m.data.sha256:
        raise StoreError("the data file changed since the run", file=str(prep.stimuli.source),
                         hint="restore the file the run used (its sha256 is in manifest.json)")
    return prep, m.run_id, m.spec_sha256


def _check_stratify(prep: Prepared, by: str | None, fields: set[str]) -> None:
    if by is None or by == "cell":
        return
    factors = set(prep.composed.config.factors)
    if by not in factors and by not in fields:
        raise BiasAuditError(f"cannot stratify by {by!r}: it is no factor and no stimulus field", key="--stratify",
                             hint=f"use cell, a factor ({names_excerpt(sorted(factors)) or 'none'}) or a stimulus "
                                  f"field ({names_excerpt(sorted(fields)) or 'none'})")


def _rationale(code: Code) -> str:
    detail = code.detail.trail()
    text = f"{code.source}: {json.dumps(detail, ensure_ascii=False, sort_keys=True)}" if detail else code.source
    return text if len(text) <= RATIONALE_CHARS else text[:RATIONALE_CHARS] + " [...]"


def _targets(out: Path, force: bool) -> tuple[Path, Path, str]:
    fmt = out.suffix.lower().lstrip(".")
    if fmt not in ("csv", "jsonl"):
        raise BiasAuditError(f"unknown sheet format {out.suffix or '(none)'!r}", file=str(out), key="-o",
                             hint="name the sheet <name>.csv or <name>.jsonl")
    for p in (out, record_path(out)):
        if os.path.isfile(p) and not os.path.islink(p) and not force:
            raise BiasAuditError("the sheet exists already (it may hold labels)", file=str(p), key="-o",
                                 hint="choose another -o, or pass --force to replace it")
    # the one writer's rule: a link is refused (with --force the link itself is replaced,
    # never its target), as are a directory, FIFO or device
    sheet = check_output_file(out, key="-o", what="sheet", streams=False, force=force).path
    rec = check_output_file(record_path(out), key="-o", what="sampling record", streams=False, force=force).path
    return sheet, rec, fmt


def export_sheet(run_dir: Path, layer: str, n: int, out: Path, *, stratify: str | None = None,
                 with_codes: bool = False, seed: int | None = None, force: bool = False) -> Exported:
    """Write the sheet and its sampling record; nothing is written on an error."""
    if n < 1:
        raise BiasAuditError(f"--n must be 1 or more (got {n})", key="--n", hint="e.g. --n 100")
    sheet_file, rec_file, fmt = _targets(out, force)
    prep, run_id, spec_sha = _prepared(run_dir)
    layers = prep.coding.layers
    if layer not in layers:
        raise BiasAuditError(f"the run has no coding layer {layer!r}", file=str(run_dir), key="--layer",
                             hint=f"layers: {', '.join(layers) or '(none)'}")
    lay = layers[layer]
    if lay.value_type != "label":
        raise BiasAuditError(f"layer {layer!r} gives numbers, not labels: people label with a label set",
                             file=str(run_dir), key="--layer", hint="choose a layer with labels")
    _check_stratify(prep, stratify, set(prep.stimuli.field_names))
    cpath = str(run_dir / "codes.jsonl")
    codes = {str(r.get("unit")): validated("codes", Code, {k: v for k, v in r.items() if k != "layer"}, file=cpath,
                                           version=current("codes"), error=StoreError)[0]
             for r in _jsonl(run_dir / "codes.jsonl", "codes") if r.get("layer") == layer}
    responses = {str(r.get("key")): Response(key=str(r.get("key")), status=r.get("status", "failed"),
                                             output=r.get("output") if isinstance(r.get("output"), dict) else None)
                 for r in _jsonl(run_dir / "responses.jsonl", "responses")}
    units = units_of(prep)
    texts = {u.id: t for u in units if (r := responses.get(u.key)) is not None and (t := response_text(r)) is not None}
    pop = [u for u in units if u.id in texts and (c := codes.get(u.id)) is not None and c.coded and c.label is not None]
    if not pop:
        raise BiasAuditError(f"layer {layer!r} coded no unit of this run: nothing to sample", file=str(run_dir),
                             key="--layer", hint="choose a layer that coded answers")
    labels = list(lay.labels) if lay.labels is not None else sorted({codes[u.id].label or "" for u in pop})
    strata = {u.id: stratum_of(u, stratify) for u in pop}
    sizes = dict(sorted(Counter(strata.values()).items()))
    take = allocate(sizes, n)
    rng = np.random.default_rng(prep.composed.config.runtime.seed if seed is None else seed)
    picked: list[Unit] = []
    for h in sizes:  # strata in name order, units in plan order: the draw depends on the seed alone
        ids = [u for u in pop if strata[u.id] == h]
        picked.extend(ids[i] for i in sorted(rng.choice(len(ids), size=take[h], replace=False).tolist()))
    picked = [picked[i] for i in rng.permutation(len(picked)).tolist()]
    columns = list(COLUMNS)
    if with_codes:
        columns[3:3] = CODE_COLUMNS
    rows = [{"unit_id": u.id, "prompt": prompt_text(prep.plan.requests.get(u.key)), "answer": texts[u.id],
             "allowed_labels": labels if fmt == "jsonl" else label_legend(labels, lay.spec.label_meanings),
             "label": None if fmt == "jsonl" else "",
             "note": "", **({"machine_label": codes[u.id].label, "rationale": _rationale(codes[u.id])} if with_codes
                            else {})} for u in picked]
    record = SampleRecord(format_version=current("annotation_sample"), run_id=run_id, run_dir=str(run_dir),
                          spec_sha256=spec_sha, layer=layer, labels=labels, stratify=stratify,
                          seed=prep.composed.config.runtime.seed if seed is None else seed,
                          requested=n, population=sizes, sampled={h: take[h] for h in sizes}, with_codes=with_codes,
                          units=[SampledUnit(id=u.id, key=u.key, stratum=strata[u.id],
                                             answer_sha256=answer_hash(texts[u.id]),
                                             shown_sha256=shown_hash(texts[u.id]),
                                             prompt_sha256=shown_hash(prompt_text(prep.plan.requests.get(u.key))))
                                 for u in picked])
    write_output_file(sheet_file, sheet_text(rows, columns, fmt), key="-o", what="sheet", streams=False, force=force)
    try:
        write_output_file(rec_file, record.model_dump_json(indent=1), key="-o", what="sampling record",
                          streams=False, force=force, ours=True)  # checked with its sheet above
    except BiasAuditError:
        sheet_file.unlink(missing_ok=True)  # a sheet without its record cannot be read back
        raise
    return Exported(sheet=sheet_file, record=rec_file, rows=len(rows), population=sizes, sampled=record.sampled)


__all__ = ["Exported", "allocate", "export_sheet", "label_legend"]
