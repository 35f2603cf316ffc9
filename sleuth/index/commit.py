"""Committing index directories, with Lucene's commit as the model: builds and updates of one index folder take the
same lock, publish a complete generation by switching ``CURRENT`` atomically, and remove the leftovers of
interrupted commits.

Guarantees (README "Index safety"):

* **One writer at a time.** ``INDEX/.update.lock`` (an ``flock``) is held by an update for its whole run and by a
  rebuild of an existing index from before its "changed by an update?" check until its commit. A rebuild started
  while an update runs waits for it (and then refuses, without ``--force``, to drop its changes); an update started
  while a rebuild runs waits for the rebuild and is applied on the new index. No update that reported success is
  dropped by a concurrent rebuild.
* **Always a loadable index at the path.** A first build renames its finished temporary folder to the new path (one
  atomic rename). A rebuild over an existing index renames its finished folder into ``INDEX/generations/gen-N`` and
  switches ``CURRENT``, exactly as an update does: a kill at any point leaves the old or the new index served.
* **Leftovers removed by the next run**: ``.NAME.tmp-*`` build folders (once their process is gone),
  ``generations/.tmp-*`` and unreferenced newer generations, ``.CURRENT.*.tmp``; a ``.NAME.old-*`` folder whose
  target is missing is moved back.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

from sleuth.errors import IndexError_
from sleuth.index.manifest import (
    CURRENT,
    GENERATIONS,
    MANIFEST,
    ROOT_GENERATION,
    check_parent_folders,
    current_generation,
    generations,
    is_index_directory,
    read_manifest,
    served_updates,
    write_current,
)
from sleuth.io import remove_stale_temporaries, replace, write_error

LOCK = ".update.lock"
_held: dict[tuple[str, int], int] = {}  # (index folder, thread) -> depth: the lock is re-entrant per thread


@contextlib.contextmanager
def index_lock(directory: str | Path) -> Iterator[None]:
    """Hold the exclusive lock of an index folder (waiting for another build or update to finish), re-entrant within
    a thread; on first taking it, remove the leftovers of interrupted commits (:func:`remove_leftovers`)."""
    directory = Path(directory)
    key = (str(directory.resolve()), threading.get_ident())
    if key in _held:
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    try:
        handle = open(directory / LOCK, "a")
    except OSError as exc:
        raise write_error(exc, directory / LOCK) from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        _held[key] = 1
        try:
            remove_leftovers(directory)
            yield
        finally:
            del _held[key]
            fcntl.flock(handle, fcntl.LOCK_UN)


def remove_leftovers(directory: Path) -> None:
    """Remove what interrupted commits left in an index folder: ``generations/.tmp-*``, ``.CURRENT.*.tmp`` and
    complete generations newer than the served one (renamed into place, killed before the switch)."""
    for leftover in (*(directory / GENERATIONS).glob(".tmp-*"), *directory.glob(f".{CURRENT}.*.tmp")):
        _remove(leftover)
    try:
        served = current_generation(directory)
    except IndexError_:
        return  # a damaged CURRENT: leave the generations for the error message and for a rebuild to replace
    if served.parent == directory / GENERATIONS:
        for name in generations(directory):
            if int(name[4:]) > int(served.name[4:]):
                _remove(directory / GENERATIONS / name)


def publish(index_dir: Path, folder: Path) -> str:
    """Make the complete index ``folder`` (its manifest written last) the served generation of ``index_dir``:
    rename it to ``generations/gen-N``, switch ``CURRENT``, then keep only it and the previous one. Returns its
    name. Call with the lock held; ``folder`` must be on the same file system."""
    generations_dir = index_dir / GENERATIONS
    generations_dir.mkdir(exist_ok=True)
    try:
        previous: Path | None = current_generation(index_dir)
    except IndexError_:
        previous = None  # a damaged CURRENT: nothing of it is worth keeping
    if not (index_dir / CURRENT).exists() and (index_dir / MANIFEST).is_file():
        write_current(index_dir, ROOT_GENERATION)  # generations/ never holds a generation without a CURRENT
    existing = generations(index_dir)
    name = f"gen-{int(existing[-1][4:]) + 1 if existing else 1:06d}"
    replace(folder, generations_dir / name)
    write_current(index_dir, name)  # the switch: readers now load the new generation
    for old in generations(index_dir):
        if old != name and generations_dir / old != previous:
            _remove(generations_dir / old)
    if previous != index_dir:
        remove_root_generation(index_dir)
    return name


def remove_root_generation(index_dir: Path) -> None:
    """Delete the original build stored in the index folder itself (its manifest first, then what it lists)."""
    manifest = index_dir / MANIFEST
    if not manifest.is_file():
        return
    try:
        listed = read_manifest(index_dir, verify=False).files
    except IndexError_:
        listed = {}
    manifest.unlink()
    for name in {Path(file).parts[0] for file in listed}:
        if name not in (CURRENT, GENERATIONS, LOCK):
            _remove(index_dir / name)


@contextlib.contextmanager
def build_target(target: str | Path) -> Iterator[Path]:
    """Build an index for ``target``: yield a temporary sibling folder to write it into; on success it becomes the
    index at ``target`` (a first build: one rename; over an existing index: a new generation, under the lock; over
    a folder of other files, which ``check_build_target`` lets through only with ``--force``: two renames). On an
    exception the temporary folder is removed and ``target`` is unchanged; an OSError (disk full, permissions)
    becomes a one-line StorageError naming the file."""
    target = Path(target).absolute()
    check_parent_folders(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(exc, target.parent) from None
    with contextlib.ExitStack() as locks:
        locked = is_index_directory(target)
        if locked:  # updates wait from here to the commit, so none lands between the check and the swap
            locks.enter_context(index_lock(target))
        remove_stale_temporaries(target)
        tag = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp = target.parent / f".{target.name}.tmp-{tag}"
        try:
            tmp.mkdir()
            yield tmp
            _commit_build(target, tmp, tag, locked)
        except OSError as exc:
            raise write_error(exc, target) from None
        finally:
            _remove(tmp)


def _commit_build(target: Path, tmp: Path, tag: str, locked: bool) -> None:
    if not target.exists() and not target.is_symlink() or target.is_dir() and not any(target.iterdir()):
        try:
            replace(tmp, target)  # a new (or empty) folder: one atomic rename
            return
        except OSError as exc:  # another build made it meanwhile
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR, errno.ENOTDIR):
                raise
    if is_index_directory(target):
        with index_lock(target):
            if not locked and _updated(target):
                raise IndexError_(f"{target} was built and then changed by 'sleuth update' while this build ran; "
                                  "nothing replaced: build again (with --force to drop those changes)")
            publish(target, tmp)
        return
    old = target.parent / f".{target.name}.old-{tag}"  # --force over other files: the next run restores a kill
    replace(target, old)
    replace(tmp, target)
    _remove(old)


def _updated(target: Path) -> bool:
    try:
        return served_updates(target) > 0
    except IndexError_:
        return False


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
