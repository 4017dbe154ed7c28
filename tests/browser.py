"""Load a report in headless Chromium over the DevTools protocol and record what a
reviewer's browser would do: console messages, exceptions, every network request, and
a screenshot."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from biasaudit.report.pdf import FLAGS, find_chromium


@dataclass
class PageLoad:
    console: list[str] = field(default_factory=list)
    """Console API calls and log entries at level warning or error."""
    exceptions: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    screenshot: bytes = b""
    values: list[object] = field(default_factory=list)
    """What each of `load_page`'s `steps` evaluated to, in order."""


def load_page(html: Path, timeout: float = 60.0, steps: tuple[str, ...] = (), size: tuple[int, int] = (1200, 1600),
              clip: str | None = None, downloads: tuple[Path, int] | None = None) -> PageLoad:
    """Load `html`, then evaluate each JavaScript expression of `steps` in the page (a
    user's clicks and choices, or questions about what it shows), then screenshot it: the
    window, or the page area `clip` evaluates to (`[x, y, width, height]` in CSS pixels
    of the page, beyond the window if need be). With `downloads` (a folder, a count),
    what the page downloads is saved in the folder, and the browser is closed only once
    that many files are complete there (or `timeout` passes)."""
    import websocket

    exe = find_chromium()
    assert exe, "chromium is not installed"
    # Its own session, so the whole process group (renderer, GPU and crash helpers, which
    # write to the profile) is killed at the end, not only the browser process; and a
    # profile folder a straggler still writes to is not a test failure.
    with tempfile.TemporaryDirectory(prefix="biasaudit-cdp-", ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                                 f"--window-size={size[0]},{size[1]}", "about:blank"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            port = _devtools_port(proc, timeout)
            targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
            page = next(t for t in targets if t["type"] == "page")
            ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=timeout, suppress_origin=True)
            try:
                out = _drive(ws, html, timeout, steps, clip, downloads[0] if downloads else None)
                if downloads:
                    _wait_downloads(*downloads, timeout)
                return out
            finally:
                ws.close()
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)


def _wait_downloads(folder: Path, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [p for p in folder.iterdir() if not p.name.endswith(".crdownload")]
        if len(done) >= count and len(done) == len(list(folder.iterdir())):
            return
        time.sleep(0.1)


def _devtools_port(proc: subprocess.Popen[str], timeout: float) -> int:
    deadline = time.monotonic() + timeout
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
        if m:
            return int(m.group(1))
        if not line and proc.poll() is not None:
            break
    raise RuntimeError("chromium did not start its DevTools endpoint")


def _drive(ws: object, html: Path, timeout: float, steps: tuple[str, ...] = (), clip: str | None = None,
           downloads: Path | None = None) -> PageLoad:
    out = PageLoad()
    msg_id = 0

    def send(method: str, **params: object) -> int:
        nonlocal msg_id
        msg_id += 1
        ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))  # type: ignore[attr-defined]
        return msg_id

    def pump(until: object) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = json.loads(ws.recv())  # type: ignore[attr-defined]
            method = msg.get("method")
            p = msg.get("params", {})
            if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                out.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                out.exceptions.append(p.get("exceptionDetails", {}).get("text", "exception"))
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.console.append(p["entry"].get("text", ""))
            elif method == "Network.requestWillBeSent":
                out.requests.append(p["request"]["url"])
            if until(msg):  # type: ignore[operator]
                return msg
        raise TimeoutError("chromium did not answer in time")

    for m in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable"):
        i = send(m)
        pump(lambda msg, i=i: msg.get("id") == i)
    if downloads is not None:
        i = send("Page.setDownloadBehavior", behavior="allow", downloadPath=str(downloads.resolve()))
        pump(lambda msg, i=i: msg.get("id") == i)
    send("Page.navigate", url=html.resolve().as_uri())
    pump(lambda msg: msg.get("method") == "Page.loadEventFired")
    end = time.monotonic() + 1.0  # late console messages and requests
    ws.settimeout(0.2)  # type: ignore[attr-defined]
    while time.monotonic() < end:
        try:
            pump(lambda msg: False)
        except Exception:
            pass
    ws.settimeout(timeout)  # type: ignore[attr-defined]
    for step in steps:
        i = send("Runtime.evaluate", expression=step, returnByValue=True, awaitPromise=True)
        reply = pump(lambda msg, i=i: msg.get("id") == i)
        result = reply.get("result", {})
        if "exceptionDetails" in result:
            out.exceptions.append(result["exceptionDetails"].get("text", "exception") + f" in step {step!r}")
        out.values.append(result.get("result", {}).get("value"))
    shot: dict[str, object] = {"format": "png"}
    if clip is not None:
        i = send("Runtime.evaluate", expression=clip, returnByValue=True)
        x, y, w, h = pump(lambda msg, i=i: msg.get("id") == i)["result"]["result"]["value"]
        shot.update(clip={"x": x, "y": y, "width": w, "height": h, "scale": 1}, captureBeyondViewport=True)
    i = send("Page.captureScreenshot", **shot)
    reply = pump(lambda msg: msg.get("id") == i)
    out.screenshot = base64.b64decode(reply["result"]["data"])
    return out
