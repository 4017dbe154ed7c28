"""FiSCo's raw.json as stimuli (`stimuli.format: fisco_raw`)."""

from __future__ import annotations

from typing import Any

from biasaudit.data.adapters import Adapter
from biasaudit.registry import ADAPTERS


def _fisco_raw(row: dict[str, Any]) -> dict[str, Any]:
    return {"question": row["base_question"], "attributes": row.get("other_attributes", [])}


# FiSCo raw.json: {id: {base_question, other_attributes: [{name, age?, outputs, type?}]}};
# the questions become stimuli, the recorded outputs are answered by model=replay.
ADAPTERS.add("fisco_raw", Adapter(reader="json_map", required=("base_question",), convert=_fisco_raw,
                                  fields=("question",), id_column="id"))
