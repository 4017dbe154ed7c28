"""File access on paths a user gives: bounded reads of untrusted input files, output
paths checked before a run and written without replacing what is not ours, short
scrubbed excerpts in errors, and one-line errors instead of OS tracebacks.

A path from a spec or the command line may be a directory, a device (`/dev/zero` never
ends), a FIFO (blocks forever), a socket, a symlink loop, a file far larger than memory,
or a "regular" file of a kernel pseudo file system (`/proc/self/environ` holds the
environment, API keys included); and the disk may be read-only or full while a report is
written. These helpers turn each into a `BiasAuditError` that names the file.

Inputs (`read_capped`, `open_input`): regular files only, symlinks resolved and the
target checked, nothing under /proc, /sys or /dev, the size checked before reading and
the read itself bounded. An error quotes the file's content only as `excerpt` gives it:
at most `EXCERPT_CHARS` printable characters, secrets redacted.

Outputs (`check_output_file`, `write_output_file`, `check_output_dir`): checked before a
run starts and again when written. A symlink is written through (its target is replaced,
the link stays); `/dev/null`, a terminal and the process's own `/dev/stdout` and
`/dev/stderr` are written as streams; a directory, a FIFO, a socket, any other device and
anything under /proc or /sys are refused; a regular file is replaced atomically (a
temporary file in the same folder, then a rename), never half written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO

from biasaudit.errors import BiasAuditError, DataError

# Kernel pseudo file systems: their "regular files" are views of processes, devices and
# kernel settings (and /proc/<pid>/environ holds the environment), never audit data.
PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
# The most characters of a file's content an error message quotes.
EXCERPT_CHARS = 40
SIZE_HINT = "use a smaller file, or raise runtime.limits.max_data_bytes"


# -- inputs ------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _pseudo_devices() -> dict[int, str]:
    """The device ids of the /proc and /sys mounts (a bind mount elsewhere shares them)."""
    out = {}
    for root in ("/proc", "/sys"):
        with contextlib.suppress(OSError):
            out[os.stat(root).st_dev] = root
    return out


def pseudo_root(path: Path | str) -> str | None:
    """The pseudo file system root (/proc, /sys, /dev) `path` lands in once every symlink
    is resolved, else None."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    return next((r for r in PSEUDO_ROOTS if real == r or real.startswith(r + "/")), None)


def _pseudo_problem(path: Path | str, st: os.stat_result) -> str | None:
    root = pseudo_root(path) or _pseudo_devices().get(st.st_dev)
    if root is None:
        return None
    return f"not a regular file: it is in {root}, a kernel pseudo file system"


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    if exc.errno == errno.ENAMETOOLONG:
        return "path too long"
    if exc.errno == errno.ENXIO:
        return "not a regular file (a socket or a device with nothing behind it)"
    return f"cannot read it ({exc.strerror or type(exc).__name__})"


