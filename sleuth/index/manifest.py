"""Index directories: a manifest (format version, kind, counts, parameters, checksums, its own checksum), the
``CURRENT`` file of updated and rebuilt indexes (its own checksum and the served manifest's), build targets,
validation."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from sleuth import __version__
from sleuth.errors import IndexError_
from sleuth.io import atomic_write_text
from sleuth.overwrite import refuse_overwriting_inputs

FORMAT = "sleuth-index"
FORMAT_VERSION = 2  # 2: the manifest carries its own checksum; version 1 manifests (without) still load
READ_VERSIONS = (1, 2)
MANIFEST = "manifest.json"
CURRENT = "CURRENT"
GENERATIONS = "generations"
GENERATION = re.compile(r"^gen-(\d{6,})$")
ROOT_GENERATION = "gen-000000"  # in CURRENT: the index directory itself (the original build) is served
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
    checksum: str = ""

    def to_json(self) -> str:
        """The manifest's JSON text, with ``checksum`` set to the SHA-256 of every other field (so one flipped bit
        anywhere, e.g. in a token pattern or k1, is refused at load)."""
        self.format_version = FORMAT_VERSION
        fields = asdict(self)
        fields.pop("checksum")
        self.checksum = manifest_checksum(fields)
        return json.dumps({**fields, "checksum": self.checksum}, indent=2, sort_keys=True)


def manifest_checksum(fields: dict[str, Any]) -> str:
    """SHA-256 of a manifest's fields (all but ``checksum``) in a canonical JSON form."""
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def require_manifest(manifest: Manifest | None, what: str) -> Manifest:
    """The manifest of a built or loaded index; an IndexError_ for an index made in memory without one."""
    if manifest is None:
        raise IndexError_(f"this {what} index has no manifest (only built or loaded indexes can be saved or updated)")
    return manifest


