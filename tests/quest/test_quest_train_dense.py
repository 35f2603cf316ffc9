"""`sleuth quest train-dense`: QUEST's dual encoder (in-batch softmax over training queries and their gold documents)
as a LoRA adapter over the packaged MiniLM, on the real QUEST val examples at tiny size."""

from __future__ import annotations

import pytest

from sleuth.models.adapters import adapter_info
from sleuth.models.registry import load_encoder
from sleuth.pipelines.workspace import Workspace
from sleuth.systems.quest.dense_training import DenseExampleBudget, dense_examples
from sleuth.systems.quest.methods import quest_workspace
from sleuth.systems.quest.task import load_task
from tests.cli_support import one_line_error
from tests.quest.test_quest_cli import val_head  # noqa: F401  (the fixture)


@pytest.fixture(scope="module")
def documents(val_head, tmp_path_factory):  # noqa: F811
    from sleuth.corpus.quest import quest_attribution_documents, write_quest_documents

    path = tmp_path_factory.mktemp("quest-de") / "documents.jsonl"
    write_quest_documents(path, quest_attribution_documents([val_head]))
    return path


def test_one_example_per_gold_document_with_the_query_s_other_gold_masked(val_head, documents):  # noqa: F811
    ws: Workspace = quest_workspace(documents, show_progress=False)
    task = load_task(val_head, skip_empty=True)
    examples = dense_examples(ws, task.queries, DenseExampleBudget(hard_negatives=2, negative_depth=20))
    ids = set(ws.bm25().docstore.ids)  # gold documents with attribution sentences (the proxy corpus)
    gold = {q.text: set(q.metadata["docs"]) & ids for q in task.queries}
    assert len(examples) == sum(len(docs) for docs in gold.values()) > 50
    for example in examples:
        assert example.positive_id in gold[example.query] and example.also_relevant == gold[example.query]
        assert len(example.negatives) == 2 and not set(example.negative_ids) & gold[example.query]
        assert example.positive.startswith(example.positive_id)  # "title text", as the dense index reads it


@pytest.mark.slow
def test_train_dense_writes_an_adapter_that_searches(sleuth, val_head, documents, tmp_path):  # noqa: F811
    out = tmp_path / "quest-de"
    result = sleuth("quest", "train-dense", "--examples", val_head, "--documents", documents, "--out", out,
                    "--lora-rank", 4, "--batch-size", 8, "--max-steps", 2, "--lr", "5e-4")
    assert result.returncode == 0, result.stderr
    assert "trained 2 steps of 8" in result.stderr and adapter_info(out)["backbone"] == "minilm"
    assert load_encoder(str(out)).encode_queries(["films about chess"]).shape == (1, 384)
    one_line_error(sleuth("quest", "train-dense", "--examples", val_head, "--documents", documents,
                          "--out", val_head), "refusing to write over the input")


@pytest.mark.slow
def test_the_dense_pipelines_retrieve_with_the_shipped_dual_encoder(sleuth, val_head, documents, tmp_path):  # noqa: F811
    from sleuth.corpus.quest import read_quest_predictions
    from sleuth.models.adapters import adapter_bytes
    from sleuth.systems.quest.methods import shipped_dual_encoder_dir

    shipped = shipped_dual_encoder_dir()
    assert adapter_info(shipped)["kind"] == "bi-encoder" and adapter_bytes(shipped) < 5_000_000
    card = (shipped / "README.md").read_text(encoding="utf-8")
    assert all(needed in card for needed in ("sleuth quest train-dense", "seed", "examples/s", "Recall@100"))
    for pipeline in ("quest-dense", None):  # None: predict's default, quest-dense-classify
        out = tmp_path / f"{pipeline}.jsonl"
        chosen = ("--pipeline", pipeline) if pipeline else ()
        result = sleuth("quest", "predict", val_head, "--documents", documents, *chosen, "--max-queries", 2,
                        "--out", out)
        assert result.returncode == 0, result.stderr
        predicted = read_quest_predictions(out)
        assert len(predicted) == 2 and all(q.metadata["ranking"] for q in predicted.values())
        assert {q.metadata["pipeline"] for q in predicted.values()} == {pipeline or "quest-dense-classify"}


def test_the_shipped_dual_encoder_loads_without_third_party_warnings():
    """peft's read of ``is_gradient_checkpointing`` made transformers warn (FutureWarning) on every quest-dense run."""
    import warnings

    from sleuth.systems.quest.methods import shipped_dual_encoder_dir

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        encoder = load_encoder(str(shipped_dual_encoder_dir()))
    assert [str(w.message) for w in caught if w.category in (FutureWarning, UserWarning, DeprecationWarning)] == []
    assert encoder.encode_queries(["novels set in Paris"]).shape == (1, 384)
