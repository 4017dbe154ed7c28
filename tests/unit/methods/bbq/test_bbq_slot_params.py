"""The scored `bbq` metric's three answer `slots`: a slot the probe does not have, or two sides
naming one slot, is refused at validate (one line naming the spec file, the key path and
a fix, exit 2). Before, validate passed and the metric skipped every stimulus."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import isolation

CASES = [
    (('+metrics.0.slots=[ans0,ans1,nosuch]',), 'metrics[0].slots[2]',
     "names probe slot 'nosuch', which the probe does not have"),
    (('+metrics.0.slots=[ans0,ans0,ans2]',), 'metrics[0].slots[1]',
     "names probe slot 'ans0', as"),
]


@pytest.mark.parametrize(("overrides", "key", "text"), CASES, ids=[c[1] for c in CASES])
def test_validate_refuses_slot_params(cli, workdir: Path, overrides: tuple[str, ...], key: str,  # type: ignore[no-untyped-def]
                                      text: str) -> None:
    code, _out, err = cli("validate", "spec=bbq", *overrides, *isolation(workdir))
    assert code == 2, err
    assert "Traceback" not in err
    [line] = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert "bbq.yaml: " + key + ": " in line and text in line and "(hint: " in line, line
