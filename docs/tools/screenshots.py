"""Refresh the screenshots in docs/img/ (`make screenshots`): the viewer (`biasaudit view`),
a token-probability response card in it, the report's first page and its newer blocks
(sample answers per group, the scope / limitations / sign-off block, the pairwise group
contrasts). `SHOTS` names every picture; tests/unit/docs/test_doc_images.py checks that
each picture the docs show exists and is one of them.

It runs two small audits (reports in a temporary folder, answers in the repository's
response cache: a rerun makes no model call, takes about a minute and a half, and gives
the same pictures but for the first page's run id and times; from an empty cache, too,
greedy decoding gave them byte for byte): the shipped `refusal_stance` spec on four
statements (SmolLM2 as the model and its judge panel, greedy decoding, a sign-off given
as overrides) and the shipped `crows_pairs_tp` spec on three pairs; writes their viewers,
and captures each part with headless Chromium through the DevTools protocol
(tests/browser.py, the same driver the browser tests use). Each PNG is reduced to a
128-colour palette (a page of text loses nothing visible; the file shrinks by about two
thirds) and written through biasaudit's one writer. `--model scripted` runs the test
double instead (deterministic, seconds, canned answers) to check the tool itself; `--run`
(with `--tp-run`) captures finished runs of the same specs instead of running them.

    python docs/tools/screenshots.py docs/img [--model smollm2] [--n 4] [--run RUN_DIR] [--tp-run RUN_DIR]
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


# the first response card of the viewer, its per-token detail unfolded
# (the responses of the card's own metric, so the card's "item difference" chip is the
# difference of the totals it shows, not the ar_shared metric's)
TOKEN_CARD = """(() => {
  const m = document.getElementById('f-metric');
  m.value = 'bias_score';
  m.dispatchEvent(new Event('change'));
  const a = document.querySelector('#rows article');
  a.querySelector('details.tokens').open = true;
  return [m.value, a.querySelectorAll('table.sentences tbody tr').length];
})()"""
FIRST_CARD = RECT.format(els="[document.querySelector('#rows article')]", max_h=1100)

SHOTS = ("viewer.png", "viewer-estimate-responses.png", "viewer-token-card.png", "report-first-page.png",
         "report-answers.png", "report-signoff.png", "report-contrasts.png")
"""Every picture the tool writes (docs/img/), in the order it writes them."""


def _run(cmd: list[str]) -> Path:
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=REPO).stdout
    report = next(line.split(" ", 1)[1].strip() for line in out.splitlines() if line.startswith("report: "))
    return Path(report).parent


def run_audit(work: Path, model: str, n: int, cache: Path) -> Path:
    # the panel's judges are the model under test (conf/judge/smollm2_panel.yaml sets no model)
    return _run([sys.executable, "-m", "biasaudit.cli.app", "run", "--fail-on", "never", "spec=refusal_stance",
                 f"model={model}", "judge=smollm2_panel", f"+stimuli.sample.n={n}",
                 f"runtime.reports_dir={work / 'reports'}", f"runtime.cache={cache}", *SIGNOFF])


def run_tp(work: Path, model: str, n: int, cache: Path) -> Path:
    """A token-probability run (the shipped CrowS-Pairs spec, `n` pairs): its viewer's cards."""
    return _run([sys.executable, "-m", "biasaudit.cli.app", "run", "--fail-on", "never", "spec=crows_pairs_tp",
                 f"model={model}", f"stimuli.sample.n={n}", f"runtime.reports_dir={work / 'reports-tp'}",
                 f"runtime.cache={cache}"])


def small_png(png: bytes) -> bytes:
    """`png` with a 128-colour palette, no dithering (a screenshot of text and flat
    colours keeps its look), compressed as far as zlib goes; as it is without Pillow."""
    try:
        from PIL import Image
    except ImportError:
        return png
    import io

    img = Image.open(io.BytesIO(png)).convert("RGB")
    small = img.quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    buf = io.BytesIO()
    small.save(buf, format="PNG", optimize=True)
    return buf.getvalue() if buf.tell() < len(png) else png


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="the folder for the PNG files (docs/img)")
    ap.add_argument("--model", default="smollm2", help="the model config (default: smollm2)")
    ap.add_argument("--n", type=int, default=4, help="statements sampled (default: 4)")
    ap.add_argument("--run", type=Path, default=None,
                    help="a finished run folder of the same spec to capture instead of running the audit")
    ap.add_argument("--tp-run", type=Path, default=None,
                    help="a finished run folder of crows_pairs_tp to capture instead of running it")
    ap.add_argument("--pairs", type=int, default=3, help="CrowS-Pairs pairs sampled (default: 3)")
    ap.add_argument("--cache", type=Path, default=REPO / ".biasaudit" / "cache.sqlite",
                    help="the response cache (default: the repository's .biasaudit/cache.sqlite, so the model "
                         "files are shared and a second run answers from the cache, making no model call)")
    args = ap.parse_args()
    from tests.browser import load_page

    from biasaudit._util.fileio import write_output_file
    from biasaudit.report.pdf import find_chromium

    if find_chromium() is None:
        print("error: headless Chromium is not installed (make setup installs it; or set BIASAUDIT_CHROMIUM)",
              file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="biasaudit-shots-") as tmp:
        run = args.run if args.run is not None else run_audit(Path(tmp), args.model, args.n, args.cache)
        tp = args.tp_run if args.tp_run is not None else run_tp(Path(tmp), args.model, args.pairs, args.cache)
        for folder in (run, tp):
            subprocess.run([sys.executable, "-m", "biasaudit.cli.app", "view", "--force", str(folder)], check=True,
                           capture_output=True, cwd=REPO)
        shots = [
            ("viewer.png", run / "viewer.html", (), None, (1200, 1500)),
            ("viewer-estimate-responses.png", run / "viewer.html", (SHOW_GROUP,), _by_id("responses", 1500),
             (1200, 1500)),
            ("viewer-token-card.png", tp / "viewer.html", (TOKEN_CARD,), FIRST_CARD, (1100, 1400)),
            ("report-first-page.png", run / "report.html", (), None, (1000, 1300)),
            ("report-answers.png", run / "report.html", (), _by_id("answers"), (1100, 1600)),
            ("report-signoff.png", run / "report.html", (), _by_id("signoff"), (1100, 1600)),
            ("report-contrasts.png", run / "report.html", (), CONTRASTS, (1100, 1600)),
        ]
        assert tuple(s[0] for s in shots) == SHOTS
        for name, page, steps, clip, size in shots:
            res = load_page(page, steps=steps, clip=clip, size=size)
            problems = res.console + res.exceptions + [u for u in res.requests if u != page.resolve().as_uri()
                                                       and not u.startswith("data:")]
            if problems:
                print(f"error: {page.name}: {problems[:3]}", file=sys.stderr)
                return 1
            png = small_png(res.screenshot)
            write_output_file(args.out / name, png, key="out", what="screenshot", ours=True, streams=False)
            print(f"wrote {args.out / name} ({len(png) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
