"""The pack's crosswalk page (CROSSWALK.md): which section of the EU AI Act's Annex IV
(technical documentation, Regulation (EU) 2024/1689) and which NIST AI RMF 1.0 subcategory
each file of the pack serves. NIST titles come from the report's clause crosswalk
(conf/crosswalk.yaml, `report.crosswalk`), so both say the same thing; the thresholds'
own clause references are listed per run. A reading aid for reviewers, not legal advice."""

from __future__ import annotations

import fnmatch
from typing import Any

from biasaudit.report.crosswalk import load_crosswalk

ANNEX_IV = {
    "1(c)": "General description: versions of relevant software or firmware",
    "2(b)": "Development: design specifications, key design choices, what the system is meant to optimise",
    "2(d)": "Development: data requirements, provenance, scope and main characteristics of the data",
    "2(g)": "Validation and testing procedures, testing data, metrics (incl. potentially discriminatory "
            "impacts), test logs and test reports dated and signed",
    "3": "Monitoring, functioning and control: capabilities and limitations in performance, accuracy for "
         "specific groups of persons, foreseeable risks of discrimination",
    "4": "Appropriateness of the performance metrics for the AI system",
}

# (file pattern under a run, or at the top, what it is, Annex IV points, NIST keys)
ROLES: list[tuple[str, str, tuple[str, ...], tuple[str, ...]]] = [
    ("report/report.html", "the audit report (HTML)", ("2(g)", "3"), ("nist-ai-rmf:measure-2.11", "nist-ai-rmf:measure-4.2")),
    ("report/report.pdf", "the audit report (PDF)", ("2(g)", "3"), ("nist-ai-rmf:measure-2.11", "nist-ai-rmf:measure-4.2")),
    ("report/report.md", "the audit report (Markdown)", ("2(g)", "3"), ("nist-ai-rmf:measure-2.11",)),
    ("report/summary.json", "estimates, intervals, verdicts and validity flags (machine-readable)", ("2(g)", "3", "4"),
     ("nist-ai-rmf:measure-1.1", "nist-ai-rmf:measure-2.11")),
    ("report/*.csv", "estimates and items as tables", ("2(g)", "3"), ("nist-ai-rmf:measure-2.11",)),
    ("report/plots/*", "the report's figures", ("2(g)", "3"), ("nist-ai-rmf:measure-2.11",)),
    ("spec/*", "the audit spec as run: metrics, thresholds, design", ("2(b)", "2(g)", "4"),
     ("nist-ai-rmf:map-2.3", "nist-ai-rmf:measure-1.1")),
    ("config/resolved.json", "the composed configuration as run (spec, model, runtime)", ("2(g)",),
     ("nist-ai-rmf:measure-2.1",)),
    ("config/manifest.json", "the run manifest: command, overrides, seed, software versions at run time",
     ("1(c)", "2(g)"), ("nist-ai-rmf:measure-2.1",)),
    ("config/crosswalk.yaml", "the operator's clause crosswalk the run used", ("2(g)",), ("nist-ai-rmf:govern-1.1",)),
    ("data/stimuli-*", "the stimulus data the run read", ("2(d)", "2(g)"), ("nist-ai-rmf:map-2.3", "nist-ai-rmf:measure-2.1")),
    ("data/hashes.json", "SHA-256 of the spec and data files (recorded at run time and at packing)", ("2(d)", "2(g)"),
     ("nist-ai-rmf:measure-2.1",)),
    ("model/identity.json", "the model under test and every model the coding asked: names, backends, weight digests",
     ("1(c)", "2(g)"), ("nist-ai-rmf:measure-2.1",)),
    ("trail/responses.jsonl", "the test log: every request and the model's answer", ("2(g)",),
     ("nist-ai-rmf:measure-2.1", "nist-ai-rmf:measure-4.2")),
    ("trail/codes.jsonl", "the test log: every coding decision and why", ("2(g)",),
     ("nist-ai-rmf:measure-2.1", "nist-ai-rmf:measure-4.2")),
    ("store/*", "the cached answers the estimates are re-computed from (`biasaudit verify`)", ("2(g)",),
     ("nist-ai-rmf:measure-4.2",)),
    ("selftest/*", "the spec's self-test: planted and null oracles, no model", ("2(g)", "4"),
     ("nist-ai-rmf:measure-2.5",)),
    ("suite/*", "the suite's report and summary", ("2(g)", "3"), ("nist-ai-rmf:measure-2.11",)),
    ("environment/packages.json", "installed Python packages and versions when the pack was made", ("1(c)",),
     ("nist-ai-rmf:measure-2.1",)),
    ("CROSSWALK.md", "this page", ("2(g)",), ("nist-ai-rmf:measure-4.2",)),
    ("MANIFEST.pub", "the Ed25519 public key the manifest was signed with", ("2(g)",), ("nist-ai-rmf:measure-4.2",)),
    ("MANIFEST.json", "SHA-256 of every file of the pack", ("2(g)",), ("nist-ai-rmf:measure-4.2",)),
    ("MANIFEST.sig", "Ed25519 signature of MANIFEST.json", ("2(g)",), ("nist-ai-rmf:measure-4.2",)),
]


