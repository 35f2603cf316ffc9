"""Small file helpers: atomic writes (temporary path, then rename), opening compressed files, write errors named by
file, and a test switch that kills the process at the Nth rename or fsync (``SLEUTH_FAULT``)."""

from __future__ import annotations

import bz2
import contextlib
import errno
import glob
import gzip
import io
import os
import re
import shutil
import signal
import socket
import tempfile
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, BinaryIO, cast

#: the compression a file name's last suffix means (in any case: ``run.TREC.GZ`` is gzip), for reading and writing
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2"}


def compression_of(path: str | Path) -> str | None:
    """``"gzip"`` or ``"bz2"`` where ``path``'s name ends in ``.gz`` or ``.bz2`` (any case), else None: what
    :func:`open_text` reads and :func:`atomic_write_text` writes (before: ``.GZ`` was read as plain text, while a run
    file's name dropped it)."""
    return COMPRESSIONS.get(Path(path).suffix.lower())


def uncompressed_name(path: str | Path) -> str:
    """A file's name without the ``.gz`` / ``.bz2`` that makes sleuth read and write it compressed."""
    name = Path(path).name
    return Path(name).stem if compression_of(name) else name


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory, then rename over it; compressed
    where the name ends in ``.gz`` or ``.bz2`` (:func:`compression_of`), as :func:`open_text` reads it (a run file,
    predictions, a corpus)."""
    data = text.encode("utf-8")
    compression = compression_of(path)
    if compression == "gzip":
        data = gzip.compress(data, compresslevel=6, mtime=0)  # mtime 0: the same text gives the same bytes
    elif compression == "bz2":
        data = bz2.compress(data)
    atomic_write_bytes(path, data)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: readers see the old file or the new one, never half of it."""
    path = Path(path)
    if path.is_dir():  # before: a temporary file beside the folder, then "<that file>: cannot write (Is a directory)"
        from sleuth.errors import StorageError

        raise StorageError(f"{path}: is a folder, not a file; give a file name (nothing was written)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp creates 0600; give the file the permissions open() would
        replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise write_error(exc, path) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


FAULT = "SLEUTH_FAULT"
_fault_counts: dict[str, int] = {}


def fault_point(operation: str) -> None:
    """Test switch: with ``SLEUTH_FAULT=rename:3`` (or ``fsync:2``) the process kills itself (SIGKILL, as ``kill -9``)
    just before its 3rd rename (2nd fsync) done through :func:`replace` (:func:`fsync`); unset, it does nothing.
    The fault suite (tests/faults/) uses it to interrupt builds and updates at every step deterministically."""
    spec = os.environ.get(FAULT)
    if not spec:
        return
    name, _, nth = spec.partition(":")
    if name != operation:
        return
    _fault_counts[operation] = _fault_counts.get(operation, 0) + 1
    if str(_fault_counts[operation]) == nth.strip():
        os.kill(os.getpid(), signal.SIGKILL)


def replace(source: str | Path, target: str | Path) -> None:
    """``os.replace`` (an atomic rename), with the :func:`fault_point` of the fault suite."""
    fault_point("rename")
    os.replace(source, target)


def fsync(fd: int) -> None:
    """``os.fsync``, with the :func:`fault_point` of the fault suite."""
    fault_point("fsync")
    os.fsync(fd)


def write_error(exc: OSError, path: str | Path) -> Exception:
    """A one-line SleuthError for a failed write (disk full, quota, permissions) naming the file (the one the
    OSError names, else ``path``) and, unless the reason is a permission, the free space left on its disk."""
    from sleuth.errors import StorageError

    where = exc.filename or path
    reason = exc.strerror or " ".join(str(exc).split()) or type(exc).__name__
    if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT, errno.ENOTDIR, errno.EEXIST):
        reason += f"; {free_space(Path(where))}"
    return StorageError(f"{where}: cannot write ({reason}); nothing written before was changed")


def free_space(path: Path) -> str:
    """``"N bytes free on its disk"`` for the nearest existing folder of ``path`` (for write error messages)."""
    for folder in (path, *path.parents):
        with contextlib.suppress(OSError):
            return f"{shutil.disk_usage(folder).free:,} bytes free on its disk"
    return "free space unknown"


def current_umask() -> int:
    """The process's umask, read without changing it where Linux says it (``/proc/self/status``): setting it to read
    it back would, for that instant, give other threads' new files the widest permissions."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def open_text(path: str | Path) -> TextFile:
    """Open a UTF-8 text file for reading, transparently decompressing ``.gz`` and ``.bz2`` (:func:`compression_of`).

    A missing path raises an InputError naming it (not a FileNotFoundError traceback), and so do bytes that are
    not UTF-8 (a binary file, Latin-1 text): with the line number when the file is read line by line.
    """
    from sleuth.errors import InputError

    if not Path(path).is_file():
        raise InputError("is a folder; give a file" if Path(path).is_dir() else "file not found", path=path)
    compression = compression_of(path)
    handle = (gzip.open(path, "rb") if compression == "gzip" else bz2.open(path, "rb") if compression == "bz2"
              else open(path, "rb"))
    return TextFile(cast(IO[bytes], handle), path)


def text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of each non-blank line of a text file (:func:`open_text`), without its line end."""
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if line.strip():
                yield number, line


