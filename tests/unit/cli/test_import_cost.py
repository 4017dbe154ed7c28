"""What a command imports before it does anything (issue 41, section 3: every command cost
15-28 s on a loaded 2-core machine; `validate` paid for scipy.stats, statsmodels, sklearn
and pandas, which it never uses). Checked by the modules loaded, not by seconds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ["sklearn", "statsmodels", "scipy.stats", "scipy", "pandas", "torch", "transformers", "matplotlib"]

SCRIPT = f"""
import json, sys
from biasaudit.cli.app import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({{"code": code, "loaded": [m for m in {HEAVY!r} if m in sys.modules]}}))
"""


def _loaded(*argv: str, cwd: Path) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *argv], capture_output=True, text=True, timeout=600, cwd=cwd,
                          env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT / "framework")})
    out: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def test_validate_loads_no_statistics_or_model_library(tmp_path: Path) -> None:
    got = _loaded("validate", "spec=crows_pairs_tp", cwd=tmp_path)
    assert got["code"] in (0, None) and got["loaded"] == []


def test_help_loads_none_of_them(tmp_path: Path) -> None:
    got = _loaded("--help", cwd=tmp_path)
    assert got["loaded"] == []
