"""Config builders of the DHR stages: dhr (serial or parallel), dhr_documents, dhr_passages, dhr_p.

Every builder takes the same index keys, declared once in the parameter group :class:`HierarchySource` (``index``,
``document_encoder``, ``passage_encoder``, ``separator``, ``grouping``) and in :class:`~sleuth.index.dense.VectorSearch`
(``factory``, ``ef_search``, ``nprobe`` of the document index); configs give them as flat keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from sleuth.constraints import Count, OneOf
from sleuth.corpus.model import Passage
from sleuth.errors import ConfigError
from sleuth.index.bm25 import BM25Index
from sleuth.index.dense import VectorSearch
from sleuth.models.registry import encoder_identity
from sleuth.pipelines.registry import register_stage
from sleuth.pipelines.workspace import Workspace, params_key
from sleuth.stages.base import Stage
from sleuth.systems.dhr.index import COMBINATIONS, DOCUMENT_SCORES, HierarchicalIndex
from sleuth.systems.dhr.sharded import load_hierarchical
from sleuth.systems.dhr.stages import (
    DEFAULT_K1,
    DEFAULT_LAMBDA,
    MODES,
    DocumentRetrieve,
    PassageInDocuments,
    PassageRetrieve,
    dhr,
    require_whole,
)
from sleuth.systems.dhr.structure import DEFAULT_SEPARATOR, documents_to_groups

DOCUMENT_BACKENDS = ("dense", "bm25")
GROUPINGS = ("auto", "title", "document")
#: the enumerated keys of the DHR stages, checked by the registry before anything is built
Mode = Annotated[str, OneOf(MODES)]
Backend = Annotated[str, OneOf(DOCUMENT_BACKENDS)]
Grouping = Annotated[str, OneOf(GROUPINGS)]
DocumentScore = Annotated[str, OneOf(DOCUMENT_SCORES)]
Combine = Annotated[str, OneOf(COMBINATIONS)]
#: the default ``dhr`` stage is the shipped ``dhr`` pipeline (``- dhr: {}``): parallel, passages read "title text",
#: the document's best passage score not added (lam 0: added, it ranked below ``dense`` on corpora of long articles
#: alone), a length prior gated by the best passage score (see the system README and docs/dhr, "Three corpus
#: shapes"); the paper's recipe is the ``dhr-serial`` pipeline
DEFAULT_MODE, DEFAULT_DOCUMENT, DEFAULT_DHR_SEPARATOR, DEFAULT_DHR_LAMBDA = "parallel", "max", " ", 0.0
DEFAULT_LENGTH_PRIOR, DEFAULT_PRIOR_GATE = 0.015, 0.52


@dataclass(frozen=True)
class HierarchySource:
    """Where a DHR stage's hierarchical index comes from: ``index`` (a hierarchical index directory) or, for the
    workspace corpus, ``document_encoder`` / ``passage_encoder`` (names or model paths), ``separator`` (hierarchical
    titles and document representations) and ``grouping`` (auto | title | document: how the corpus becomes documents
    and passages, see :func:`sleuth.systems.dhr.structure.documents_to_groups`)."""

    index: str | None = None
    document_encoder: str = "minilm"
    passage_encoder: str = "minilm"
    separator: str = DEFAULT_SEPARATOR
    grouping: Grouping = "auto"


def corpus_groups(ws: Workspace, grouping: str):
    """The workspace corpus as documents with their passages."""
    if ws.corpus is None:
        raise ConfigError("dhr: give a corpus, or an 'index:' path to a hierarchical index")
    return documents_to_groups(ws.corpus.documents(), ws.corpus.splitter, grouping)


def hierarchical_index(ws: Workspace, source: HierarchySource = HierarchySource(),
                       search: VectorSearch = VectorSearch()) -> Any:
    """A hierarchical index from a path (sharded or not: :func:`load_hierarchical`), or the workspace corpus's (built
    once per parameter set, then cached)."""
    if source.index is not None:
        loaded = load_hierarchical(source.index)
        if isinstance(loaded, HierarchicalIndex):
            search.apply(loaded.document_index)
        return loaded
    key = params_key("hierarchical", {"document_encoder": encoder_identity(source.document_encoder),
                                      "passage_encoder": encoder_identity(source.passage_encoder),
                                      "factory": search.factory,
                                      "separator": source.separator, "grouping": source.grouping})
    loaded = ws.cached_index(key, HierarchicalIndex.load, lambda path: HierarchicalIndex.build(
        corpus_groups(ws, source.grouping), ws.encoder(source.document_encoder),
        ws.encoder(source.passage_encoder), path, search.factory, source.separator, ws.source().info(),
        ws.show_progress))
    search.apply(loaded.document_index)
    return loaded


def document_bm25(ws: Workspace, index: HierarchicalIndex, source: HierarchySource) -> BM25Index:
    """A BM25 index over the hierarchical index's document representations (cached in the workspace)."""
    passages = [Passage(i, i, text) for i, text in zip(index.documents.ids, index.documents.texts)]
    if ws.corpus is None:
        return BM25Index.build(passages, show_progress=ws.show_progress)
    key = params_key("dhr-documents-bm25", {"separator": source.separator, "grouping": source.grouping})
    return ws.cached_index(key, BM25Index.load,
                           lambda path: BM25Index.build(passages, path, show_progress=ws.show_progress))


