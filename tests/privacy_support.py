"""Shared, loaded-once resources of the privacy tests (the GloVe table, the ONNX encoder) and a FAISS thread pin."""

from __future__ import annotations

from functools import lru_cache

import pytest


@lru_cache(maxsize=1)
def glove():
    """The packaged GloVe 6B 50-d table (400,000 words, memory-mapped)."""
    from sleuth.systems.private_search.embedding_readers import load_embeddings

    return load_embeddings()


@lru_cache(maxsize=1)
def glove_table():
    """Its alphabetic words, the mechanisms' default vocabulary."""
    return glove().restrict()


@lru_cache(maxsize=1)
def onnx_encoder():
    """all-MiniLM-L6-v2 int8 ONNX (texts cut at 128 tokens): the local reranker and similarity encoder of tests."""
    from sleuth.models.registry import load_encoder

    return load_encoder("minilm-onnx", max_length=128)


@pytest.fixture(autouse=True, scope="module")
def one_faiss_thread():
    """FAISS's OpenMP threads spin badly on a busy shared machine; one thread keeps these tests steady."""
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(before)