def path_problem(path: Path) -> str | None:
    """Why `path` cannot be read as a regular file, or None: missing, a symlink loop, a
    directory, a device, FIFO or socket, or a file of /proc, /sys or /dev."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return "file not found"
    except OSError as exc:
        return _os_reason(exc)
    except (RuntimeError, ValueError) as exc:  # Path.resolve's loop detection; NUL in the path
        return f"not a usable path ({exc})"
    if stat.S_ISDIR(st.st_mode):
        return "a directory, not a file"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a device, FIFO or socket)"
    return _pseudo_problem(path, st)


def resolved(path: Path, *, error: type[BiasAuditError] = DataError, key: str | None = None) -> Path:
    """`path.resolve()`, with a symlink loop or an unusable path as a one-line error."""
    try:
        return path.resolve()
    except (RuntimeError, OSError, ValueError) as exc:
        raise error(f"cannot resolve the path ({exc})", file=str(path), key=key,
                    hint="check for symlink loops") from None


def open_input(path: Path, limit: int, *, file: str | None = None, key: str | None = None,
               what: str = "file", error: type[BiasAuditError] = DataError,
               hint: str | None = None, size_hint: str = SIZE_HINT) -> IO[bytes]:
    """An untrusted input file, opened for reading: a regular file (symlinks followed and
    the target checked; nothing under /proc, /sys or /dev) of at most `limit` bytes by
    its size, checked on the open file so a swap after the check cannot slip through.
    Opening never blocks (a FIFO is refused, not waited on). The caller still reads at
    most `limit` + 1 bytes: a file that grows is bounded too."""
    where = file or str(path)
    problem = path_problem(path)
    if problem:
        raise error(f"{what}: {problem}", file=where, key=key, hint=hint or "check the path")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise error(f"{what}: {_os_reason(exc)}", file=where, key=key, hint=hint or "check the path") from None
    f = os.fdopen(fd, "rb")
    try:
        st = os.fstat(fd)
        problem = ("not a regular file (a device, FIFO or socket)" if not stat.S_ISREG(st.st_mode)
                   else _pseudo_problem(path, st))
        if problem:
            raise error(f"{what}: {problem}", file=where, key=key, hint=hint or "check the path")
        if st.st_size > limit:  # refused before a byte is read
            raise error(f"the {what} is larger than {limit} bytes ({st.st_size} bytes)", file=where, key=key,
                        hint=size_hint)
    except BaseException:
        f.close()
        raise
    return f


def read_capped(path: Path, limit: int, *, file: str | None = None, key: str | None = None,
                what: str = "file", error: type[BiasAuditError] = DataError,
                hint: str | None = None, size_hint: str = SIZE_HINT) -> bytes:
    """The bytes of an untrusted input file of at most `limit` bytes (`open_input`; read
    at most `limit` + 1: a file that grows, or lies about its size, is still bounded)."""
    where = file or str(path)
    with open_input(path, limit, file=file, key=key, what=what, error=error, hint=hint, size_hint=size_hint) as f:
        size = os.fstat(f.fileno()).st_size
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise error(f"cannot read the {what} ({exc.strerror or type(exc).__name__})", file=where, key=key,
                        hint="check its permissions") from None
    if len(data) > limit:
        raise error(f"the {what} is larger than {limit} bytes", file=where, key=key, hint=size_hint)
    if size == 0 and data:  # a pseudo file mounted elsewhere: sized 0, yet it has content
        raise error(f"{what}: not a regular file: its size reads 0 but it has content (a kernel pseudo file)",
                    file=where, key=key, hint=hint or "check the path")
    return data


# -- excerpts of untrusted content in errors ------------------------------------------------

_SECRET_NAME = re.compile(r"(?i)key|token|secret|passw|credential|auth|cookie|session")
# `name = value` / `name: value` where the name says it holds a secret: the value goes
_ASSIGNED = re.compile(r"(?i)((?:api[_-]?)?(?:key|token|secret|passw\w*|credential\w*|auth\w*)\w*\s*[=:]\s*)"
                       r"(\"[^\"]*\"|'[^']*'|\S+)")
# a long run of token characters mixing upper case, lower case and digits reads as a key
_TOKEN = re.compile(r"[A-Za-z0-9+/=_.~-]{20,}")
REDACTED = "[REDACTED]"


def _token(m: re.Match[str]) -> str:
    t = m.group()
    kinds = (any(c.isupper() for c in t), any(c.islower() for c in t), any(c.isdigit() for c in t))
    return REDACTED if all(kinds) else t


def scrub(text: str) -> str:
    """`text` with secrets redacted: the registered API keys in every encoding
    (`secrets.redact`), the values of environment variables whose names say they hold a
    secret, the value of any `key = value` / `token: value` pair and anything that looks
    like a generated key (20+ token characters mixing upper case, lower case and digits)."""
    from biasaudit._util.secrets import redact, too_plain

    text = redact(text)
    for name, value in os.environ.items():
        if _SECRET_NAME.search(name) and value in text and too_plain(value) is None:
            text = text.replace(value, REDACTED)
    text = _ASSIGNED.sub(lambda m: m.group(1) + REDACTED, text)
    return _TOKEN.sub(_token, text)


def excerpt(content: str | bytes, limit: int = EXCERPT_CHARS) -> str:
    """A short, scrubbed excerpt of untrusted content for an error message: secrets
    redacted (`scrub`), unprintable characters shown as `?`, at most `limit` characters."""
    text = content.decode("utf-8", "replace") if isinstance(content, bytes) else str(content)
    text = scrub(text[: 64 * limit])
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def names_excerpt(names: Iterable[str], limit: int = EXCERPT_CHARS) -> str:
    """Column names (or other values) from a file, as an excerpt with their count."""
    names = list(names)
    shown = excerpt(", ".join(n or "<unnamed>" for n in names), limit)
    return f"{shown} ({len(names)} in all)" if shown.endswith("...") else shown


# -- outputs -------------------------------------------------------------------------------

# The process's own standard streams: written to as they are, never reopened or replaced.
STD_STREAMS = {"/dev/stdout": 1, "/dev/stderr": 2, "/dev/fd/1": 1, "/dev/fd/2": 2,
               "/proc/self/fd/1": 1, "/proc/self/fd/2": 2}
_OUT_HINT = "give a file path in a writable folder, /dev/null or /dev/stdout"


@dataclass(frozen=True)
class OutputFile:
    """Where an output file goes: `target` is the path with symlinks resolved; `stream`
    is 1 or 2 for the process's stdout or stderr; `device` is true for /dev/null or a
    terminal (written as a stream, never replaced)."""
    path: Path
    target: Path
    stream: int | None = None
    device: bool = False


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK | os.X_OK) if path.is_dir() else os.access(path, os.W_OK)


# Character-device majors of terminals (Linux: tty/ttyS 4, /dev/tty and /dev/console 5,
# pseudo-terminals 136-143). Told from the device number, never by opening the device:
# opening some devices acts (a watchdog starts counting).
_TTY_MAJORS = frozenset({4, 5, *range(136, 144)})
_PTMX = (5, 2)


def _terminal(st: os.stat_result) -> bool:
    dev = (os.major(st.st_rdev), os.minor(st.st_rdev))
    return dev[0] in _TTY_MAJORS and dev != _PTMX


def check_output_dir(path: Path | str, *, key: str, what: str = "output folder",
                     error: type[BiasAuditError] = BiasAuditError, hint: str | None = None) -> Path:
    """A folder biasaudit writes into (made if missing): it, or its nearest existing
    parent, must be a writable folder (symlinks followed), outside /proc, /sys and /dev.
    Returns the folder with symlinks resolved."""
    p = Path(path)
    hint = hint or f"choose a writable folder: {key}=<folder>"
    try:
        target = p.expanduser().resolve()
    except (RuntimeError, OSError, ValueError) as exc:
        raise error(f"cannot use the {what} ({exc})", file=str(p), key=key, hint="check for symlink loops") from None
    root = pseudo_root(target)
    if root is not None:
        raise error(f"cannot write the {what}: it is in {root}, a kernel pseudo file system", file=str(p), key=key,
                    hint=hint)
    existing = next((a for a in (target, *target.parents) if os.path.lexists(a)), None)
    if existing is None:
        return target
    try:
        st = existing.stat()
    except OSError as exc:
        raise error(f"cannot write the {what}: {existing}: {_os_reason(exc)}", file=str(p), key=key,
                    hint=hint) from None
    if not stat.S_ISDIR(st.st_mode):
        raise error(f"cannot write the {what}: {existing} is not a folder", file=str(p), key=key, hint=hint)
    if not _writable(existing):
        raise error(f"cannot write the {what}: {existing} is not writable", file=str(p), key=key, hint=hint)
    return target


def check_output_file(path: Path | str, *, key: str, what: str = "output file", streams: bool = True,
                      error: type[BiasAuditError] = BiasAuditError, hint: str | None = None) -> OutputFile:
    """Where an output file a user names can be written, checked before any work:
    symlinks are followed (the target is written, the link stays); with `streams`,
    /dev/stdout, /dev/stderr, /dev/null and a terminal are written as streams; a
    directory, FIFO, socket, other device or pseudo file is refused, as is a read-only
    file or folder. A missing file's folders are made when it is written."""
    p = Path(path)
    hint = hint or (_OUT_HINT if streams else "give a regular file path in a writable folder")
    if streams and str(p) in STD_STREAMS:
        return OutputFile(p, p, stream=STD_STREAMS[str(p)])
    try:
        target = p.expanduser().resolve()
    except (RuntimeError, OSError, ValueError) as exc:
        raise error(f"cannot use the {what} path ({exc})", file=str(p), key=key,
                    hint="check for symlink loops") from None
    try:
        st: os.stat_result | None = target.stat()
    except (FileNotFoundError, NotADirectoryError):  # a new file (a folder on its path is checked below)
        st = None
    except OSError as exc:
        raise error(f"cannot use the {what} path: {_os_reason(exc)}", file=str(p), key=key, hint=hint) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise error(f"the {what} path is a directory, not a file", file=str(p), key=key, hint=hint)
    if st is not None and stat.S_ISCHR(st.st_mode) and streams and (str(target) == "/dev/null" or _terminal(st)):
        return OutputFile(p, target, device=True)
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "a device")
        raise error(f"the {what} path is {kind}, not a regular file", file=str(p), key=key, hint=hint)
    root = pseudo_root(target)
    if root is not None:
        raise error(f"cannot write the {what}: it is in {root}, a kernel pseudo file system", file=str(p), key=key,
                    hint=hint)
    if st is not None and not _writable(target):
        raise error(f"cannot write the {what}: the file is read-only", file=str(p), key=key, hint=hint)
    check_output_dir(target.parent, key=key, what=f"{what}'s folder", error=error, hint=hint)
    return OutputFile(p, target)