def encoders_for(ws: Workspace, source: HierarchySource):
    """Loaded encoders for a workspace-built index (None: use the ones an index directory records)."""
    if source.index is not None:
        return None, None
    return ws.encoder(source.document_encoder), ws.encoder(source.passage_encoder)


def reads_corpus(params: dict) -> bool:
    """A DHR stage reads the workspace's corpus unless given an ``index:`` folder (BM25 documents are indexed from
    the corpus even then); before, every one did, so a search of a trained run's index said it searched the bundled
    SciFact."""
    return params.get("index") is None or params.get("documents") == "bm25"


@register_stage("dhr", reads_corpus=reads_corpus)
def dhr_stage(ws: Workspace, *, mode: Mode = DEFAULT_MODE, k1: Count = DEFAULT_K1, k: Count = 100,
              lam: float = DEFAULT_DHR_LAMBDA, documents: Backend = "dense",
              source: HierarchySource = HierarchySource(separator=DEFAULT_DHR_SEPARATOR),
              search: VectorSearch = VectorSearch(), name: str = "dhr",
              document: DocumentScore = DEFAULT_DOCUMENT, combine: Combine = "add",
              length_prior: float = DEFAULT_LENGTH_PRIOR, length_prior_below: float | None = DEFAULT_PRIOR_GATE) -> Stage:
    """Dense hierarchical retrieval: top ``k1`` documents, their passages ranked by passage + lam * document score
    (mode serial), or every passage and document scored and combined (mode parallel); ``k`` passages returned.
    ``document``: summary (encoded title + lead + table of contents), centroid (unit mean of the document's passage
    vectors) or max (the document's best passage score); ``combine``: add (Eq. 3) or gate
    (``p + lam * max(d - p, 0)``); ``length_prior``: beta of the document prior ``beta * log(passage count)``;
    ``length_prior_below``: add that prior only for queries whose best passage score is below this value (null: for
    every query). The defaults are the shipped ``dhr`` pipeline's."""
    if documents not in DOCUMENT_BACKENDS:
        raise ConfigError(f"dhr: unknown documents backend '{documents}' (known: {', '.join(DOCUMENT_BACKENDS)})")
    loaded = hierarchical_index(ws, source, search)
    bm25 = document_bm25(ws, require_whole(loaded, name), source) if documents == "bm25" else None
    doc_enc, passage_enc = encoders_for(ws, source)
    return dhr(loaded, mode=mode, k1=k1, k2=k, lam=lam, document_encoder=doc_enc if bm25 is None else None,
               passage_encoder=passage_enc, bm25=bm25, device=ws.device, name=name, document=document, combine=combine,
               length_prior=length_prior, length_prior_below=length_prior_below)


@register_stage("dhr_documents", reads_corpus=reads_corpus)
def dhr_documents_stage(ws: Workspace, *, k: Count = DEFAULT_K1, documents: Backend = "dense",
                        source: HierarchySource = HierarchySource(), search: VectorSearch = VectorSearch(),
                        name: str = "dhr_documents",
                        document: DocumentScore = "summary") -> DocumentRetrieve:
    """DHR stage 1 alone: the top ``k`` documents (dense, or BM25 over document representations)."""
    if documents not in DOCUMENT_BACKENDS:
        raise ConfigError(f"dhr_documents: unknown documents backend '{documents}'")
    loaded = hierarchical_index(ws, source, search)
    if documents == "bm25":
        bm25 = document_bm25(ws, require_whole(loaded, name), source)
        return DocumentRetrieve(loaded, k=k, name=name, device=ws.device, bm25=bm25, document=document)
    doc_enc, passage_enc = encoders_for(ws, source)
    return DocumentRetrieve(loaded, passage_enc if document != "summary" else doc_enc, k=k, name=name,
                            device=ws.device, document=document)


@register_stage("dhr_passages", needs_candidates=True, reads_corpus=reads_corpus)
def dhr_passages_stage(ws: Workspace, *, k: Count = 100, lam: float = DEFAULT_LAMBDA,
                       source: HierarchySource = HierarchySource(), search: VectorSearch = VectorSearch(),
                       name: str = "dhr_passages", combine: Combine = "add",
                       length_prior: float = 0.0, length_prior_below: float | None = None) -> PassageInDocuments:
    """DHR stage 2 alone: passages of the candidate documents ranked by passage + lam * document score (+ the length
    prior ``length_prior * log(passage count)``, with ``length_prior_below`` only for queries whose best passage
    score among them is below it)."""
    loaded = hierarchical_index(ws, source, search)
    _, passage_enc = encoders_for(ws, source)
    return PassageInDocuments(loaded, passage_enc, lam=lam, k=k, name=name, device=ws.device, combine=combine,
                              length_prior=length_prior, length_prior_below=length_prior_below)


@register_stage("dhr_p", reads_corpus=reads_corpus)
def dhr_p_stage(ws: Workspace, *, k: Count = 100, source: HierarchySource = HierarchySource(),
                search: VectorSearch = VectorSearch(), name: str = "dhr_p") -> PassageRetrieve:
    """DHR-P alone: flat search over every passage, each encoded with its hierarchical title."""
    loaded = hierarchical_index(ws, source, search)
    _, passage_enc = encoders_for(ws, source)
    return PassageRetrieve(loaded, passage_enc, k=k, name=name, device=ws.device)