def role(name: str) -> tuple[str, tuple[str, ...], tuple[str, ...]] | None:
    """What a pack file is and which sections it serves (`runs/<run>/` is dropped first)."""
    rel = name.split("/", 2)[2] if name.startswith("runs/") and name.count("/") >= 2 else name
    for pattern, what, annex, nist in ROLES:
        if fnmatch.fnmatchcase(rel, pattern):
            return what, annex, nist
    return None


def _md(text: str) -> str:
    """Text from the run (names, clause titles) in a Markdown table cell: no markup."""
    out = "".join(c if c.isprintable() else " " for c in text)
    for ch in "\\`*_[]<>|#":
        out = out.replace(ch, "\\" + ch)
    return out


def crosswalk_page(files: list[str], runs: dict[str, dict[str, Any]], notes: list[str]) -> str:
    """CROSSWALK.md: one row per file; `runs`: run folder -> its summary.json (for the
    thresholds' own clause references)."""
    clauses = load_crosswalk()
    lines = ["# Evidence pack: regulatory crosswalk", "",
             "Which part of the EU AI Act's Annex IV technical documentation (Regulation (EU) 2024/1689) and which "
             "NIST AI RMF 1.0 subcategory each file of this pack serves. A reading aid for reviewers, not legal advice.",
             "", "Check the pack with `biasaudit verify <pack.zip> [--public-key KEY.pem]`: every file's SHA-256 "
             "against MANIFEST.json, the signature, and the estimates and verdicts re-computed from the packed "
             "responses with no model call.", "", "## Annex IV points", ""]
    lines += [f"- **{k}**: {v}" for k, v in ANNEX_IV.items()]
    lines += ["", "## Files", "", "| file | what it is | Annex IV | NIST AI RMF |", "|---|---|---|---|"]
    for name in [*files, "MANIFEST.json", "MANIFEST.sig"]:
        r = role(name)
        if r is None:
            continue
        what, annex, nist = r
        nist_text = "; ".join(f"{clauses[k].clause} ({clauses[k].title})" if k in clauses else k for k in nist)
        # `what` and the shipped clause titles are ours; the file name is checked to be plain
        lines.append(f"| `{name}` | {what} | {', '.join(annex)} | {nist_text} |")
    for run, summary in runs.items():
        rows = [v for v in summary.get("verdicts", []) if isinstance(v, dict)]
        if not rows:
            continue
        lines += ["", f"## Thresholds of `{run}` and the clauses they cite", "",
                  "| threshold | verdict | clauses |", "|---|---|---|"]
        for v in rows:
            cited = "; ".join(f"{c.get('framework', '')} {c.get('clause', '')}".strip()
                              for c in v.get("clauses", []) if isinstance(c, dict))
            label = f"{v.get('metric', '')} ({v.get('over_text') or v.get('over') or ''})"
            lines.append(f"| {_md(label)} | "
                         f"{_md(str(v.get('verdict', '')))} | {_md(cited) or 'none'} |")
    if notes:
        lines += ["", "## Notes", ""] + [f"- {_md(n)}" for n in notes]
    return "\n".join(lines) + "\n"
