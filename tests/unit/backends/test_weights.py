"""backends/weights.py: one load per (kind, key) per process; unload_all drops them."""

from __future__ import annotations

from biasaudit.backends import weights
from biasaudit.backends.factory import unload_all


def test_one_load_per_key_and_unload_all_forgets() -> None:
    made: list[object] = []

    def load() -> object:
        made.append(object())
        return made[-1]

    before = weights.loads()
    a = weights.shared("test_kind", {"path": "p", "dtype": "float32"}, load)
    b = weights.shared("test_kind", {"dtype": "float32", "path": "p"}, load)  # key order does not matter
    c = weights.shared("test_kind", {"path": "p", "dtype": "bfloat16"}, load)  # another dtype: other weights
    assert a is b and a is not c and len(made) == 2 and weights.loads() - before == 2
    unload_all()
    d = weights.shared("test_kind", {"path": "p", "dtype": "float32"}, load)
    assert d is not a and len(made) == 3
