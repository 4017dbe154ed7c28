"""Issue 28: a model's weights are loaded once per process. Variants of one model that
differ only in how they are asked (here the system prompt of smollm2_fair) and later
suite members reuse them; each run records how many loads it caused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biasaudit.backends import weights
from biasaudit.backends.factory import build_backend
from biasaudit.spec.compose import compose
from tests.conftest import isolation, run_dirs

pytestmark = pytest.mark.slow


def test_variants_share_the_weights() -> None:
    plain = compose(["spec=crows_pairs_tp"]).config
    fair = compose(["spec=crows_pairs_tp", "model=smollm2_fair"]).config
    assert plain.model.system_prompt != fair.model.system_prompt
    before = weights.loads()
    a = build_backend(plain.model, plain.runtime)
    b = build_backend(fair.model, fair.runtime)
    assert a is not b  # each keeps its own settings (the system prompt)
    assert a.model is b.model and a.tok is b.tok  # type: ignore[attr-defined]
    assert weights.loads() - before <= 1  # 0 when an earlier test of this session loaded it


@pytest.mark.timeout(1200)
def test_a_suite_loads_each_model_once(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    suite = workdir / "suite.yaml"
    suite.write_text(
        "suite:\n  name: loads\n  subjects: [smollm2, smollm2_fair, smollm2_cynic]\n"
        "  members:\n    - spec: crows_pairs_tp\n      label: tp\n    - spec: stereoset\n      label: ss\n")
    before = weights.loads()
    code, out, err = cli("run", "--fail-on", "never", f"spec={suite}", "+stimuli.sample.n=2", *isolation(workdir))
    assert code == 0, err
    runs = [json.loads((d / "summary.json").read_text()) for d in run_dirs(workdir) if (d / "manifest.json").exists()]
    assert len(runs) == 6
    loads = [r["execution"]["model_loads"] for r in runs]
    # six runs over three variants of one model: at most one load, by the first run
    assert sum(loads) == weights.loads() - before <= 1
