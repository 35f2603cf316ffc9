"""Index directories: a manifest (format version, kind, counts, parameters, checksums), atomic builds, validation."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from sleuth import __version__
from sleuth.errors import IndexError_
from sleuth.io import atomic_write_text

FORMAT = "sleuth-index"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
CURRENT = "CURRENT"
GENERATIONS = "generations"
T = TypeVar("T")


@dataclass
class Manifest:
    """What an index directory holds; written last, so a directory with a valid manifest is complete."""

    kind: str
    count: int
    params: dict[str, Any] = field(default_factory=dict)
    encoder: dict[str, Any] | None = None
    dimensions: int | None = None
    corpus: dict[str, Any] = field(default_factory=dict)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    format: str = FORMAT
    format_version: int = FORMAT_VERSION
    sleuth_version: str = __version__
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


def file_digest(path: Path) -> dict[str, Any]:
    """Size and SHA-256 of one file."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}


def write_manifest(directory: Path, manifest: Manifest) -> Manifest:
    """Checksum every file in ``directory`` into the manifest and write it (atomically, last)."""
    manifest.files = {
        str(p.relative_to(directory)): file_digest(p)
        for p in sorted(directory.rglob("*")) if p.is_file() and p.name != MANIFEST
    }
    atomic_write_text(directory / MANIFEST, manifest.to_json())
    return manifest


def read_manifest(directory: str | Path, kind: str | None = None, verify: bool = False) -> Manifest:
    """Load and validate an index directory's manifest; every problem is an IndexError_ naming the path.

    Checks: the directory and manifest exist, the manifest parses, format and version are known, the kind is the
    one expected, every listed file exists with its recorded size (and SHA-256 when ``verify``).
    """
    directory = Path(directory)
    path = directory / MANIFEST
    if not directory.is_dir():
        raise IndexError_(f"no index at {directory} (build one with 'sleuth index')")
    if not path.is_file():
        raise IndexError_(f"{path}: manifest missing; the directory is not a complete sleuth index")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise IndexError_(f"{path}: corrupt manifest ({exc})") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise IndexError_(f"{path}: not a sleuth index manifest (format is not '{FORMAT}')")
    if raw.get("format_version") != FORMAT_VERSION:
        raise IndexError_(f"{path}: format version {raw.get('format_version')!r} is not supported "
                          f"(this sleuth reads version {FORMAT_VERSION}); rebuild the index")
    known = set(Manifest.__dataclass_fields__)
    unknown = set(raw) - known
    if unknown:
        raise IndexError_(f"{path}: unknown manifest field(s) {sorted(unknown)}")
    try:
        manifest = Manifest(**raw)
    except TypeError as exc:
        raise IndexError_(f"{path}: incomplete manifest ({exc})") from None
    check_field_types(manifest, path)
    if kind is not None and manifest.kind != kind:
        raise IndexError_(f"{directory} is a '{manifest.kind}' index, not a '{kind}' index")
    for name, info in manifest.files.items():
        file = directory / name
        if not file.is_file():
            raise IndexError_(f"{file}: listed in the manifest but missing")
        if file.stat().st_size != info.get("bytes"):
            raise IndexError_(f"{file}: size {file.stat().st_size} differs from the manifest's {info.get('bytes')}")
        if verify and file_digest(file)["sha256"] != info.get("sha256"):
            raise IndexError_(f"{file}: checksum differs from the manifest")
    return manifest


FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "kind": (str,), "count": (int,), "params": (dict,), "encoder": (dict, type(None)),
    "dimensions": (int, type(None)), "corpus": (dict,), "files": (dict,), "sleuth_version": (str,), "created": (str,),
}


def check_field_types(manifest: Manifest, path: Path) -> None:
    """An IndexError_ naming ``path`` and the field when a manifest field (or a ``files`` entry) has the wrong type."""
    for name, types in FIELD_TYPES.items():
        value = getattr(manifest, name)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise IndexError_(f"{path}: corrupt manifest (field '{name}' is {type(value).__name__}: {value!r})"[:300])
    for name, info in manifest.files.items():
        if not isinstance(info, dict) or not isinstance(info.get("bytes"), int):
            raise IndexError_(f"{path}: corrupt manifest (files entry {name!r} has no byte size)"[:300])


def current_generation(directory: str | Path) -> Path:
    """The directory holding the served index: ``directory/generations/<name in CURRENT>`` for an updatable index
    (see :mod:`sleuth.index.updates`), else ``directory`` itself (indexes never updated load unchanged)."""
    directory = Path(directory)
    try:
        name = (directory / CURRENT).read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):
        return directory
    if not name or "/" in name or name.startswith("."):
        raise IndexError_(f"{directory / CURRENT}: invalid generation name {name!r}")
    return directory / GENERATIONS / name


def load_generation(directory: str | Path, load: Callable[[Path], T], attempts: int = 3) -> T:
    """``load(current_generation(directory))``, tried again when it fails because an update switched ``CURRENT``
    and collected the generation while it was being read (so a slow reader gets the newer generation)."""
    for attempt in range(attempts):
        generation = current_generation(directory)
        try:
            return load(generation)
        except (IndexError_, OSError):
            if attempt == attempts - 1 or current_generation(directory) == generation:
                raise
    raise AssertionError("unreachable")


def build_directory(target: str | Path | None) -> contextlib.AbstractContextManager[Path | None]:
    """``atomic_directory(target)``, or a context yielding None when the index is built in memory only."""
    return contextlib.nullcontext() if target is None else atomic_directory(target)


@contextlib.contextmanager
def atomic_directory(target: str | Path) -> Iterator[Path]:
    """Build a directory atomically: yield a temporary sibling, then swap it into place on success.

    On an exception (or a kill) the temporary directory is discarded (or left as ``.NAME.tmp-*``) and any
    existing ``target`` stays untouched and usable.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex[:8]
    tmp = target.parent / f".{target.name}.tmp-{tag}"
    tmp.mkdir()
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = target.parent / f".{target.name}.old-{tag}"
    if target.exists():
        os.replace(target, old)
    os.replace(tmp, target)
    shutil.rmtree(old, ignore_errors=True)
