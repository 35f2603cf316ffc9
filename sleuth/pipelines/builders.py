"""Config builders of the core stages: bm25, dense, fuse, cutoff, run_file, max_passage, path_passages."""

from __future__ import annotations

from typing import Annotated, Any

from sleuth.constraints import Check, Count, NonNegative, OneOf
from sleuth.index.bm25 import METHODS as BM25_METHODS
from sleuth.index.bm25 import BM25Params
from sleuth.index.dense import VectorSearch
from sleuth.index.tokenize import Analyzer, stopwords_problem
from sleuth.pipelines.index_stage import bm25_retrieve, dense_retrieve
from sleuth.pipelines.registry import register_stage
from sleuth.pipelines.workspace import Workspace
from sleuth.stages.base import Cutoff
from sleuth.stages.fusion import METHODS as FUSION_METHODS
from sleuth.stages.fusion import NORMALISERS, Fuse, weights_problem
from sleuth.stages.max_passage import MaxPassage
from sleuth.stages.paths import PathPassages
from sleuth.stages.retrieve import BM25Retrieve, DenseRetrieve
from sleuth.stages.run_file import RunFile


def without_index(params: dict[str, Any]) -> bool:
    """A retrieval stage reads the workspace's corpus unless given an ``index:`` path."""
    return params.get("index") is None


def any_branch_reads_corpus(params: dict[str, Any]) -> bool:
    """A fusion reads the workspace's corpus where one of its branches does."""
    from sleuth.pipelines.config import reads_corpus

    return any(reads_corpus(branch if isinstance(branch, list) else [branch]) for branch in params.get("branches", []))


#: BM25 keys fixed when an index is built (an index folder records its own): no effect with ``index:``
BM25_BUILD_KEYS = ("method", "k1", "b", "stopwords", "stemmer")


def fixed_at_build(params: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    """The keys of ``keys`` given beside an ``index:`` path, where they would change nothing, as a problem, or None."""
    given = [key for key in keys if key in params]
    if params.get("index") is None or not given:
        return None
    return (f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} fixed when an index is built and the index "
            f"folder records its own: leave {'it' if len(given) == 1 else 'them'} out with index:, or build an index "
            "with the settings wanted (sleuth index)")


def bm25_problem(params: dict[str, Any]) -> str | None:
    """BM25 keys together: no build settings beside an ``index:`` path (before: ignored, so a k1 sweep over an index
    folder gave one figure for every value)."""
    return fixed_at_build(params, BM25_BUILD_KEYS)


@register_stage("bm25", check=bm25_problem, reads_corpus=without_index)
def bm25_stage(ws: Workspace, *, k: Count = 1000, index: str | None = None,
               method: Annotated[str, OneOf(BM25_METHODS)] = "lucene", k1: NonNegative = 0.9, b: NonNegative = 0.4,
               stopwords: Annotated[Any, Check(stopwords_problem)] = "en", stemmer: str | None = "english",
               name: str = "bm25") -> BM25Retrieve:
    """BM25 over ``index`` (a path, sharded or not) or over the workspace corpus, built with these parameters."""
    return bm25_retrieve(ws, k, index=index, params=BM25Params(method=method, k1=k1, b=b),
                         analyzer=Analyzer(stopwords=stopwords, stemmer=stemmer), name=name)


def dense_problem(params: dict[str, Any]) -> str | None:
    """Dense keys together: no ``factory`` beside an ``index:`` path (the index's is fixed), and no ``ef_search`` /
    ``nprobe`` the factory's index type lacks (checked on the loaded index where an ``index:`` is given)."""
    problem = fixed_at_build(params, ("factory",))
    if problem is not None or params.get("index") is not None:
        return problem
    fields = {key: params[key] for key in ("factory", "ef_search", "nprobe") if key in params}
    return VectorSearch(**fields).problem()


@register_stage("dense", check=dense_problem, reads_corpus=without_index)
def dense_stage(ws: Workspace, *, k: Count = 1000, index: str | None = None, encoder: str | None = None,
                search: VectorSearch = VectorSearch(), name: str = "dense") -> DenseRetrieve:
    """Dense retrieval over ``index`` (a path, sharded or not; queries encoded by the encoder it records, which
    ``encoder`` may name but not change) or over the workspace corpus encoded with ``encoder`` (default
    ``minilm``)."""
    return dense_retrieve(ws, k, index=index, encoder=encoder, search=search, name=name)


def fusion_problem(params: dict[str, Any]) -> str | None:
    """Fusion keys together: at least two branches, a weight >= 0 per branch (not all 0), no normalise with rrf."""
    branches, weights = params.get("branches", []), params.get("weights")
    if len(branches) < 2:
        return f"needs at least two branches, got {len(branches)}"
    if params.get("normalise") is not None and params.get("method", "rrf") == "rrf":
        return "normalise applies to method weighted; rrf fuses ranks"
    return weights_problem(weights, len(branches)) if weights is not None else None


@register_stage("fuse", check=fusion_problem, reads_corpus=any_branch_reads_corpus)
def fuse_stage(ws: Workspace, *, branches: list, method: Annotated[str, OneOf(FUSION_METHODS)] = "rrf",
               weights: list[float] | None = None,
               normalise: Annotated[str, OneOf(tuple(NORMALISERS))] | None = None,
               rrf_k: Count = 60, depth: Count = 1000, name: str | None = None) -> Fuse:
    """Fusion of branch pipelines (each a stage entry or a list of stage entries)."""
    from sleuth.pipelines.config import build_stages

    built = [build_stages(branch if isinstance(branch, list) else [branch], ws, where=f"fuse branch {i + 1}")
             for i, branch in enumerate(branches)]
    return Fuse(built, method=method, weights=weights, normalise=normalise, rrf_k=rrf_k, depth=depth, name=name)


@register_stage("cutoff", reads_corpus=False, needs_candidates=True)
def cutoff_stage(ws: Workspace, *, k: Count) -> Cutoff:
    """Keep the top ``k`` candidates."""
    return Cutoff(k)


@register_stage("run_file", reads_corpus=False)
def run_file_stage(ws: Workspace, *, path: str, k: Count | None = None, name: str | None = None) -> RunFile:
    """The rankings of a TREC run file (``path``, from the current folder), cut to ``k`` (default: whole); given
    candidates, the file's scores of those it ranks."""
    return RunFile(path, k=k, name=name)


@register_stage("max_passage", reads_corpus=False, needs_candidates=True)
def max_passage_stage(ws: Workspace) -> MaxPassage:
    """An earlier stage's passages as their documents, each at its best passage (MaxP), for document qrels."""
    return MaxPassage()


@register_stage("path_passages", reads_corpus=False, needs_candidates=True)
def path_passages_stage(ws: Workspace) -> PathPassages:
    """An earlier stage's evidence paths (e.g. ``cos_chain``'s) as their passages, each once at its best path's rank."""
    return PathPassages()
