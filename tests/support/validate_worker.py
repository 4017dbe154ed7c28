"""Run `biasaudit validate` on many inputs in one process, each under a wall-clock bound,
the whole process under an address-space bound (RLIMIT_AS), for the fuzz test.

Reads one JSON object per line on stdin: {"cwd": folder, "args": [...]}; writes one per
line on stdout: {"code": exit code or null, "err": stderr, "crash": traceback or null,
"seconds": wall time}. An input that runs past the bound is reported as a crash
("timeout"); one that exceeds the memory bound kills the worker (the test sees it die).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import signal
import sys
import time
import traceback


class Timeout(BaseException):
    """Not an Exception: no `except Exception` in the code under test can swallow it."""


def _alarm(signum: int, frame: object) -> None:
    raise Timeout


def main() -> None:
    seconds = float(sys.argv[1])
    memory = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    signal.signal(signal.SIGALRM, _alarm)
    from biasaudit.cli.app import main as cli

    out = sys.stdout
    for line in sys.stdin:
        job = json.loads(line)
        os.chdir(job["cwd"])
        err, sink = io.StringIO(), io.StringIO()
        code: int | None = None
        crash: str | None = None
        t0 = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(sink):
                code = cli(job["args"])
        except Timeout:
            crash = f"timeout: over {seconds} s"
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException:  # a traceback: what the test must never see
            crash = traceback.format_exc()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        out.write(json.dumps({"code": code, "err": err.getvalue(), "crash": crash,
                              "seconds": time.monotonic() - t0}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