def file_digest(path: Path) -> dict[str, Any]:
    """Size and SHA-256 of one file."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}


def write_manifest(directory: Path, manifest: Manifest) -> Manifest:
    """Checksum the files of ``directory`` into the manifest and write it (atomically, last).

    A subfolder holding its own manifest (a shard: an index directory inside this one, loaded and checked by its
    own manifest) is listed by that manifest alone, so every file is hashed once when written and once at load."""
    manifest.files = {str(p.relative_to(directory)): file_digest(p) for p in sorted(listed_files(directory))}
    atomic_write_text(directory / MANIFEST, manifest.to_json())
    return manifest


def listed_files(directory: Path, top: bool = True) -> list[Path]:
    """The files a manifest of ``directory`` lists (:func:`write_manifest`): every file but the manifest itself,
    and of a subfolder with its own manifest only that manifest."""
    if not top and (directory / MANIFEST).is_file():
        return [directory / MANIFEST]
    files = []
    for path in directory.iterdir():
        if path.is_dir() and not path.is_symlink():  # as rglob: a linked folder is not walked
            files += listed_files(path, top=False)
        elif path.is_file() and not (top and path.name == MANIFEST):
            files.append(path)
    return files


def read_manifest(directory: str | Path, kind: str | None = None, verify: bool = True) -> Manifest:
    """Load and validate an index directory's manifest; every problem is an IndexError_ naming the path.

    Checks: the directory and manifest exist, the manifest parses, format and version are known, the kind is the
    one expected, every listed file exists with its recorded size and (unless ``verify`` is False: a quick look at
    the kind) its recorded SHA-256, so a flipped byte is refused at load instead of giving wrong text or a crash
    in some later search (its cost: README, "Index safety").
    """
    directory = Path(directory)
    path = directory / MANIFEST
    if not directory.is_dir():
        raise IndexError_(f"no index at {directory} (build one with 'sleuth index')")
    if not path.is_file():
        inside = sorted(sub.name for sub in directory.iterdir() if (sub / MANIFEST).is_file())
        shards = [name for name in inside if name.startswith("shard-")]
        if shards:  # before: "pass .../shard-000 or ...", which searched one shard of the corpus without a word
            hint = (f"; it holds the shards {', '.join(shards)} of a sharded index whose own manifest is gone: one "
                    "shard alone is part of the corpus, so rebuild the sharded index (sleuth index --shards N)")
        else:
            hint = (f"; it holds the indexes {', '.join(inside)} (`sleuth index --kind all` writes one folder per "
                    f"kind): pass {' or '.join(str(directory / name) for name in inside)}" if inside else "")
        raise IndexError_(f"{path}: manifest missing; the directory is not a complete sleuth index{hint}")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise IndexError_(f"{path}: corrupt manifest ({exc})") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise IndexError_(f"{path}: not a sleuth index manifest (format is not '{FORMAT}')")
    if raw.get("format_version") not in READ_VERSIONS or isinstance(raw.get("format_version"), bool):
        raise IndexError_(f"{path}: format version {raw.get('format_version')!r} is not supported "
                          f"(this sleuth reads versions {', '.join(map(str, READ_VERSIONS))}); rebuild the index")
    known = set(Manifest.__dataclass_fields__)
    unknown = set(raw) - known
    if unknown:
        raise IndexError_(f"{path}: unknown manifest field(s) {sorted(unknown)}")
    if raw["format_version"] >= 2:
        recorded = raw.get("checksum")
        fields = {name: value for name, value in raw.items() if name != "checksum"}
        if not isinstance(recorded, str) or recorded != manifest_checksum(fields):
            raise IndexError_(f"{path}: corrupt manifest (its checksum does not match its content: edited or "
                              "damaged); rebuild the index")
    try:
        manifest = Manifest(**raw)
    except TypeError as exc:
        raise IndexError_(f"{path}: incomplete manifest ({exc})") from None
    check_field_types(manifest, path)
    if kind is not None and manifest.kind != kind:
        folder = directory.parent.parent if directory.parent.name == GENERATIONS else directory  # not gen-000004
        raise IndexError_(f"{folder} is a '{manifest.kind}' index, not a '{kind}' index")
    for name, info in manifest.files.items():
        file = directory / name
        if not file.is_file():
            raise IndexError_(f"{file}: listed in the manifest but missing")
        if file.stat().st_size != info.get("bytes"):
            raise IndexError_(f"{file}: size {file.stat().st_size} differs from the manifest's {info.get('bytes')}")
        if verify and file_digest(file)["sha256"] != info.get("sha256"):
            raise IndexError_(f"{file}: corrupt index file (its SHA-256 differs from the manifest's); "
                              "rebuild the index")
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


def generations(index_dir: str | Path) -> list[str]:
    """Names of the complete generations of an index directory, oldest first."""
    folder = Path(index_dir) / GENERATIONS
    if not folder.is_dir():
        return []
    return sorted((p.name for p in folder.iterdir() if GENERATION.match(p.name)), key=lambda n: int(n[4:]))


def generation_path(directory: Path, name: str) -> Path:
    """The folder of generation ``name`` (``gen-000000``: the directory itself, the original build)."""
    return directory if name == ROOT_GENERATION else directory / GENERATIONS / name


def current_text(name: str, manifest: bytes) -> str:
    """The text of a ``CURRENT`` file naming generation ``name`` whose manifest file holds ``manifest``: the name,
    the manifest's SHA-256 and a SHA-256 of those two lines (so an edited or damaged CURRENT is refused)."""
    body = f"{name}\nmanifest-sha256 {hashlib.sha256(manifest).hexdigest()}\n"
    return body + f"checksum {hashlib.sha256(body.encode()).hexdigest()}\n"


def write_current(directory: Path, name: str) -> None:
    """Switch ``directory``'s served generation to ``name`` (atomically: readers see the old or the new CURRENT)."""
    manifest = (generation_path(directory, name) / MANIFEST).read_bytes()
    atomic_write_text(directory / CURRENT, current_text(name, manifest))


