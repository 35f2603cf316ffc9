"""A real encoder of another vector space than MiniLM's, for checks that an index refuses one: MiniLM's weights with
its word embeddings shuffled (the same architecture and dimension, other vectors)."""

from __future__ import annotations

from pathlib import Path

from sleuth.models.encoder import Encoder


def shuffled_minilm(folder: Path, seed: int = 0) -> Encoder:
    """MiniLM with its word-embedding rows permuted by ``seed``, saved to ``folder`` and loaded as a sleuth encoder
    (384 dimensions, like MiniLM; 2 of 16 SciFact abstracts land nearest their own MiniLM vector)."""
    import torch
    from sentence_transformers import SentenceTransformer

    from sleuth.models.registry import backbone_dir, load_encoder

    model = SentenceTransformer(str(backbone_dir("minilm")), device="cpu")
    words = model[0].auto_model.embeddings.word_embeddings.weight
    with torch.no_grad():
        words.copy_(words[torch.randperm(len(words), generator=torch.Generator().manual_seed(seed))])
    model.save(str(folder))
    return load_encoder(str(folder))
