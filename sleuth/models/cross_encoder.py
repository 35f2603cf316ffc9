"""A cross-encoder relevance classifier: one text "query: {query}, doc: {title} {text}" in, a relevance logit out.

The model is a transformers sequence classifier with one output (``num_labels=1``); ``probability`` is the sigmoid
of the logit, trained with binary cross-entropy (QUEST's classifier, Malaviya et al., ACL 2023, with a MiniLM backbone instead of
T5). A saved classifier is either an ordinary model directory (``config.json``, weights, tokenizer) that
``AutoModelForSequenceClassification.from_pretrained`` also reads, or a low-rank adapter over a packaged backbone
(:mod:`sleuth.models.adapters`, a few MB), merged into the backbone when loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sleuth.errors import MissingExtraError, SleuthError
from sleuth.models.encoder import length_sorted_batches
from sleuth.progress import progress

MAX_LENGTH = 384  # tokens of query + document the classifier reads (QUEST, Appendix A)
DEFAULT_BACKBONE = "minilm"


def pair_text(query: str, title: str | None, text: str | None) -> str:
    """The classifier's input string, as QUEST's code formats it: ``query: {query}, doc: {title} {text}``."""
    doc = " ".join(part for part in (title or "", text or "") if part)
    return f"query: {query}, doc: {doc}"


class CrossEncoderClassifier:
    """A (query, document) relevance classifier on any torch device; batched, length-sorted scoring."""

    def __init__(self, model: str = DEFAULT_BACKBONE, device: str = "cpu", max_length: int = MAX_LENGTH,
                 batch_size: int = 32, int8: bool = False):
        try:
            import torch  # noqa: F401
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError:
            raise MissingExtraError("transformers", "torch", "the cross-encoder classifier") from None
        from sleuth.models.adapters import adapter_info, is_adapter, load_adapter
        from sleuth.models.quiet import quiet_model_load
        from sleuth.models.registry import backbone_dir

        adapter = model if is_adapter(model) else None
        path = backbone_dir(adapter_info(adapter)["backbone"] if adapter else model)
        try:
            with quiet_model_load():  # a fresh classification head is expected when starting from a backbone
                self.tokenizer = AutoTokenizer.from_pretrained(path)
                self.model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1)
                if adapter:
                    self.model = load_adapter(self.model, adapter)
        except (OSError, ValueError) as exc:
            raise SleuthError(f"cannot load classifier '{model}': {str(exc).splitlines()[0]}") from None
        self.model.to(device)
        self.model.eval()
        self.name, self.device, self.max_length, self.batch_size = model, device, max_length, batch_size
        self.int8, self.lora = False, None
        if int8:
            self.quantize()

    def quantize(self) -> CrossEncoderClassifier:
        """Switch to int8 dynamic quantisation of the linear layers (CPU inference only, about 2x faster; do not
        train or save afterwards)."""
        import torch

        from sleuth.models.quiet import quiet_quantisation

        if self.device != "cpu":
            raise SleuthError("int8 quantisation runs on the CPU only; use device='cpu'")
        with quiet_quantisation():
            self.model = torch.ao.quantization.quantize_dynamic(self.model, {torch.nn.Linear}, dtype=torch.qint8)
        self.int8 = True
        return self

    def add_lora(self, settings) -> CrossEncoderClassifier:
        """Make the model a LoRA over its (frozen) backbone for training (:class:`sleuth.models.adapters.
        LoraSettings`); :meth:`save` then writes the adapter only."""
        from sleuth.models.adapters import add_lora

        self.model, self.lora = add_lora(self.model, settings), settings
        return self

    def merge(self) -> CrossEncoderClassifier:
        """Fold a trained LoRA into the weights (faster inference; :meth:`save` then writes a full model)."""
        if self.lora is not None:
            self.model, self.lora = self.model.merge_and_unload(), None
            self.model.eval()
        return self

    def tokenize(self, texts: Sequence[str]):
        """Padded, truncated tensors of ``texts`` on the model's device."""
        batch = self.tokenizer(list(texts), truncation=True, max_length=self.max_length, padding=True,
                               return_tensors="pt")
        return {key: value.to(self.device) for key, value in batch.items()}

    def logits(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        """Relevance logits of classifier input strings (see :func:`pair_text`), in input order."""
        import torch

        texts = list(texts)
        out = np.zeros(len(texts), dtype=np.float32)
        self.model.eval()
        batches = length_sorted_batches(texts, self.batch_size)
        with torch.inference_mode(), progress("classifying", len(texts), "pairs", show_progress) as task:
            for batch in batches:
                logits = self.model(**self.tokenize([texts[i] for i in batch])).logits.reshape(-1)
                out[batch] = logits.float().cpu().numpy()
                task.advance(len(batch))
        return out

    def probabilities(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        """Sigmoid of the logits: the probability that each document is relevant to its query."""
        return sigmoid(self.logits(texts, show_progress))

    def save(self, path: str | Path, card: str | None = None, extra: dict | None = None) -> Path:
        """Write the model and tokenizer as an ordinary model directory, or with a LoRA the adapter alone (with
        the model ``card`` and ``extra`` metadata)."""
        if self.int8:
            raise SleuthError("an int8-quantised classifier cannot be saved; save it before quantising")
        if self.lora is not None:
            from sleuth.models.adapters import save_adapter

            return save_adapter(self.model, path, self.name, self.lora, card=card, extra=extra)
        from sleuth.models.quiet import quiet_model_load

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        with quiet_model_load():  # without transformers' "Writing model shards" bar (before: in the training log)
            self.model.save_pretrained(str(path))
            self.tokenizer.save_pretrained(str(path))
        return path


def sigmoid(values: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function."""
    values = np.asarray(values, dtype=np.float64)
    return (0.5 * (1.0 + np.tanh(0.5 * values))).astype(np.float32)
