"""sleuth: hard retrieval (hierarchical, multi-hop, set-seeking, private) on one pipeline core.

The front door, from a string to results::

    import sleuth

    ws = sleuth.open("corpus.jsonl")                 # a corpus file or folder (format detected)
    bm25 = ws.pipeline("bm25", k=100)                # a built-in pipeline or stage, keys checked like YAML's
    result = sleuth.Experiment([bm25], queries, qrels, ["nDCG@10"]).run()
    result.to_pandas()

The names of :data:`EXPORTS` are imported on first use (module ``__getattr__``), so ``import sleuth`` stays fast.
"""

from __future__ import annotations

import importlib
import os

__version__ = "0.1.0"

# bm25s runs a JAX top-k when it is imported and JAX is installed; JAX then takes 75 % of every GPU's memory up front,
# and torch (sleuth's encoders, in that process and beside it) runs out of memory. sleuth never uses JAX: let it
# allocate on demand unless the user chose otherwise (docs/training/README.md, session 15 on an H100).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# sleuth never downloads weights at run time: every model is packaged or a local folder. huggingface_hub reads this
# once, when it is first imported, so it is set here, before any sleuth module imports it (a name that is neither
# registered nor a folder is then refused at once instead of retried against the hub for a minute).
os.environ.setdefault("HF_HUB_OFFLINE", "1")

#: public name -> the module that defines it
EXPORTS: dict[str, str] = {
    "open": "sleuth.pipelines.front",
    "Stage": "sleuth.stages.base",
    "Cutoff": "sleuth.stages.base",
    "Run": "sleuth.stages.run",
    "Hit": "sleuth.stages.run",
    "Fuse": "sleuth.stages.fusion",
    "RunFile": "sleuth.stages.run_file",
    "read_run": "sleuth.stages.run_formats",
    "write_run": "sleuth.stages.run_formats",
    "PathPassages": "sleuth.stages.paths",
    "Workspace": "sleuth.pipelines.workspace",
    "CorpusSource": "sleuth.pipelines.workspace",
    "load_pipeline": "sleuth.pipelines.config",
    "Experiment": "sleuth.eval.experiment",
    "ExperimentResult": "sleuth.eval.experiment",
    "Query": "sleuth.corpus.model",
    "Document": "sleuth.corpus.model",
    "Passage": "sleuth.corpus.model",
    "read_queries": "sleuth.pipelines.front",
    "read_qrels": "sleuth.pipelines.front",
    "read_documents": "sleuth.corpus.formats",
    "load_beir": "sleuth.corpus.beir",
    "read_beir_queries": "sleuth.corpus.beir",
    "read_questions": "sleuth.corpus.questions",
    "read_trec_topics": "sleuth.corpus.trec",
    "read_jsonl_documents": "sleuth.corpus.jsonl",
    "read_trec_documents": "sleuth.corpus.trec",
    "read_mediawiki": "sleuth.corpus.mediawiki",
    "read_hotpotqa_questions": "sleuth.corpus.hotpotqa",
    "read_musique_questions": "sleuth.corpus.musique",
    "read_squad_questions": "sleuth.corpus.squad",
    "read_quest_examples": "sleuth.corpus.quest",
}

__all__ = sorted(EXPORTS)

def __getattr__(name: str) -> object:
    """Import a public object on first use."""
    module = EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sleuth' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *EXPORTS])
