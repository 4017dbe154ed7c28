"""Small provenance folders and a local HTTP server for the data tests.

A provenance folder's digests are computed here with hashlib (and `git hash-object` for
git blob ids where a test says so), never by the code under test."""

from __future__ import annotations

import gzip
import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

COMMIT = "0123456789abcdef0123456789abcdef01234567"
CROWS_HEADER = "sent_more,sent_less,stereo_antistereo,bias_type\n"


def crows_csv(n: int, tag: str = "") -> bytes:
    rows = [f"More {i}{tag}.,Less {i}{tag}.,{'stereo' if i % 3 else 'antistereo'},gender\n" for i in range(n)]
    return (CROWS_HEADER + "".join(rows)).encode()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_entry(path: str, data: bytes, records: int | None = None, **more: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": path, "source_path": f"data/{path}", "sha256": sha256(data),
                             "bytes": len(data), "records": records, "compressed": path.endswith(".gz")}
    if path.endswith(".gz"):
        entry["source_sha256"] = sha256(gzip.decompress(data))
    entry.update(more)
    return entry


def provenance(benchmark: str = "toy_pairs", files: list[dict[str, Any]] | None = None, **more: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"benchmark": benchmark, "title": "Toy-Pairs", "licence": "CC BY-SA 4.0",
                           "licence_url": "https://creativecommons.org/licenses/by-sa/4.0/",
                           "source_repo": "example-org/toy-pairs", "commit": COMMIT,
                           "citation": "Doe, J. (2020). Toy pairs.", "files": files or []}
    doc.update(more)
    return doc


def write_folder(folder: Path, files: dict[str, bytes], doc: dict[str, Any] | None = None,
                 records: dict[str, int] | None = None) -> Path:
    """`files` written into `folder` with a provenance.json listing each of them."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    if doc is None:
        doc = provenance(files=[file_entry(n, d, (records or {}).get(n)) for n, d in files.items()])
    (folder / "provenance.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return folder


@dataclass
class Route:
    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    content_length: bool = True


class _Handler(BaseHTTPRequestHandler):
    routes: dict[str, Route] = {}
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.hits.append(self.path)
        r = self.routes.get(self.path)
        if r is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if r.delay:
            time.sleep(r.delay)
        self.send_response(r.status)
        for k, v in r.headers.items():
            self.send_header(k, v)
        if r.content_length:
            self.send_header("Content-Length", str(len(r.body)))
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        try:
            self.wfile.write(r.body)
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading (a refused size)
            pass

    def log_message(self, *args: Any) -> None:  # quiet
        pass


@dataclass
class Server:
    port: int
    routes: dict[str, Route]
    hits: list[str]

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


@contextmanager
def http_server(routes: dict[str, Route]) -> Iterator[Server]:
    """An http.server on 127.0.0.1 (a free port) in a thread, serving `routes` by path."""
    handler = type("Handler", (_Handler,), {"routes": routes, "hits": []})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield Server(srv.server_address[1], routes, handler.hits)
    finally:
        srv.shutdown()
        srv.server_close()
