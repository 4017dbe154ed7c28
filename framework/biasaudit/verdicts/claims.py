"""What each verdict claims, in words the report, JUnit and the terminal share.

Two kinds of threshold make different claims. A `min`/`max` bound's PASS says only that
no deviation beyond the bound was shown (the interval sits on the allowed side); an
equivalence threshold's PASS says the value was shown to lie within the margin (TOST:
the 1 - 2 alpha interval inside the band). Readers mistake the first for the second, so
every verdict says which it is.
"""

from __future__ import annotations


def claim_text(verdict: str, equivalence: bool, low: float | None, high: float | None) -> str:
    """The claim a verdict makes, e.g. 'equivalence shown within [45, 55]'."""
    if equivalence:
        band = f"[{low:g}, {high:g}]" if low is not None and high is not None else "the band"
        return {"PASS": f"equivalence shown within {band}",
                "FAIL": f"deviation beyond the margin {band} shown",
                }.get(verdict, f"equivalence within {band} not shown (undecided)")
    return {"PASS": "no deviation shown beyond the bound",
            "FAIL": "deviation beyond the bound shown",
            }.get(verdict, "undecided")


__all__ = ["claim_text"]