def write_output_file(path: Path | str, text: str, *, key: str, what: str = "output file") -> OutputFile:
    """Write `text` where `check_output_file` says (checked again: the run may have taken
    hours): a stream is written to, a regular file replaced atomically."""
    out = check_output_file(path, key=key, what=what)
    if out.stream is not None:
        stream = sys.stdout if out.stream == 1 else sys.stderr
        stream.write(text)
        stream.flush()
    elif out.device:
        try:
            with open(out.target, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise write_error(out.path, exc) from None
    else:
        try:
            out.target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise write_error(out.path, exc) from None
        atomic_write(out.target, text)
    return out


def atomic_write(path: Path, text: str) -> None:
    """Write via a temporary file and rename: a reader sees the old file or the new one.
    The temporary file is made new (never opened through a symlink or a file already
    there). On failure (read-only folder, full disk) it is removed and the error names
    the file."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o666)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise write_error(path, exc) from None


@contextlib.contextmanager
def atomic_binary(path: Path) -> Iterator[IO[bytes]]:
    """A binary file written whole or not at all (a download): the block writes a new
    temporary file beside `path` (a random name, made new: never opened through a symlink
    or a file already there), which is renamed over `path` when the block ends and removed
    when it raises, so an interrupted or refused write leaves nothing behind."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.part")
    try:
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        raise write_error(path, exc) from None
    try:
        with os.fdopen(fd, "w+b") as f:  # readable too: a download is hashed from what was written
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise write_error(path, exc) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def write_error(path: Path, exc: OSError) -> BiasAuditError:
    reason = {errno.ENOSPC: "the disk is full", errno.EROFS: "the file system is read-only",
              errno.EACCES: "permission denied", errno.EDQUOT: "disk quota exceeded",
              errno.EISDIR: "it is a directory"}.get(exc.errno or 0, exc.strerror or type(exc).__name__)
    return BiasAuditError(f"cannot write: {reason}", file=str(path),
                          hint="free space or choose another folder (runtime.reports_dir, runtime.cache)")
