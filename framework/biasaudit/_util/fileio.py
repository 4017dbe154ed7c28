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

Outputs: this module is the one writer. Every file biasaudit writes outside its SQLite
store goes through `write_output_file` (bytes or text), `open_output` (a streamed write,
e.g. a zip or a JSONL trail), `atomic_write` (a fixed-name file in a folder biasaudit
owns), `open_append` (a log), `atomic_binary` (a download) or `publish` (a file or folder
made in a scratch place, moved in); `check_output_file` / `check_output_dir` check a path
before a run starts. The rule (details at "the one writer" below): a symlink at the
destination is never followed (refused, or with `force` the link itself replaced); a
directory, FIFO, socket, device or pseudo file is refused (`/dev/null`, a terminal and the
process's own `/dev/stdout` and `/dev/stderr` are written as streams where allowed); an
existing file is replaced only when it is biasaudit's (`ours`) or with `force`; a regular
file is written to a temporary file in the same folder and renamed, never half written.
Exempt, each for its reason: the SQLite store (`store/`) and the embedding cache
(`backends/embedder.py`): SQLite opens and journals its own files; and private scratch
folders made by `tempfile.TemporaryDirectory` (nobody else's path). The architecture test
`tests/unit/test_arch_writer.py` keeps it so.
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
from typing import IO, Any

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


# -- outputs: the one writer -----------------------------------------------------------------
#
# Every file biasaudit writes outside its store goes through the functions below (an
# architecture test, tests/unit/test_arch_writer.py, fails on any other write). The rule:
#
# * a symlink at the destination is never followed: without `force` it is refused (one
#   line naming the path and the link's target); with `force` the link itself is replaced
#   by the new file and its target is left alone;
# * a directory, FIFO, socket, device (but /dev/null and a terminal, written as streams
#   where `streams` allows) and anything under /proc or /sys are refused;
# * an existing regular file is replaced only when it is ours (`ours=True`: the caller
#   writes a file of a fixed name in a folder biasaudit makes and owns, a run folder;
#   `ours=b"marker"`: the file holds biasaudit's marker for that kind of file in its first
#   64 KiB, e.g. the viewer page's `<meta name="generator">`) or with `force`; a read-only
#   file is refused;
# * a regular file is written to a new temporary file (random name, O_EXCL|O_NOFOLLOW) in
#   the same folder and renamed over the destination, checked again just before: a reader
#   sees the old file or the new one, a failed write leaves the old file and no temporary.

# The process's own standard streams: written to as they are, never reopened or replaced.
STD_STREAMS = {"/dev/stdout": 1, "/dev/stderr": 2, "/dev/fd/1": 1, "/dev/fd/2": 2,
               "/proc/self/fd/1": 1, "/proc/self/fd/2": 2}
_OUT_HINT = "give a file path in a writable folder, /dev/null or /dev/stdout"
FORCE_HINT = "choose another path, or pass --force to replace it"
LINK_HINT = "remove the link or choose another path (--force replaces the link itself, never its target)"
# How much of an existing file is read to find biasaudit's marker in it.
MARKER_SPAN = 64 * 1024
# Viewer pages and HTML reports carry this in their <head>; `ours=HTML_MARKER` recognises them.
HTML_MARKER = b'<meta name="generator" content="biasaudit">'

Ours = bool | bytes
"""Whether an existing file at the destination may be replaced without `force`: True
(a file of a fixed name in a folder biasaudit owns), a marker (the file holds it), or False."""


@dataclass(frozen=True)
class OutputFile:
    """Where an output file goes: `target` is the absolute path, its folders' symlinks
    resolved and its last part never followed; `stream` is 1 or 2 for the process's
    stdout or stderr; `device` is true for /dev/null or a terminal (written as a stream,
    never replaced); `exists` says a file or link is there now."""
    path: Path
    target: Path
    stream: int | None = None
    device: bool = False
    exists: bool = False


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
    parent, must be a writable folder (symlinks followed: a folder path is the user's),
    outside /proc, /sys and /dev. Returns the folder with symlinks resolved."""
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


def _place(p: Path) -> Path:
    """`p` made absolute with its folders' symlinks resolved and its last part kept as it
    is: the destination is looked at (lstat), never followed."""
    p = p.expanduser()
    return p.parent.resolve() / p.name


def _kind(st: os.stat_result) -> str:
    return ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
            else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device")


def holds_marker(path: Path, marker: bytes) -> bool:
    """Whether the regular file at `path` (never followed if a link) holds `marker` in
    its first `MARKER_SPAN` bytes."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        return marker in f.read(MARKER_SPAN)


def _is_ours(target: Path, ours: Ours) -> bool:
    return ours if isinstance(ours, bool) else holds_marker(target, ours)


def check_output_file(path: Path | str, *, key: str, what: str = "output file", streams: bool = True,
                      force: bool = False, ours: Ours = False,
                      error: type[BiasAuditError] = BiasAuditError, hint: str | None = None) -> OutputFile:
    """Where an output file can be written, checked before any work (and again when it
    is written): the rule above. With `streams`, /dev/stdout, /dev/stderr, /dev/null and
    a terminal are written as streams. A missing file's folders are made when it is
    written. Every refusal is one line naming the file, the reason and the fix."""
    p = Path(path)
    force_hint = hint or FORCE_HINT
    hint = hint or (_OUT_HINT if streams else "give a regular file path in a writable folder")
    if streams and str(p) in STD_STREAMS:
        return OutputFile(p, p, stream=STD_STREAMS[str(p)])
    try:
        target = _place(p)
    except (RuntimeError, OSError, ValueError) as exc:
        raise error(f"cannot use the {what} path ({exc})", file=str(p), key=key,
                    hint="check for symlink loops") from None
    try:
        st: os.stat_result | None = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):  # a new file (a folder on its path is checked below)
        st = None
    except (OSError, ValueError) as exc:
        reason = _os_reason(exc) if isinstance(exc, OSError) else f"not a usable path ({exc})"
        raise error(f"cannot use the {what} path: {reason}", file=str(p), key=key, hint=hint) from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        if not force:
            try:
                to = os.readlink(target)
            except OSError:
                to = "?"
            raise error(f"the {what} path is a symbolic link (to {excerpt(to, 80)}); biasaudit never writes "
                        "through a link", file=str(p), key=key, hint=LINK_HINT)
    elif st is not None and stat.S_ISDIR(st.st_mode):
        raise error(f"the {what} path is a directory, not a file", file=str(p), key=key, hint=hint)
    elif st is not None and stat.S_ISCHR(st.st_mode) and streams and (str(target) == "/dev/null" or _terminal(st)):
        return OutputFile(p, target, device=True, exists=True)
    elif st is not None and not stat.S_ISREG(st.st_mode):
        raise error(f"the {what} path is {_kind(st)}, not a regular file", file=str(p), key=key, hint=hint)
    root = pseudo_root(target.parent) or (_pseudo_devices().get(st.st_dev) if st is not None else None)
    if root is not None:
        raise error(f"cannot write the {what}: it is in {root}, a kernel pseudo file system", file=str(p), key=key,
                    hint=hint)
    if st is not None and stat.S_ISREG(st.st_mode):
        if not _writable(target):
            raise error(f"cannot write the {what}: the file is read-only", file=str(p), key=key, hint=hint)
        if not force and not _is_ours(target, ours):
            raise error(f"the {what} exists and is not a file biasaudit wrote; it is left as it is", file=str(p),
                        key=key, hint=force_hint)
    check_output_dir(target.parent, key=key, what=f"{what}'s folder", error=error, hint=hint)
    return OutputFile(p, target, exists=st is not None)


def check_store_file(path: Path | str, *, key: str, what: str = "cache",
                     error: type[BiasAuditError] = BiasAuditError, hint: str | None = None) -> OutputFile:
    """The SQLite store's database path, exempt from the one writer's link rule: SQLite
    opens, journals and locks its own files, and a cache may be a link to a shared disk on
    purpose, so links are followed here; the target is checked by the same rule otherwise
    (no directory, FIFO, socket, device or pseudo file, a writable place; an existing file
    is SQLite's to judge: one that is no database is refused by the store)."""
    p = Path(path)
    try:
        target = p.expanduser().resolve()
    except (RuntimeError, OSError, ValueError) as exc:
        raise error(f"cannot use the {what} path ({exc})", file=str(p), key=key,
                    hint="check for symlink loops") from None
    if os.path.islink(p.expanduser()) and not target.exists():
        # a dangling link: SQLite would create a new database wherever it points
        raise error(f"the {what} path is a symbolic link to {target}, which does not exist; a new {what} "
                    "is never made through a link", file=str(p), key=key,
                    hint="remove the link, or give the path of an existing cache or of a new file")
    out = check_output_file(target, key=key, what=what, streams=False, ours=True, error=error, hint=hint)
    return OutputFile(p, out.target, exists=out.exists)


_NEW = os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _temp_beside(target: Path, error: type[BiasAuditError]) -> tuple[int, Path]:
    """A new temporary file in `target`'s folder (a random name, made new: never opened
    through a link or a file already there), its folders made first."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(16):
            tmp = target.with_name(f".{target.name[:200]}.{secrets.token_hex(6)}.tmp")
            try:
                return os.open(tmp, os.O_RDWR | _NEW, 0o666), tmp
            except FileExistsError:
                continue
        raise FileExistsError(errno.EEXIST, "no free temporary name")
    except OSError as exc:
        raise write_error(target, exc, error) from None


@contextlib.contextmanager
def open_output(path: Path | str, mode: str = "w", *, key: str, what: str = "output file", force: bool = False,
                ours: Ours = False, streams: bool = False, atomic: bool = True,
                error: type[BiasAuditError] = BiasAuditError, hint: str | None = None) -> Iterator[IO[Any]]:
    """A file written by the block (`mode` "w" text, UTF-8, or "wb"), by the rule above.
    With `atomic` (the default) the block writes a temporary file that replaces the
    destination when the block ends and is removed when it raises; without it (a log a
    child process writes as it goes) the new empty file replaces the destination at once.
    A stream (`streams`: /dev/stdout, /dev/null, a terminal) is written as it is."""
    if mode not in ("w", "wb"):
        raise ValueError(f"open_output: mode {mode!r} (give 'w' or 'wb')")
    out = check_output_file(path, key=key, what=what, streams=streams, force=force, ours=ours, error=error, hint=hint)
    if out.stream is not None:
        s = sys.stdout if out.stream == 1 else sys.stderr
        yield s if mode == "w" else s.buffer
        s.flush()
        return
    if out.device:  # /dev/null or a terminal: lstat said a character device, not a link
        try:
            f = open(out.target, mode, encoding="utf-8" if mode == "w" else None)  # noqa: SIM115
        except OSError as exc:
            raise write_error(out.path, exc, error) from None
        with f:
            yield f
        return
    fd, tmp = _temp_beside(out.target, error)
    try:
        f = os.fdopen(fd, mode, encoding="utf-8" if mode == "w" else None)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    try:
        with f:
            if not atomic:
                os.replace(tmp, out.target)
            yield f
            f.flush()
        if atomic:  # checked again: a link or another file may have appeared meanwhile
            check_output_file(out.path, key=key, what=what, streams=False, force=force, ours=ours, error=error,
                              hint=hint)
            os.replace(tmp, out.target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise write_error(out.path, exc, error) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def write_output_file(path: Path | str, data: str | bytes, *, key: str, what: str = "output file",
                      force: bool = False, ours: Ours = False, streams: bool = True,
                      error: type[BiasAuditError] = BiasAuditError, hint: str | None = None) -> OutputFile:
    """Write `data` (text as UTF-8) to `path` by the rule above (checked again: the run may
    have taken hours): a stream is written to, a regular file replaced atomically."""
    out = check_output_file(path, key=key, what=what, streams=streams, force=force, ours=ours, error=error,
                            hint=hint)
    with open_output(path, "wb" if isinstance(data, bytes) else "w", key=key, what=what, force=force, ours=ours,
                     streams=streams, error=error, hint=hint) as f:
        f.write(data)
    return out


def atomic_write(path: Path, text: str | bytes, *, key: str = "output", what: str = "file") -> None:
    """A file of a fixed name in a folder biasaudit owns (a run folder, its plots, a
    compare or suite folder): `write_output_file` with `ours=True` and no streams, so an
    old copy is replaced but a link is refused, never followed."""
    write_output_file(path, text, key=key, what=what, ours=True, streams=False)


@contextlib.contextmanager
def open_append(path: Path | str, *, key: str, what: str = "log file", ours: Ours = True,
                force: bool = False) -> Iterator[IO[str]]:
    """A text file appended to (a log written line by line): opened without following a
    link (O_NOFOLLOW) and checked on the open file to be a regular file; made if missing."""
    out = check_output_file(path, key=key, what=what, streams=False, ours=ours, force=force)
    if out.exists and os.path.islink(out.target):  # --force: the link goes, its target stays
        os.unlink(out.target)
    try:
        fd = os.open(out.target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        raise write_error(out.path, exc) from None
    f = os.fdopen(fd, "a", encoding="utf-8")
    with f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BiasAuditError(f"the {what} path is not a regular file", file=str(path), key=key, hint=_OUT_HINT)
        yield f


@contextlib.contextmanager
def atomic_binary(path: Path) -> Iterator[IO[bytes]]:
    """A binary file written whole or not at all (a download into biasaudit's own model or
    data folder): the block writes a new temporary file beside `path` (readable too: a
    download is hashed from what was written), renamed over `path` (never through a link:
    a rename replaces the link itself) when the block ends and removed when it raises."""
    fd, tmp = _temp_beside(_place(path), BiasAuditError)
    try:
        with os.fdopen(fd, "w+b") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, _place(path))
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise write_error(path, exc) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def publish(tmp: Path, target: Path, *, key: str, what: str = "file", force: bool = False,
            ours: Ours = True) -> None:
    """Move a file or folder biasaudit made in a private scratch place (a model folder it
    built, a project `init` made, a PDF Chromium printed) to `target` by the rule above:
    the destination is never followed, an unrelated file is not replaced without `force`."""
    out = check_output_file(target, key=key, what=what, streams=False, force=force, ours=ours)
    try:
        out.target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, out.target)
    except OSError as exc:
        raise write_error(out.path, exc) from None


def write_error(path: Path | str, exc: OSError, error: type[BiasAuditError] = BiasAuditError) -> BiasAuditError:
    reason = {errno.ENOSPC: "the disk is full", errno.EROFS: "the file system is read-only",
              errno.EACCES: "permission denied", errno.EDQUOT: "disk quota exceeded",
              errno.EISDIR: "it is a directory"}.get(exc.errno or 0, exc.strerror or type(exc).__name__)
    return error(f"cannot write: {reason}", file=str(path),
                 hint="free space or choose another folder (runtime.reports_dir, runtime.cache)")
