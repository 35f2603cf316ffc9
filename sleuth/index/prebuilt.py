"""Passage vectors computed ahead of time, looked up by text instead of encoded again.

A prebuilt file (``<encoder name>.npz``) holds the encoder's spec (as an index manifest records it), the SHA-1 of
each passage's content (title and text, as :meth:`DocStore.contents` gives them) and its vector in float16. When a
dense index is built, passages whose content is in the file take their vector from it; the others are encoded.
sleuth ships one for the bundled SciFact with the demo's encoder (``sleuth/data/vectors/minilm-onnx.npz``, see the
README there), so the first ``sleuth demo`` does not spend minutes encoding 5,183 abstracts; any other corpus that
shares passages with it (a SciFact subset, an edited copy) reuses them too. A file is used only when its spec equals
the encoder's, so another encoder, a prefix or a token limit never picks up foreign vectors; ``SLEUTH_PREBUILT=0``
turns the lookup off (every passage encoded on this machine).

    python -m sleuth.index.prebuilt INDEX_DIR OUT.npz   # write one from a built dense index
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sleuth.models.encoder import Encoder
from sleuth.models.passage_memo import content_key

PREBUILT_DIR = Path(__file__).resolve().parents[1] / "data" / "vectors"


class PrebuiltVectors:
    """Vectors by content key for one encoder spec."""

    def __init__(self, spec: dict, keys: np.ndarray, vectors: np.ndarray):
        self.spec, self.vectors = spec, vectors
        self.rows = {bytes(k): i for i, k in enumerate(keys)}

    @classmethod
    def load(cls, path: str | Path) -> PrebuiltVectors:
        with np.load(path, allow_pickle=False) as data:
            return cls(json.loads(str(data["spec"])), data["keys"], data["vectors"])

    def lookup(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(rows of ``texts`` found, their vectors as float32)."""
        rows = [self.rows.get(content_key(t), -1) for t in texts]
        found = np.array([i for i, r in enumerate(rows) if r >= 0], dtype=np.int64)
        return found, self.vectors[[rows[i] for i in found]].astype(np.float32)


def write_prebuilt(texts: Sequence[str], vectors: np.ndarray, spec: dict, path: str | Path) -> Path:
    """Write a prebuilt file for ``texts`` and their ``vectors`` (float16), atomically."""
    from sleuth.io import atomic_write_bytes

    keys = np.frombuffer(b"".join(content_key(t) for t in texts), dtype=np.uint8).reshape(len(texts), 20)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, spec=np.array(json.dumps(spec, sort_keys=True)), keys=keys,
                        vectors=np.asarray(vectors, dtype=np.float16))
    atomic_write_bytes(path, buffer.getvalue())
    return Path(path)


def prebuilt_for(encoder: Encoder, directory: Path = PREBUILT_DIR) -> PrebuiltVectors | None:
    """The shipped prebuilt vectors of this encoder (same spec), if any; none when SLEUTH_PREBUILT=0."""
    if os.environ.get("SLEUTH_PREBUILT", "1") == "0":
        return None
    path = directory / f"{Path(encoder.name).name}.npz"
    if not path.is_file():
        return None
    table = PrebuiltVectors.load(path)
    return table if table.spec == json.loads(json.dumps(encoder.spec(), sort_keys=True)) else None


#: passages from which an encoding is long enough to say that another encoder's vectors ship for them
NOTE_FROM = 1000


def shipped_for_another(encoder: Encoder, texts: Sequence[str], directory: Path = PREBUILT_DIR) -> str | None:
    """Where vectors of (nearly all) ``texts`` ship for another encoder, a sentence naming it, else None."""
    if os.environ.get("SLEUTH_PREBUILT", "1") == "0" or not directory.is_dir():
        return None
    for path in sorted(directory.glob("*.npz")):
        if path.stem == Path(encoder.name).name:
            continue
        found, _ = PrebuiltVectors.load(path).lookup(texts)
        if len(found) >= 0.9 * len(texts):
            return (f"encoding {len(texts):,} passages with {encoder.name}; their vectors ship for encoder "
                    f"'{path.stem}' (sleuth index --encoder {path.stem}; in a pipeline encoder: {path.stem}, or "
                    f"--set dense.encoder={path.stem}), which builds this index in seconds")
    return None


def encode_passages(encoder: Encoder, texts: Sequence[str], show_progress: bool = False,
                    prebuilt: PrebuiltVectors | None = None) -> np.ndarray:
    """``encoder.encode_passages(texts)``, taking the vectors of texts found in ``prebuilt`` (default: the shipped
    file of this encoder) from there (unit length again if the encoder normalises)."""
    table = prebuilt if prebuilt is not None else prebuilt_for(encoder)
    if table is None:
        note = shipped_for_another(encoder, texts) if show_progress and len(texts) >= NOTE_FROM else None
        if note:  # before: minutes of encoding, and nothing said of the vectors that ship for another encoder
            from sleuth.progress import console

            console.print(f"note: {note}", highlight=False, soft_wrap=True)
        return encoder.encode_passages(texts, show_progress=show_progress)
    found, known = table.lookup(texts)
    if encoder.normalize and len(known):
        known /= np.maximum(np.linalg.norm(known, axis=1, keepdims=True), 1e-12)
    vectors = np.zeros((len(texts), encoder.dim), dtype=np.float32)
    vectors[found] = known
    missing = np.setdiff1d(np.arange(len(texts)), found)
    if len(missing):
        vectors[missing] = encoder.encode_passages([texts[i] for i in missing], show_progress=show_progress)
    return vectors


def main(argv: Sequence[str] | None = None) -> int:
    """Write a prebuilt file from a built dense index: its passages' contents, vectors and encoder spec."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m sleuth.index.prebuilt INDEX_DIR OUT.npz", file=sys.stderr)
        return 2
    from sleuth.index.dense import DenseIndex

    index = DenseIndex.load(args[0])
    vectors = index.vectors(np.arange(len(index)))
    path = write_prebuilt(index.docstore.contents(), vectors, index.encoder_spec, args[1])
    print(f"wrote {path} ({len(index)} vectors, {path.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