def current_generation(directory: str | Path) -> Path:
    """The directory holding the served index: the generation that ``directory/CURRENT`` names for an updated or
    rebuilt index (see :mod:`sleuth.index.updates`), else ``directory`` itself (indexes built once load unchanged).

    Refused with an IndexError_ naming the file: a CURRENT that is not UTF-8, malformed, or whose checksum or
    recorded manifest SHA-256 does not match; a missing CURRENT where ``generations/`` holds generations (serving
    the original build would silently drop every update); a CURRENT without checksum (written by sleuth before
    format 2) that names an older generation than the newest one."""
    directory = Path(directory)
    path = directory / CURRENT
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        existing = generations(directory)
        if existing:
            raise IndexError_(f"{path}: missing, but {directory / GENERATIONS} holds {existing[-1]} (the index was "
                              "updated or rebuilt); refusing to serve an older version: rebuild the index") from None
        return directory
    except OSError as exc:
        raise IndexError_(f"{path}: unreadable ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise IndexError_(f"{path}: corrupt (not UTF-8 text); rebuild the index") from None
    lines = text.strip().split("\n")
    if len(lines) == 1:
        return _legacy_generation(directory, lines[0].strip())
    if len(lines) != 3 or not lines[1].startswith("manifest-sha256 ") or not lines[2].startswith("checksum "):
        raise IndexError_(f"{path}: corrupt (not a CURRENT file sleuth wrote); rebuild the index")
    body = f"{lines[0]}\n{lines[1]}\n"
    if lines[2] != f"checksum {hashlib.sha256(body.encode()).hexdigest()}":
        raise IndexError_(f"{path}: corrupt (its checksum does not match its content: edited or damaged)")
    name = lines[0]
    if not GENERATION.match(name):
        raise IndexError_(f"{path}: invalid generation name {name!r}")
    generation = generation_path(directory, name)
    try:
        manifest = (generation / MANIFEST).read_bytes()
    except OSError:
        raise IndexError_(f"{generation / MANIFEST}: missing; {path} names {name}, which is gone") from None
    if lines[1] != f"manifest-sha256 {hashlib.sha256(manifest).hexdigest()}":
        raise IndexError_(f"{generation / MANIFEST}: differs from the manifest {path} committed (its SHA-256 "
                          "changed: edited, damaged or replaced); rebuild the index")
    return generation


def _legacy_generation(directory: Path, name: str) -> Path:
    """A CURRENT holding only a generation name (sleuth before format 2): served when it names the newest one."""
    path = directory / CURRENT
    if not GENERATION.match(name) or name == ROOT_GENERATION:
        raise IndexError_(f"{path}: invalid generation name {name!r}"[:300])
    existing = generations(directory)
    if existing and existing[-1] != name:
        raise IndexError_(f"{path}: names {name}, older than {existing[-1]}, and carries no checksum (edited, or "
                          "written by an older sleuth); refusing to serve an older version: rebuild the index")
    return directory / GENERATIONS / name


def load_generation(directory: str | Path, load: Callable[[Path], T], attempts: int = 3) -> T:
    """``load(current_generation(directory))``, tried again when it fails because an update switched ``CURRENT``
    and collected the generation while it was being read (so a slow reader gets the newer generation)."""
    for attempt in range(attempts):
        generation: Path | None = None
        try:
            generation = current_generation(directory)
            return load(generation)
        except (IndexError_, OSError):
            if attempt == attempts - 1 or _still_served(directory, generation):
                raise
    raise AssertionError("unreachable")


def _still_served(directory: str | Path, generation: Path | None) -> bool:
    """Whether CURRENT still names ``generation`` (else the failure was a race with an update: try again)."""
    try:
        return generation is not None and current_generation(directory) == generation
    except IndexError_:
        return False


def build_directory(target: str | Path | None) -> contextlib.AbstractContextManager[Path | None]:
    """:func:`sleuth.index.commit.build_target` (a build that always leaves a loadable index at ``target``), or a
    context yielding None when the index is built in memory only."""
    from sleuth.index.commit import build_target

    return contextlib.nullcontext() if target is None else build_target(target)


def is_index_directory(path: Path) -> bool:
    """Whether ``path`` looks like a sleuth index (a manifest of sleuth's format, or an updated index's CURRENT),
    complete or not: such a folder may be replaced by a new build."""
    if not path.is_dir():
        return False
    if (path / CURRENT).is_file():
        return True
    try:
        raw = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(raw, dict) and raw.get("format") == FORMAT


PROTECTED = ("/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/media", "/mnt", "/opt",
             "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var")


def check_build_target(target: str | Path, force: bool = False, keep: Sequence[str | Path] = ()) -> None:
    """Refuse to build over anything but a sleuth index unless ``force``; never (even with ``force``) over ``~``
    unexpanded, ``/``, a system folder, the home folder, the current folder (or one above them) or a path in
    ``keep`` (or one above it; e.g. the corpus being indexed), nor below a file.

    Without ``force``, an index changed by ``sleuth update`` is refused as well: a rebuild from the corpus drops the
    updates. (The build itself re-checks this under the index's lock: :func:`sleuth.index.commit.build_target`.)"""
    if str(target).startswith("~"):
        raise IndexError_(f"{target}: '~' is not expanded here (the shell expands it only unquoted); "
                          "give the folder's full path as --out")
    target = Path(target).absolute()
    resolved = target.resolve()
    home = Path.home().resolve()
    if str(resolved) in PROTECTED or resolved.parent in (Path("/usr"), Path("/etc"), Path("/var")) or \
            resolved == home or resolved in home.parents:
        raise IndexError_(f"{target}: refusing to build an index over a system or home folder, even with --force; "
                          "choose another --out")
    refuse_overwriting_inputs(target, [Path.cwd(), *keep], action="build an index", in_folders=False)  # nor over cwd
    check_parent_folders(target)
    if not target.exists() and not target.is_symlink():
        return
    empty = target.is_dir() and not any(target.iterdir())
    if not force and not empty and not is_index_directory(target):
        raise IndexError_(f"{target} exists and is not a sleuth index; refusing to replace it "
                          "(pass --force to replace it, or choose another --out)")
    if not force and is_index_directory(target):
        check_not_updated(target)


def check_parent_folders(target: Path) -> None:
    """An IndexError_ when a folder above ``target`` is a file (``--out corpus.jsonl/sub``)."""
    for parent in target.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise IndexError_(f"{target}: {parent} is a file, not a folder; choose another --out")
            return


def served_updates(target: Path) -> int:
    """How many ``sleuth update`` changes the index served at ``target`` holds (0 for a fresh build)."""
    updates = read_manifest(current_generation(target), verify=False).corpus.get("updates", 0)
    return updates if isinstance(updates, int) else 1


def check_not_updated(target: Path) -> None:
    """Refuse to rebuild an index whose served version holds updates (or cannot be read to tell)."""
    try:
        updates = served_updates(target)
    except IndexError_ as exc:
        if not (target / CURRENT).exists() and not generations(target):
            return  # a damaged index built once: nothing of an update to lose
        raise IndexError_(f"{target}: cannot tell whether it holds 'sleuth update' changes ({exc}); pass --force "
                          "to rebuild it from the corpus anyway") from None
    if updates:
        count = read_manifest(current_generation(target), verify=False).count
        raise IndexError_(f"{target} has been changed by 'sleuth update' ({count:,} passages after {updates} "
                          "update(s)); rebuilding it from the corpus drops those changes: pass --force to rebuild "
                          "anyway, or choose another --out")
