"""sentence-transformers (torch) encoder backend."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sleuth.errors import MissingExtraError, SleuthError
from sleuth.models.encoder import Encoder, length_sorted_batches
from sleuth.progress import progress


class SentenceTransformerEncoder(Encoder):
    """Any sentence-transformers model directory on any torch device (a hub name only from the local cache, or with
    HF_HUB_OFFLINE=0: sleuth sets it to 1 unless the user chose otherwise)."""

    backend = "torch"

    def __init__(self, model: str, device: str = "cpu", max_length: int | None = None, **kwargs):
        super().__init__(**kwargs)
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging
        except ImportError:
            raise MissingExtraError("sentence-transformers", "torch", "the torch encoder backend") from None
        hf_logging.disable_progress_bar()
        try:
            self.model = SentenceTransformer(model, device=device)
        except (OSError, ValueError) as exc:
            raise SleuthError(f"cannot load encoder '{model}': {str(exc).splitlines()[0]}") from None
        if max_length:
            self.model.max_seq_length = max_length
        self.max_length = int(self.model.max_seq_length) if self.model.max_seq_length else None
        self.name, self.device = model, device
        dim = (self.model.get_embedding_dimension() if hasattr(self.model, "get_embedding_dimension")
               else self.model.get_sentence_embedding_dimension())
        if dim is None:
            raise SleuthError(f"encoder '{model}' does not report its embedding dimension")
        self.dim = int(dim)

    def _encode(self, texts: list[str], show_progress: bool) -> np.ndarray:
        """Batches of ``batch_size`` texts, longest first, counted on sleuth's progress (:mod:`sleuth.progress`)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with progress(f"encoding with {Path(self.name).name}", len(texts), "passages", show_progress) as task:
            for batch in length_sorted_batches(texts, self.batch_size):
                out[batch] = self.model.encode([texts[i] for i in batch], batch_size=self.batch_size,
                                               show_progress_bar=False, convert_to_numpy=True,
                                               normalize_embeddings=False)
                task.advance(len(batch))
        return out
