"""`+stimuli.sample.n=...` works on a spec that already sets a sample.

The specs of published benchmarks set `stimuli.sample` (a seeded sample of the full file);
`+key=` is how the docs, tests and suites ask for a sample of a spec without one, and Hydra
refuses `+` on a key that exists. `prepare_overrides` sets these keys either way.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.spec.compose import compose, prepare_overrides
from tests.conftest import isolation


def test_plus_on_the_sample_keys_becomes_force_add() -> None:
    out = prepare_overrides(["+stimuli.sample.n=5", "+stimuli.sample.seed=2", "+stimuli.sample={n: 3}",
                             "++stimuli.sample.n=4", "stimuli.sample.n=6", "+stimuli.where={a: [b]}"])
    assert out == ["++stimuli.sample.n=5", "++stimuli.sample.seed=2", "++stimuli.sample={n: 3}",
                   "++stimuli.sample.n=4", "stimuli.sample.n=6", "+stimuli.where={a: [b]}"]


@pytest.mark.parametrize(("spec", "n"), [("crows_pairs_tp", 7), ("biaxis_oat", 1), ("stereoset", 5)])
def test_a_sample_size_with_plus_on_specs_with_and_without_a_sample(workdir: Path, spec: str, n: int) -> None:
    cfg = compose([f"spec={spec}", "model=scripted", f"+stimuli.sample.n={n}", *isolation(workdir)]).config
    assert cfg.stimuli.sample is not None and cfg.stimuli.sample.n == n


def test_null_runs_the_whole_file(workdir: Path) -> None:
    cfg = compose(["spec=crows_pairs_tp", "model=scripted", "stimuli.sample=null", *isolation(workdir)]).config
    assert cfg.stimuli.sample is None
