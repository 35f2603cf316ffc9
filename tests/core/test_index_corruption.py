"""A same-size byte flip in any file of an index is refused at load with one line naming the file (the manifest's
SHA-256s are checked), instead of wrong text, an IndexError in some searches, or a UnicodeDecodeError."""

from __future__ import annotations

import pytest

from sleuth.errors import IndexError_
from sleuth.index.bm25 import BM25Index
from sleuth.index.dense import DenseIndex
from tests.cli_support import one_line_error


def flip_byte(path, where: float = 0.5) -> None:
    data = bytearray(path.read_bytes())
    data[int(len(data) * where)] ^= 0x20
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", ["docstore.parquet", "bm25s/data.csc.index.npy", "bm25s/indices.csc.index.npy",
                                  "bm25s/vocab.index.json", "bm25s/params.index.json"])
def test_flipped_byte_in_a_bm25_index_is_refused(sleuth, tmp_path, scifact_jsonl, scifact_rows, name):
    out = tmp_path / "ix"
    assert sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", out).returncode == 0
    flip_byte(out / name, 0.9 if name.endswith(".npy") else 0.5)
    one_line_error(sleuth("search", scifact_rows[5]["title"], "--index", out), str(out / name), "corrupt")


def test_flipped_byte_in_dense_vectors_is_refused(tmp_path, scifact_passages, onnx_encoder):
    DenseIndex.build(scifact_passages[:60], onnx_encoder, tmp_path / "dense", show_progress=False)
    flip_byte(tmp_path / "dense" / "vectors.faiss")
    with pytest.raises(IndexError_, match="vectors.faiss: corrupt"):
        DenseIndex.load(tmp_path / "dense", mmap=True)


def test_flip_in_an_updated_generation_is_refused(tmp_path, scifact_passages):
    from sleuth.index.updates import add_documents

    BM25Index.build(scifact_passages[:50], tmp_path / "ix", show_progress=False)
    add_documents(tmp_path / "ix", scifact_passages[50:60])
    store = next((tmp_path / "ix" / "generations").glob("gen-*/docstore.parquet"))
    flip_byte(store)
    with pytest.raises(IndexError_, match="docstore.parquet: corrupt"):
        BM25Index.load(tmp_path / "ix")


@pytest.fixture(scope="module")
def onnx_encoder():
    from sleuth.models.registry import load_encoder

    return load_encoder("minilm-onnx")
