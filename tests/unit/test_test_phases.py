"""`make test` runs the integration files in tests/conftest.py's PAIRED_INTEGRATION on two
workers, beside each other. That is safe only while none of them starts a server, kills
or interrupts a process, times itself or starts worker processes of its own: this test
reads each paired file for the names those things need, so a file that grows one fails
here (move it out of PAIRED_INTEGRATION: it then runs in the serial phase)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import INTEGRATION, PAIRED_INTEGRATION

# What a test needs to start a server or a process, send a signal, or bound a time.
NEEDS_SERIAL = re.compile(r"\b(subprocess|Popen|signal|os\.kill|killpg|monotonic|perf_counter|time\.time|"
                          r"FaultServer|ManagedEngine|serve=|--port|ray|joblib|launcher|multiprocessing|"
                          r"ProcessPool|Thread)\b")


def test_every_paired_file_exists() -> None:
    present = {p.name for p in INTEGRATION.glob("test_*.py")}
    assert PAIRED_INTEGRATION <= present, sorted(PAIRED_INTEGRATION - present)


@pytest.mark.parametrize("name", sorted(PAIRED_INTEGRATION))
def test_a_paired_file_starts_no_server_or_process_and_times_nothing(name: str) -> None:
    text = (INTEGRATION / name).read_text()
    found = sorted({m.group(0) for m in NEEDS_SERIAL.finditer(text)})
    assert not found, f"{name} uses {found}: it must run in the serial phase (leave it out of PAIRED_INTEGRATION)"


def test_the_servers_kills_and_time_bounds_stay_serial() -> None:
    serial = {p.name for p in INTEGRATION.glob("test_*.py")} - PAIRED_INTEGRATION
    for name in ("test_http_parity.py", "test_http_recipes.py", "test_http_app_e2e.py", "test_hf_causal_chat.py",
                 "test_sequential_resume.py", "test_smollm2_guarantees.py", "test_ray_shards.py"):
        assert name in serial, name