class TextFile:
    r"""A UTF-8 text file read from its bytes, so a decoding error is reported as an InputError naming the file and,
    for line-by-line reading (iteration, ``readline``), the exact line. ``\r\n`` line ends read as ``\n``, and a byte
    order mark at the start of the file is dropped."""

    def __init__(self, raw: IO[bytes], path: str | Path):
        self._raw, self.path, self.lines_read = raw, path, 0
        self._text: io.TextIOWrapper | None = None

    def __enter__(self) -> TextFile:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        (self._text or self._raw).close()

    def __iter__(self) -> Iterator[str]:
        while raw := self._raw_line():
            yield self._line(raw)

    def readline(self) -> str:
        return self._line(self._raw_line())

    def _raw_line(self) -> bytes:
        """The next line's bytes; a compressed file that ends early or is corrupt is an InputError naming it and the
        line (before: gzip's EOFError became click's Abort, an exit 1 with an empty message)."""
        try:
            return self._raw.readline()
        except (EOFError, OSError, zlib.error) as exc:
            raise self._damaged(exc, self.lines_read + 1) from None

    def read(self, size: int = -1) -> str:
        """Up to ``size`` characters (all with -1), decoded in chunks: a decoding error names the file only."""
        if self._text is None:
            self._text = io.TextIOWrapper(cast(BinaryIO, self._raw),
                                          encoding="utf-8-sig" if self.lines_read == 0 else "utf-8")
        try:
            return self._text.read(size)
        except UnicodeDecodeError as exc:
            raise self._error(exc, None) from None
        except (EOFError, OSError, zlib.error) as exc:
            raise self._damaged(exc, None) from None

    def _line(self, raw: bytes) -> str:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._error(exc, self.lines_read + 1) from None
        if self.lines_read == 0 and text.startswith("\ufeff"):
            text = text[1:]  # a byte order mark (Windows editors write one before UTF-8 text)
        if text.endswith("\n"):
            self.lines_read += 1
            if text.endswith("\r\n"):
                text = text[:-2] + "\n"
        return text

    def _damaged(self, exc: BaseException, line: int | None) -> Exception:
        from sleuth.errors import InputError

        reason = " ".join(str(exc).split()) or type(exc).__name__
        return InputError(f"the compressed file is truncated or damaged ({reason[:120]})", path=self.path, line=line)

    def _error(self, exc: UnicodeDecodeError, line: int | None) -> Exception:
        from sleuth.errors import InputError

        return InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start}); is it a binary file? "
                          "Convert it to UTF-8", path=self.path, line=line)


@contextlib.contextmanager
def atomic_directory(target: str | Path, markers: tuple[str, ...] | None = None) -> Iterator[Path]:
    """Build a directory atomically: yield a temporary sibling, then swap it into place on success. With
    ``markers``, an existing ``target`` is replaced only when it is empty or holds one of these files (what sleuth
    writes there), else a ConfigError, checked before and again before the swap (before: a ``cos train --out``
    naming the home folder replaced it whole with the model).

    On an exception the temporary directory is discarded and any existing ``target`` stays untouched and usable.
    A kill leaves ``.NAME.tmp-HOST-PID-TAG`` (or, between the two renames, ``.NAME.old-HOST-PID-TAG``); the next
    build of the same target removes (or moves back) such leftovers once their process is gone
    (:func:`remove_stale_temporaries`). Index folders use :func:`sleuth.index.commit.build_target` instead, which
    never leaves the path empty.
    """
    target = Path(target).absolute()
    refuse_foreign_folder(target, markers)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(target)
    tag = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp = target.parent / f".{target.name}.tmp-{tag}"
    tmp.mkdir()
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = target.parent / f".{target.name}.old-{tag}"
    try:
        refuse_foreign_folder(target, markers)  # it may have changed while the work ran
        readable_as_open_makes(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if target.exists():
        replace(target, old)
    replace(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


def readable_as_open_makes(folder: Path) -> None:
    """Give the files under ``folder`` that their writer made private (mode 0600: safetensors' and mkstemp's) the
    permissions ``open()`` gives under the umask (before: model weights were unreadable to other users, beside
    readable configs)."""
    umask = current_umask()
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_mode & 0o777 == 0o600:
            path.chmod(0o666 & ~umask)


def refuse_foreign_folder(target: Path, markers: tuple[str, ...] | None) -> None:
    """A ConfigError when ``target`` exists and is a file, or a folder of other files (not empty, none of
    ``markers``); nothing when ``markers`` is None."""
    if markers is None or not (target.exists() or target.is_symlink()):
        return
    from sleuth.errors import ConfigError

    if not target.is_dir():
        raise ConfigError(f"{target}: a file, not a folder; refusing to replace it")
    if any(target.iterdir()) and not any((target / name).exists() for name in markers):
        raise ConfigError(f"{target}: a folder of other files (none of {', '.join(markers)}); refusing to replace it "
                          "(choose a new or empty folder)")


def remove_stale_temporaries(target: Path) -> list[Path]:
    """Remove ``.NAME.tmp-HOST-PID-TAG`` and ``.NAME.old-HOST-PID-TAG`` siblings of ``target`` left by killed
    builds on this host (only sleuth's own names, only when PID is no longer running); an ``.old`` folder whose
    ``target`` is missing (killed between the two renames of a swap) is moved back to ``target`` instead.
    Returns the removed paths."""
    pattern = re.compile(rf"^\.{re.escape(target.name)}\.(tmp|old)-(.+)-(\d+)-[0-9a-f]{{8}}$")
    host, removed = socket.gethostname(), []
    for path in sorted(target.parent.glob(f".{glob.escape(target.name)}.*-*"), key=lambda p: ".old-" not in p.name):
        match = pattern.match(path.name)
        if match is None or match[2] != host or process_alive(int(match[3])):
            continue
        if match[1] == "old" and not target.exists() and not target.is_symlink():
            replace(path, target)  # the only copy of what was there: restore it
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host is running (someone else's live process counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True
