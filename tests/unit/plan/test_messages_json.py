"""The spliced canonical JSON of chat messages equals the generic encoder's (the key of
every request depends on it)."""

from __future__ import annotations

from biasaudit.plan.requests import _messages_json, canonical_json

ODD = ["", "plain", 'quote " and \\ backslash', "tab\tnew\nline\r", "\x00\x1f\x7f", "é ü 中文 🙂",
       "\ud800 lone surrogate", "</script>", "\u2028\u2029"]


def test_spliced_messages_equal_the_generic_encoder() -> None:
    for a in ODD:
        for b in ODD:
            for msgs in ([{"role": "user", "content": a}],
                         [{"role": "system", "content": a}, {"role": "user", "content": b}],
                         [{"content": a, "role": b}], []):
                assert _messages_json(msgs) == canonical_json(msgs)
    assert _messages_json(None) == canonical_json(None) == "null"
    # anything but {role, content} text goes to the generic encoder
    for odd in ([{"role": "user", "content": "x", "name": "n"}], [{"role": "user", "content": 3}],
                [{"role": "user"}]):
        assert _messages_json(odd) == canonical_json(odd)  # type: ignore[arg-type]
