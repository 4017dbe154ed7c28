"""The `stereoset` metric's three role `slots`: a slot the probe does not have, or two sides
naming one slot, is refused at validate (one line naming the spec file, the key path and
a fix, exit 2). Before, validate passed and the metric skipped every stimulus (or, for two roles on one slot or a role left out, crashed with a KeyError)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import isolation

CASES = [
    (('+metrics.0.slots={stereotype: nosuch, anti_stereotype: anti_stereotype, unrelated: unrelated}',), 'metrics[0].slots.stereotype',
     "names probe slot 'nosuch', which the probe does not have"),
    (('+metrics.0.slots={stereotype: unrelated, anti_stereotype: anti_stereotype, unrelated: unrelated}',), 'metrics[0].slots.unrelated',
     "names probe slot 'unrelated', as"),
    (('+metrics.0.slots.stereotype=nosuch',), 'metrics[0].slots',
     'gives no slot for anti_stereotype, unrelated'),
]


@pytest.mark.parametrize(("overrides", "key", "text"), CASES, ids=[c[1] for c in CASES])
def test_validate_refuses_slot_params(cli, workdir: Path, overrides: tuple[str, ...], key: str,  # type: ignore[no-untyped-def]
                                      text: str) -> None:
    code, _out, err = cli("validate", "spec=stereoset", *overrides, *isolation(workdir))
    assert code == 2, err
    assert "Traceback" not in err
    [line] = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert "stereoset.yaml: " + key + ": " in line and text in line and "(hint: " in line, line
