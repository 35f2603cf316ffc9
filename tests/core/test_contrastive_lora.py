"""LoRA bi-encoders: sleuth.train.contrastive with lora_rank trains an adapter of a few MB over the packaged MiniLM
(or goes on training one), and load_encoder(adapter folder) merges it into the backbone (the way trained QUEST and
DHR encoders ship)."""

from __future__ import annotations

import numpy as np
import pytest

from sleuth.errors import ConfigError
from sleuth.models.adapters import adapter_bytes, adapter_info, is_adapter
from sleuth.models.registry import load_encoder, minilm_path
from sleuth.train.contrastive import ContrastiveExample, TrainConfig, batch_layout, train_contrastive


def test_other_positives_of_the_same_query_are_masked_not_negatives():
    gold = frozenset({"a", "b"})
    batch = [ContrastiveExample("q", "A", ["N"], "a", ["n"], also_relevant=gold),
             ContrastiveExample("q", "B", ["M"], "b", ["m"], also_relevant=gold),
             ContrastiveExample("r", "C", ["A"], "c", ["a"])]
    _, candidates, positives, masks = batch_layout(batch)
    assert candidates == ["A", "B", "C", "N", "M", "A"] and positives == [0, 1, 2]
    assert masks[0] == [1, 5] and masks[1] == [0, 5] and masks[2] == []  # "r" still reads A as its negative


def test_lora_rank_must_be_positive():
    with pytest.raises(ConfigError, match="lora_rank"):
        TrainConfig(lora_rank=0).check()


@pytest.mark.slow
def test_lora_training_writes_a_small_adapter_that_load_encoder_merges(tmp_path):
    examples = [ContrastiveExample(f"which films did director {i} make", f"Film {i} was directed by director {i}.",
                                   [f"Novel {i} was written by author {i + 1}."], f"f{i}", [f"n{i}"])
                for i in range(12)]
    out = tmp_path / "de"
    result = train_contrastive(minilm_path(), examples, out,
                               TrainConfig(lr=1e-3, batch_size=6, epochs=3, lora_rank=4, show_progress=False))
    assert result.steps == 6 and is_adapter(out)
    assert adapter_info(out)["backbone"] == "minilm" and adapter_info(out)["kind"] == "bi-encoder"
    assert adapter_bytes(out) < 5_000_000  # what may ship inside the package
    trained, base = load_encoder(str(out)), load_encoder("minilm")
    texts = ["Film 3 was directed by director 3."]
    moved = float(np.dot(trained.encode_passages(texts)[0], base.encode_passages(texts)[0]))
    assert 0.5 < moved < 0.99999  # the adapter changed the vectors, and they are still MiniLM's
    # a later round (DHR's ANCE-style round 2) goes on training the adapter: same backbone, the deltas move on
    again = train_contrastive(out, examples, tmp_path / "again", TrainConfig(lr=1e-3, batch_size=6, lora_rank=4,
                                                                             max_steps=2, show_progress=False))
    assert again.steps == 2 and adapter_info(tmp_path / "again")["backbone"] == "minilm"
    further = load_encoder(str(tmp_path / "again")).encode_passages(texts)[0]
    assert float(np.dot(further, trained.encode_passages(texts)[0])) < 0.99999  # moved from round 1's vectors
    assert float(np.dot(further, trained.encode_passages(texts)[0])) > float(np.dot(further, base.encode_passages(texts)[0]))
    with pytest.raises(ConfigError, match="rank 4 cannot go on training at rank 8"):
        train_contrastive(out, examples, tmp_path / "other", TrainConfig(lora_rank=8, max_steps=1,
                                                                         show_progress=False))


@pytest.mark.slow
def test_lora_training_and_its_continuation_print_no_third_party_noise(tmp_path, capfd, caplog):
    """No weight-loading bar, no transformers FutureWarning (peft's is_gradient_checkpointing), no "Repo card
    metadata" or "Could not find a config file" remark on save: a training log holds sleuth's own lines."""
    import warnings

    examples = [ContrastiveExample(f"question {i}", f"passage {i}", [f"negative {i}"]) for i in range(4)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train_contrastive("minilm", examples, tmp_path / "a", TrainConfig(batch_size=4, max_steps=1, lora_rank=4,
                                                                          show_progress=False))
        train_contrastive(tmp_path / "a", examples, tmp_path / "b", TrainConfig(batch_size=4, max_steps=1,
                                                                                lora_rank=4, show_progress=False))
    printed = "".join(capfd.readouterr())
    assert [str(w.message) for w in caught if w.category in (FutureWarning, UserWarning)] == []
    assert not [noise for noise in ("Loading weights", "Repo card", "config file") if noise in printed], printed
    assert not [r.getMessage() for r in caplog.records if r.name.startswith(("huggingface_hub", "transformers", "peft"))
                and r.levelno >= 30]
