"""Refresh the screenshots in docs/img/ (`make screenshots`): the viewer (`biasaudit view`)
and the report's newer blocks (sample answers per group, the scope / limitations /
sign-off block, the pairwise group contrasts).

It runs a small audit in a temporary folder (the shipped `refusal_stance` spec on four
statements, SmolLM2 as the model and its judge panel, a sign-off given as overrides),
writes the viewer, and captures each part with headless Chromium through the DevTools
protocol (tests/browser.py, the same driver the browser tests use). `--model scripted`
runs the test double instead (seconds, canned answers) to check the tool itself; `--run`
captures a finished run of the same spec instead of running one.

    python docs/tools/screenshots.py docs/img [--model smollm2] [--n 4] [--run RUN_DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # tests/browser.py

SIGNOFF = [
    "audit.scope='Refusals and stance of SmolLM2-135M on four stereotype statements, in English, "
    "under two framings and two system prompts.'",
    "audit.limitations='Four statements and one small model: a demonstration of the report, "
    "not evidence about the model.'",
    "audit.auditor='Example Auditor'",
    "audit.date=2026-01-31",
]

# [x, y, width, height] of the page area to capture (page coordinates, CSS pixels)
RECT = """(() => {{
  const els = {els};
  const r = els.map(e => e.getBoundingClientRect());
  const x = Math.max(0, Math.min(...r.map(b => b.left)) - 8), y = Math.min(...r.map(b => b.top)) - 8;
  const w = Math.max(...r.map(b => b.right)) + 8 - x, h = Math.max(...r.map(b => b.bottom)) + 8 - y;
  return [x + window.scrollX, y + window.scrollY, w, Math.min(h, {max_h})];
}})()"""


def _by_id(name: str, max_h: int = 1400) -> str:
    return RECT.format(els=f"[document.getElementById({name!r})]", max_h=max_h)


# the "Pairwise differences" heading of the first metric, and the table after it
CONTRASTS = RECT.format(els="""(() => {
    const h = [...document.querySelectorAll('h3')].find(e => e.textContent.startsWith('Pairwise differences'));
    const out = [h]; let n = h.nextElementSibling;
    while (n && !/^H[1-3]$/.test(n.tagName)) { out.push(n); n = n.nextElementSibling; }
    return out; })()""", max_h=900)

# the viewer after a click on a group estimate's "responses" link
SHOW_GROUP = """(() => {
  const tr = [...document.querySelectorAll('#estimates tbody tr')].find(r => r.cells[2].textContent.startsWith('rate.category.'));
  tr.querySelector('button').click();
  return document.getElementById('count').textContent;
})()"""


def run_audit(work: Path, model: str, n: int) -> Path:
    # the panel's judges are the model under test (conf/judge/smollm2_panel.yaml sets no model)
    cmd = [sys.executable, "-m", "biasaudit.cli.app", "run", "--fail-on", "never", "spec=refusal_stance",
           f"model={model}", "judge=smollm2_panel", f"+stimuli.sample.n={n}", f"runtime.reports_dir={work / 'reports'}",
           f"runtime.cache={work / 'cache.sqlite'}", *SIGNOFF]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=REPO).stdout
    report = next(line.split(" ", 1)[1].strip() for line in out.splitlines() if line.startswith("report: "))
    return Path(report).parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="the folder for the PNG files (docs/img)")
    ap.add_argument("--model", default="smollm2", help="the model config (default: smollm2)")
    ap.add_argument("--n", type=int, default=4, help="statements sampled (default: 4)")
    ap.add_argument("--run", type=Path, default=None,
                    help="a finished run folder of the same spec to capture instead of running the audit")
    args = ap.parse_args()
    from tests.browser import load_page

    from biasaudit.report.pdf import find_chromium

    if find_chromium() is None:
        print("error: headless Chromium is not installed (make setup installs it; or set BIASAUDIT_CHROMIUM)",
              file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="biasaudit-shots-") as tmp:
        run = args.run if args.run is not None else run_audit(Path(tmp), args.model, args.n)
        subprocess.run([sys.executable, "-m", "biasaudit.cli.app", "view", str(run)], check=True,
                       capture_output=True, cwd=REPO)
        shots = [
            ("viewer.png", run / "viewer.html", (), None, (1200, 1500)),
            ("viewer-estimate-responses.png", run / "viewer.html", (SHOW_GROUP,), _by_id("responses", 1500),
             (1200, 1500)),
            ("report-answers.png", run / "report.html", (), _by_id("answers"), (1100, 1600)),
            ("report-signoff.png", run / "report.html", (), _by_id("signoff"), (1100, 1600)),
            ("report-contrasts.png", run / "report.html", (), CONTRASTS, (1100, 1600)),
        ]
        for name, page, steps, clip, size in shots:
            res = load_page(page, steps=steps, clip=clip, size=size)
            problems = res.console + res.exceptions + [u for u in res.requests if u != page.resolve().as_uri()
                                                       and not u.startswith("data:")]
            if problems:
                print(f"error: {page.name}: {problems[:3]}", file=sys.stderr)
                return 1
            (args.out / name).write_bytes(res.screenshot)
            print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
