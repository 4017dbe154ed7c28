"""The `nli_bias` metric's `stereo` / `counter` premise slots: a slot the probe does not have, or two sides
naming one slot, is refused at validate (one line naming the spec file, the key path and
a fix, exit 2). Before, validate passed and the metric skipped every stimulus."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import isolation

CASES = [
    (('+metrics.0.stereo=nosuch',), 'metrics[0].stereo',
     "names probe slot 'nosuch', which the probe does not have"),
    (('+metrics.0.counter=stereo',), 'metrics[0].counter',
     "names probe slot 'stereo', as"),
]


@pytest.mark.parametrize(("overrides", "key", "text"), CASES, ids=[c[1] for c in CASES])
def test_validate_refuses_slot_params(cli, workdir: Path, overrides: tuple[str, ...], key: str,  # type: ignore[no-untyped-def]
                                      text: str) -> None:
    code, _out, err = cli("validate", "spec=winoqueer_nli", *overrides, *isolation(workdir))
    assert code == 2, err
    assert "Traceback" not in err
    [line] = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert "winoqueer_nli.yaml: " + key + ": " in line and text in line and "(hint: " in line, line
