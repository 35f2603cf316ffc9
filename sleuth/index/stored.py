"""What every index kind kept in a directory shares: its ``kind``, its manifest, and loading the served generation
(of an updated directory: the one ``CURRENT`` names, :func:`sleuth.index.manifest.load_generation`)."""

from __future__ import annotations

from pathlib import Path
from typing import Self

from sleuth.index.manifest import Manifest, load_generation, require_manifest


class StoredIndex:
    """Base of the index kinds stored as directories: a subclass sets ``kind``, keeps its manifest in ``manifest``
    and reads one generation's directory in ``_load``."""

    kind = ""
    manifest: Manifest | None

    @property
    def loaded_manifest(self) -> Manifest:
        """The manifest (a built or loaded index always has one); an IndexError_ when there is none."""
        return require_manifest(self.manifest, self.kind)

    @classmethod
    def load(cls, path: str | Path, mmap: bool = False) -> Self:
        """Load and validate an index directory (of an updated one: the generation ``CURRENT`` names; ``mmap`` maps
        the large arrays instead of reading them)."""
        return load_generation(path, lambda generation: cls._load(Path(generation), mmap))

    @classmethod
    def _load(cls, path: Path, mmap: bool) -> Self:
        """Load and validate the index directory of one generation."""
        raise NotImplementedError
