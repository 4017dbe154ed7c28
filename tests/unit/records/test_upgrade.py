"""Format versions of the files biasaudit writes (issue 40, section 1): the one upgrade
package (records/upgrade), trail headers, refusal of newer formats and unknown keys, and
the published JSON Schemas (docs/schemas/<kind>/v<N>.json).

The "older" files here are written by hand from the format-1 layout (the golden files of
tests/fixtures/format_v1 show it), not produced by today's code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from biasaudit._util.trail import HEADER_KEY, json_records, write_json_lines
from biasaudit.cli.schema import file_schema
from biasaudit.errors import BiasAuditError, DataError
from biasaudit.records import upgrade as up
from biasaudit.records.annotation import SampleRecord
from biasaudit.records.codes import Code
from biasaudit.records.compare import CompareResult
from biasaudit.records.evidence import PackManifest
from biasaudit.records.formats import FORMATS, CodeLine, TrailLine, format_version
from biasaudit.records.jobs import JobOutcome
from biasaudit.records.manifest import RunManifest
from biasaudit.records.suite import SuiteSummary
from biasaudit.spec.schema import schema_text
from tests.helpers import REPO

GOLDEN_RUN = REPO / "tests" / "fixtures" / "format_v1" / "run" / "hiring-impact" / "20261129-152450-157669"
SCHEMAS = REPO / "docs" / "schemas"

# -- format-1 layouts, by hand -----------------------------------------------------------------

V1_RESPONSE_LINE = {
    "cell": "framing=direct", "levels": {"framing": "direct"}, "stimulus": "p1", "slot": "prompt", "variant": 0,
    "sample": 0, "key": "ab" * 32,
    "request": {"kind": "generate", "text": None, "text_pair": None,
                "messages": [{"role": "user", "content": "Invite?"}], "params": {"temperature": 0.0}, "sample": 0},
    "status": "ok", "error": None, "error_kind": None, "attempts": 1, "output": {"text": "Yes."}}
V1_CODE_LINE = {"layer": "decision", "unit": "framing=direct|p1|prompt|0|0", "status": "coded", "label": "invite",
                "value": None, "text": None, "source": "rules", "detail": {"span": [0, 3], "token": "Yes", "rule": 1}}
V1_JOB_LINE = {"job": 0, "overrides": ["spec=x"], "overall": "PASS", "measured": True, "unmeasured_reason": None,
               "run_dir": "/r"}
V1_MANIFEST = {"run_id": "20261129-1", "audit": "a", "method": "label_rates", "command": ["biasaudit", "run"],
               "spec_file": "/s.yaml", "data": {"source": None, "sha256": None, "format": "inline", "rows": 2,
                                                "used": 2},
               "cache": "/c.sqlite", "config": {"audit": {"name": "a"}}}
V1_SUITE = {"suite": {"name": "s"}, "generated": "2026-11-29", "members": [{"id": "m", "method": "bbq"}],
            "subjects": ["x"], "rows": [], "verdict_matrix": {}, "overall": "PASS"}
V1_COMPARE = {"runs": [], "side_by_side": {"columns": ["audit"], "rows": []}, "rankings": [], "paired": []}
V1_PACK = {"format": "biasaudit-evidence-pack/1", "created": "2026-11-29T15:25:07+00:00", "biasaudit": "0.1.0",
           "source": "run", "runs": ["r"], "files": {"runs/r/x": {"sha256": "0" * 64, "size": 1}}, "notes": []}

V1_ANNOTATION_SAMPLE = {  # as `annotate export` wrote it before 2026-11 (git show 3b73aea:.../human_sheet.py)
    "format": "biasaudit-annotation-sheet/1", "run_id": "r1", "run_dir": "runs/r1", "spec_sha256": "ab" * 32,
    "layer": "refusal", "labels": ["refuse", "answer"], "stratify": None, "seed": 0, "requested": 1,
    "population": {"all": 4}, "sampled": {"all": 1}, "with_codes": False,
    "units": [{"id": "u0", "key": "cd" * 32, "stratum": "all", "answer_sha256": "ef" * 32}]}


def _jsonl(*rows: dict[str, Any]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


# -- the package ---------------------------------------------------------------------------

def test_every_module_of_the_package_is_a_kind_found_without_a_list() -> None:
    folder = Path(up.__file__).parent
    assert set(up.kinds()) == {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")}
    assert {"responses", "codes", "jobs", "manifest", "suite", "compare", "pack", "annotation_sample"} <= set(up.kinds())
    for kind, mod in up.kinds().items():
        assert sorted(mod.STEPS) == list(range(1, mod.CURRENT)), kind


def test_a_raw_record_without_a_version_is_version_1_and_is_not_changed() -> None:
    raw = dict(V1_PACK)
    out, read = up.upgrade("pack", raw)
    assert read == 1 and out["format"] == "biasaudit-evidence-pack/2"
    assert raw == V1_PACK  # the input as read is kept (verify checks the signature over it)


# -- synthetic older files upgrade and read --------------------------------------------------

@pytest.mark.parametrize(("kind", "line", "record"), [("responses", V1_RESPONSE_LINE, TrailLine),
                                                       ("codes", V1_CODE_LINE, CodeLine),
                                                       ("jobs", V1_JOB_LINE, JobOutcome)])
def test_a_format_1_trail_without_header_reads_as_today_s(kind: str, line: dict[str, Any], record: type[Any]) -> None:
    old = list(json_records(_jsonl(line, line), file=f"old.{kind}.jsonl", kind=kind))
    assert [r for _, r in old] == [line, line] and [i for i, _ in old] == [1, 2]
    for _, r in old:
        assert up.validated(kind, record, r, file="old", version=up.current(kind))[0].model_dump(
            mode="json", exclude_unset=True) == line


def test_today_s_trail_begins_with_its_header_which_the_reader_strips(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    write_json_lines(path, [V1_RESPONSE_LINE], kind="responses")
    first = json.loads(path.read_bytes().split(b"\n")[0])
    assert first == {HEADER_KEY: "responses", "format_version": 2}
    assert [r for _, r in json_records(path.read_bytes(), file=str(path), kind="responses")] == [V1_RESPONSE_LINE]
    # without `kind` the header is a record like any other (a reader that does not know trails)
    assert len(list(json_records(path.read_bytes(), file=str(path)))) == 2


def test_a_header_elsewhere_than_line_1_or_of_another_kind_is_refused() -> None:
    head = {HEADER_KEY: "responses", "format_version": 2}
    with pytest.raises(DataError, match="line 2 is a header record"):
        list(json_records(_jsonl(V1_RESPONSE_LINE, head), file="t", kind="responses"))
    with pytest.raises(DataError, match="header of a 'codes' trail, not of responses"):
        list(json_records(_jsonl({**head, HEADER_KEY: "codes"}), file="t", kind="responses"))


def test_the_golden_format_1_trails_read_as_today_s_records() -> None:
    for kind, record in (("responses", TrailLine), ("codes", CodeLine)):
        path = GOLDEN_RUN / f"{kind}.jsonl"
        rows = list(json_records(path.read_bytes(), file=str(path), kind=kind))
        assert len(rows) == 96
        for _, r in rows:
            up.validated(kind, record, r, file=str(path), version=up.current(kind))


def test_format_1_json_files_read_as_today_s_records() -> None:
    m, read = up.validated("manifest", RunManifest, V1_MANIFEST, file="manifest.json")
    assert read == 1 and m.format_version == 2 and m.data.selected is None  # upgraded: today's layout
    with pytest.raises(ValidationError, match="format_version"):  # the record reads only today's layout
        RunManifest.model_validate(V1_MANIFEST)
    s = SuiteSummary.read_raw(V1_SUITE, file="summary.json")
    assert s.format_version == 2 and s.members[0].method == "bbq"  # upgraded: today's layout
    c, read = up.validated("compare", CompareResult, V1_COMPARE, file="compare.json")
    assert read == 1 and c.format_version == 2
    p, read = PackManifest.read_raw(V1_PACK, file="MANIFEST.json")
    assert read == 1 and p.format == "biasaudit-evidence-pack/2" and p.runs == ["r"]
    a, read = up.validated("annotation_sample", SampleRecord, V1_ANNOTATION_SAMPLE, file="s.csv.sample.json")
    assert (read, a.format_version, a.exact_answers, a.selection) == (1, 2, True, "random")
    assert a.units[0].shown_sha256 is None and a.units[0].answer_sha256 == "ef" * 32
    with pytest.raises(ValidationError, match="format_version"):
        SampleRecord.model_validate(V1_ANNOTATION_SAMPLE)


# -- a newer format is refused, as one line ----------------------------------------------------

NEWER = {
    "manifest": (RunManifest, {**V1_MANIFEST, "format_version": 3}),
    "suite": (SuiteSummary, {**V1_SUITE, "format_version": 3}),
    "compare": (CompareResult, {**V1_COMPARE, "format_version": 3}),
    "pack": (PackManifest, {**V1_PACK, "format": "biasaudit-evidence-pack/3"}),
    "annotation_sample": (SampleRecord, {**V1_ANNOTATION_SAMPLE, "format_version": 3}),
}


@pytest.mark.parametrize("kind", sorted(NEWER))
def test_a_json_file_of_a_newer_format_is_refused_with_one_line(kind: str) -> None:
    record, raw = NEWER[kind]
    with pytest.raises(up.NewerFormatError) as err:
        up.validated(kind, record, raw, file=f"x/{kind}.json")
    n, m = up.current(kind) + 1, up.current(kind)
    assert err.value.one_line().startswith(f"error: x/{kind}.json: format_version: written by a newer biasaudit: "
                                           f"format {n} of {kind}; this version reads up to {m}; upgrade biasaudit")
    assert "\n" not in err.value.one_line()


@pytest.mark.parametrize("kind", ["responses", "codes", "jobs"])
def test_a_trail_of_a_newer_format_is_refused_with_one_line(kind: str) -> None:
    head = {HEADER_KEY: kind, "format_version": up.current(kind) + 1}
    with pytest.raises(up.NewerFormatError, match=f"written by a newer biasaudit: format {up.current(kind) + 1} "
                                                  f"of {kind}; this version reads up to {up.current(kind)}"):
        list(json_records(_jsonl(head, V1_RESPONSE_LINE), file="t", kind=kind))


def _run_folder(tmp_path: Path) -> Path:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(GOLDEN_RUN, run)
    return run


def test_report_on_a_run_folder_of_a_newer_format_exits_2_with_the_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from biasaudit.cli.app import main

    run = _run_folder(tmp_path)
    m = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    (run / "manifest.json").write_text(json.dumps({**m, "format_version": 7}), encoding="utf-8")
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err
    assert ("written by a newer biasaudit: format 7 of manifest; this version reads up to 2; upgrade biasaudit"
            in err), err
    assert "Traceback" not in err


def test_verify_on_a_pack_of_a_newer_format_exits_2_with_the_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import zipfile

    from biasaudit.cli.app import main

    pack = tmp_path / "new.zip"
    with zipfile.ZipFile(pack, "w") as zf:
        zf.writestr("MANIFEST.json", json.dumps({**V1_PACK, "format": "biasaudit-evidence-pack/9"}))
    assert main(["verify", str(pack)]) == 2
    err = capsys.readouterr().err
    assert "written by a newer biasaudit: format 9 of pack; this version reads up to 2; upgrade biasaudit" in err, err


# -- an unknown key is refused, naming the file and the key ---------------------------------------

UNKNOWN = [
    ("manifest", RunManifest, {**V1_MANIFEST, "data": {**V1_MANIFEST["data"], "colour": 1}}, "data.colour"),
    ("suite", SuiteSummary, {**V1_SUITE, "colour": 1}, "colour"),
    ("compare", CompareResult, {**V1_COMPARE, "side_by_side": {"columns": [], "colour": 1}}, "side_by_side.colour"),
    ("pack", PackManifest, {**V1_PACK, "colour": 1}, "colour"),
    ("jobs", JobOutcome, {**V1_JOB_LINE, "colour": 1}, "colour"),
    ("codes", Code, {**{k: v for k, v in V1_CODE_LINE.items() if k != "layer"}, "colour": 1}, "colour"),
    ("responses", TrailLine, {**V1_RESPONSE_LINE, "colour": 1}, "colour"),
    ("annotation_sample", SampleRecord, {**V1_ANNOTATION_SAMPLE, "colour": 1}, "colour"),
]


@pytest.mark.parametrize(("kind", "record", "raw", "key"), UNKNOWN, ids=[u[0] for u in UNKNOWN])
def test_an_unknown_key_is_refused_naming_the_file_and_the_key(kind: str, record: type[Any], raw: dict[str, Any],
                                                               key: str) -> None:
    with pytest.raises(BiasAuditError) as err:
        up.validated(kind, record, raw, file=f"folder/{kind}.file")
    assert err.value.one_line().startswith(f"error: folder/{kind}.file: unknown key {key!r}"), err.value.one_line()


# -- published schemas ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(FORMATS))
def test_the_committed_schema_of_the_current_version_is_today_s(name: str) -> None:
    committed = SCHEMAS / name / f"v{format_version(name)}.json"
    assert committed.is_file(), f"{committed}: missing (a new version: `biasaudit schema {name} > {committed}`)"
    assert committed.read_text(encoding="utf-8") == schema_text(file_schema(name, shipped_only=True)), (
        f"the layout of {name} changed without a version bump: bump CURRENT in "
        f"records/upgrade/{FORMATS[name].kind}.py with a step, then `biasaudit schema {name} > "
        f"docs/schemas/{name}/v<N>.json` (keep the older files)")


def test_the_schemas_are_valid_and_accept_the_files_biasaudit_writes() -> None:
    def check(name: str, doc: Any) -> None:
        schema = json.loads((SCHEMAS / name / f"v{format_version(name)}.json").read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.validate(doc, schema)

    check("manifest", up.upgrade("manifest", json.loads((GOLDEN_RUN / "manifest.json").read_text(encoding="utf-8")))[0])
    check("run-summary", json.loads((GOLDEN_RUN / "summary.json").read_text(encoding="utf-8")))
    for name in ("responses", "codes"):
        for _, row in json_records((GOLDEN_RUN / f"{name}.jsonl").read_bytes(), file=name):
            check(name, row)
        check(name, {HEADER_KEY: name, "format_version": up.current(name)})
    check("pack", up.upgrade("pack", V1_PACK)[0])
    check("suite-summary", V1_SUITE)
    check("annotation-sample", up.upgrade("annotation_sample", V1_ANNOTATION_SAMPLE)[0])
    with pytest.raises(jsonschema.ValidationError):
        check("codes", {**V1_CODE_LINE, "colour": 1})


def test_schema_command_prints_a_file_format(capsys: pytest.CaptureFixture[str]) -> None:
    from biasaudit.cli.app import main

    assert main(["schema", "responses"]) == 0
    assert capsys.readouterr().out == (SCHEMAS / "responses" / "v2.json").read_text(encoding="utf-8")


# -- today's evidence pack: format 2, its trails with headers, verified -----------------------------

PACK_SPEC = """
audit: {name: format-pack, method: token_probability}
stimuli: {source: crows.csv, format: crows_pairs}
probe: {kind: sequence_logprob, inputs: {more: "{{ more }}", less: "{{ less }}"}}
metrics: [{name: bias_score}]
"""


@pytest.mark.slow
def test_a_new_run_and_pack_carry_versions_and_verify(tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    import zipfile

    from tests.conftest import isolation, run_dirs
    from tests.helpers import write_crows_subset, write_spec

    monkeypatch.setenv("BIASAUDIT_CHROMIUM", "/nonexistent")
    (tmp_path / "reports").mkdir()
    write_crows_subset(tmp_path / "crows.csv", 4)
    spec = write_spec(tmp_path / "audit.yaml", PACK_SPEC)
    assert cli("run", f"spec={spec}", "model=scripted", *isolation(tmp_path))[0] == 0
    run = run_dirs(tmp_path)[0]
    first = json.loads((run / "responses.jsonl").read_bytes().split(b"\n")[0])
    assert first == {HEADER_KEY: "responses", "format_version": up.current("responses")}
    assert json.loads((run / "manifest.json").read_text(encoding="utf-8"))["format_version"] == up.current("manifest")
    assert cli("pack", str(run), "-o", str(tmp_path / "audit.zip"))[0] == 0
    with zipfile.ZipFile(tmp_path / "audit.zip") as zf:
        assert json.loads(zf.read("MANIFEST.json"))["format"] == "biasaudit-evidence-pack/2"
    code, out, err = cli("verify", str(tmp_path / "audit.zip"))
    assert code == 0, out + err
    assert "ok: format: evidence pack format 2 (this biasaudit's)" in out and "upgraded" not in out


def test_the_golden_format_1_files_validate_against_the_committed_format_1_schemas() -> None:
    # issue 40: a published schema per version; the format-1 fixtures must satisfy format 1's
    def schema(kind: str) -> dict[str, Any]:
        return json.loads((REPO / "docs" / "schemas" / kind / "v1.json").read_text(encoding="utf-8"))

    for kind, name in (("responses", "responses.jsonl"), ("codes", "codes.jsonl")):
        lines = (GOLDEN_RUN / name).read_text(encoding="utf-8").splitlines()
        assert lines and HEADER_KEY not in lines[0]  # format 1: no header
        check = jsonschema.Draft202012Validator(schema(kind))
        for line in lines:
            check.validate(json.loads(line))
        with pytest.raises(jsonschema.ValidationError):  # a format-2 header is not a format-1 line
            check.validate({HEADER_KEY: kind, "format_version": 2})
    golden_manifest = json.loads((GOLDEN_RUN / "manifest.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema("manifest")).validate(golden_manifest)
    with pytest.raises(jsonschema.ValidationError):  # format 2 states its version; format 1 may not
        jsonschema.Draft202012Validator(
            json.loads((REPO / "docs" / "schemas" / "manifest" / "v2.json").read_text(encoding="utf-8"))
        ).validate(golden_manifest)
    import zipfile

    with zipfile.ZipFile(REPO / "tests" / "fixtures" / "format_v1" / "pack.zip") as z:
        [name] = [n for n in z.namelist() if n.endswith("MANIFEST.json")]
        manifest = json.loads(z.read(name))
    jsonschema.Draft202012Validator(schema("pack")).validate(manifest)
    # the sampling record: format 1 has no format_version; format 2 must state it
    jsonschema.Draft202012Validator(schema("annotation-sample")).validate(V1_ANNOTATION_SAMPLE)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema("annotation-sample")).validate(
            {**V1_ANNOTATION_SAMPLE, "format_version": 2})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(
            json.loads((SCHEMAS / "annotation-sample" / "v2.json").read_text(encoding="utf-8"))
        ).validate(V1_ANNOTATION_SAMPLE)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema("pack")).validate({**manifest, "format": "biasaudit-evidence-pack/2"})
