"""Evidence paths to passages: a ranking of multi-hop paths (hits whose ``extras["path"]`` is the list of hits they
chain, as Chain-of-Skills' are) read as a ranking of the passages, so that passage qrels can measure it."""

from __future__ import annotations

from collections.abc import Sequence

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.stages.base import ReadsNoIndex, Stage
from sleuth.stages.run import Hit, Run


def evidence_path(hit: Hit) -> list[Hit] | None:
    """The hits ``hit`` chains (``extras["path"]``: a non-empty list of hits), or None for a hit that is no path."""
    path = hit.extras.get("path")
    return path if isinstance(path, list) and path and all(isinstance(part, Hit) for part in path) else None


class PathPassages(ReadsNoIndex, Stage):
    """Each hit that holds a path (``extras["path"]``) replaced by the path's passages in path order, every passage
    kept once, at the first (best) path that holds it, with that path's score and id (``extras["path_id"]``); a hit
    without a path stays as it is. Passages of one path share its score, so a measure that breaks score ties by id
    (trec_eval) may order them either way."""

    name = "path_passages"

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        if candidates is None:
            raise ConfigError(f"{self.name} reads the paths of an earlier stage's ranking; run it after one (e.g. "
                              "cos_chain)")
        hits = [hit for q in queries for hit in candidates.get(q.id, [])]
        if hits and not any(evidence_path(hit) for hit in hits):  # before: passed through
            raise ConfigError(f"{self.name} got {len(hits):,} hits and no evidence path (extras['path']), e.g. "
                              f"'{hits[0].id}': run it after a stage that gives paths (cos_chain); from a PyTerrier "
                              "results frame, the paths are in its 'extras' column, which a chain's as_transformer "
                              "writes")
        return Run({q.id: path_passages(candidates.get(q.id, [])) for q in queries})


def path_passages(hits: Sequence[Hit]) -> list[Hit]:
    """The passages of ranked path hits, each once, in the order :class:`PathPassages` describes."""
    seen: set[str] = set()
    passages: list[Hit] = []
    for hit in hits:
        for part in evidence_path(hit) or [hit]:
            if part.id not in seen:
                seen.add(part.id)
                passages.append(part.with_score(hit.score, path_id=hit.id) if part is not hit else hit)
    return passages
