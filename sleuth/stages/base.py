"""The one core abstraction: a Stage takes queries (and optionally candidates) and returns scored candidates;
its operators are here too: ``Sequential`` (``a >> b``) and ``Cutoff`` (``a % k``).

Stages compose like PyTerrier transformers::

    pipeline = bm25 >> dense_rescore % 10          # sequence, then rank cut-off
    hybrid = Fuse([bm25, dense], method="rrf")      # fusion of branches that see the same input
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from sleuth.corpus.frames import frame_queries, is_frame, require_columns
from sleuth.corpus.model import Query, id_string
from sleuth.errors import ConfigError, QueryError
from sleuth.stages.run import Hit, Run

#: the longest query a pipeline takes, in characters: a whole document as a query (query by document; before, 4,096
#: refused a batch holding 15 of SciFact's abstracts), where a longer text is a mistake, not a question
MAX_QUERY_CHARS = 100_000


def as_queries(queries: str | Query | Iterable[str | Query] | Mapping[str, str]) -> list[Query]:
    """Normalise what a pipeline is called with into a list of Queries: a string or a Query, a list of either
    (strings get ids q1, q2, ...), an ``{id: text}`` mapping, or a pandas frame with ``qid`` and ``query`` columns
    (PyTerrier's topics). Ids are strings: a whole number is written as one (``{1: ...}`` and ``Query(1, ...)`` are
    query '1', as in qrels); a QueryError for any other id (None, a float), for strings in a set (no order to number
    them by), for an empty or oversized query and for an id given twice."""
    if isinstance(queries, (str, Query)):
        queries = [queries]
    elif isinstance(queries, Mapping):
        queries = [Query(checked_id(qid, f"query {i} of the mapping"), text)
                   for i, (qid, text) in enumerate(queries.items(), start=1)]
    elif is_frame(queries):  # a DataFrame iterates over its columns
        require_columns(queries, ("qid", "query"), "queries", QueryError)
        queries = frame_queries(queries)
    elif not isinstance(queries, Iterable) or isinstance(queries, (bytes, bytearray)):
        raise QueryError("queries must be a string, a Query, a list of them, an {id: text} mapping or a frame with "
                         f"qid and query columns; got {type(queries).__name__}")
    elif isinstance(queries, (set, frozenset)) and any(isinstance(query, str) for query in queries):
        raise QueryError("queries given as a set of strings would be numbered q1, q2, ... in an order that changes "
                         "from one run to the next: give a list, or an {id: text} mapping")
    result = []
    for i, query in enumerate(queries, start=1):
        if not isinstance(query, (str, Query)):
            raise QueryError(f"query {i} of the list is {type(query).__name__} {query!r:.40}, not a string or a "
                             f"sleuth.Query")
        if isinstance(query, Query) and not isinstance(query.id, str):  # before: the Run was keyed by the int 1
            query = replace(query, id=checked_id(query.id, f"query {i} of the list"))
        result.append(query if isinstance(query, Query) else Query(f"q{i}", query))
    first_seen: dict[str, int] = {}
    for i, query in enumerate(result, start=1):
        check_query(query)
        if query.id in first_seen:  # before: the Run kept one of them and the other's results were lost unsaid
            raise QueryError(f"query id '{query.id}' is given twice (queries {first_seen[query.id]} and {i}); "
                             f"a run holds one ranking per id")
        first_seen[query.id] = i
    return result


def as_candidates(candidates: Run | Mapping[str, Sequence[Hit]] | None) -> Run | None:
    """Normalise the candidates a stage is called with: None, a Run, a ``{query id: [Hit, ...]}`` mapping (each
    ranking sorted by score) or a PyTerrier results frame (``qid``, ``docno``, ``score``). Anything else, a hit that
    is not a :class:`Hit` or a document given twice for one query is a QueryError (before: an AttributeError from
    inside the stage)."""
    if candidates is None or isinstance(candidates, Run):
        return candidates
    if is_frame(candidates):
        return Run.from_frame(candidates)
    if not isinstance(candidates, Mapping):
        raise QueryError(f"candidates must be a sleuth Run ({{query id: [Hit, ...]}}) or a results frame with qid, "
                         f"docno and score columns; got {type(candidates).__name__}")
    run = Run()
    for qid, hits in candidates.items():
        key = checked_id(qid, "a ranking of the candidates")
        if isinstance(hits, (str, bytes)) or not isinstance(hits, Sequence):
            raise QueryError(f"candidates of query '{key}' must be a list of sleuth Hits, got {type(hits).__name__}")
        seen: set[str] = set()
        for hit in hits:
            if not isinstance(hit, Hit):
                raise QueryError(f"candidates of query '{key}' hold {type(hit).__name__} {hit!r:.40}, not a sleuth Hit")
            if hit.id in seen:
                raise QueryError(f"candidates of query '{key}' rank document '{hit.id}' twice")
            seen.add(hit.id)
        run[key] = list(hits)
    return run.sorted()


def checked_id(value: object, where: str) -> str:
    """A query id as a string (:func:`id_string`), else a QueryError naming ``where``."""
    text = id_string(value)
    if text is None:
        raise QueryError(f"{where} has the id {value!r:.40}; a query id is a string (or a whole number)")
    return text


def pipeline_hint(value: object) -> str:
    """For a pipeline's name given where a stage is wanted: ``"; build it with ws.pipeline('NAME')"``, else ``""``."""
    return f"; build it with ws.pipeline('{value}')" if isinstance(value, str) else ""


def check_query(query: Query, max_chars: int = MAX_QUERY_CHARS) -> None:
    """Reject empty, oversized, non-string or non-Unicode queries with a QueryError naming the query id ("the query"
    where it has none)."""
    name = f"query '{query.id}'" if query.id else "the query"
    if query.text is not None and not isinstance(query.text, str):
        raise QueryError(f"{name} must be a string, got {type(query.text).__name__} (several queries: call the "
                         f"pipeline with a list)")
    if not query.text or not query.text.strip():
        raise QueryError(f"{name} is empty")
    if len(query.text) > max_chars:
        raise QueryError(f"{name} has {len(query.text):,} characters; the limit is {max_chars:,}")
    try:
        query.text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a command-line argument that is not UTF-8 (Python keeps its bytes this way)
        raise QueryError(f"{name} is not valid text: character {exc.start + 1} is a lone surrogate (bytes that are not "
                         "UTF-8?)") from None


def check_k(k: int, owner: str, key: str = "k") -> int:
    """``k`` itself when it is a positive integer (not a bool), else a ConfigError naming ``owner`` and ``key``."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ConfigError(f"{owner}: {key} must be a positive integer, got {k!r}")
    return k


def counted_every(stage: Stage) -> int | None:
    """The smallest :attr:`Stage.progress_every` of ``stage`` and its parts (a Sequential's), None where none sets
    one."""
    parts = stage.stages if isinstance(stage, Sequential) else [stage]
    values = [value for part in parts if (value := getattr(part, "progress_every", None))]
    return min(values) if values else None


def transform_counted(stage: Stage, queries: Sequence[Query], description: str, enabled: bool = True,
                      chunk: int | None = None, unit: str = "queries") -> Run:
    """``stage.transform(queries)`` in chunks of queries (``chunk``, else the stage's :attr:`Stage.progress_every`,
    else a 20th of them, 16 to 256), with the queries done (in ``unit``), their rate and time left shown by
    :mod:`sleuth.progress`; the same Run as one call for stages that treat queries independently (every sleuth
    stage); one call when not ``enabled``."""
    from sleuth.progress import progress

    if not enabled:
        return stage.transform(queries, None)
    size = chunk or counted_every(stage) or min(256, max(16, -(-len(queries) // 20)))
    parts = []
    with progress(description, len(queries), unit, enabled) as task:
        for start in range(0, len(queries), size):
            part = queries[start:start + size]
            parts.append(stage.transform(part, None))
            task.advance(len(part))
    if len(parts) == 1:
        return parts[0]
    if not all(isinstance(part, Run) for part in parts):
        return parts[0]  # not a Run: the caller reports it
    return Run.concat(parts)


class Stage(ABC):
    """One step of a pipeline: ``transform(queries, candidates) -> Run``.

    ``candidates`` is None for a first-stage retriever; a reranker scores the candidates it is given.
    Subclasses implement :meth:`transform`; composition operators come for free.
    """

    #: short name used in tables and configs
    name: str = "stage"
    #: one line for people (the service lists it with the pipeline); a pipeline config's ``description``
    description: str | None = None
    #: how many hits a query gets from this stage (the service's depth check reads it: :mod:`sleuth.service.depth`):
    #: ``"k"`` at most its :meth:`hits_limit` whatever it is given; ``"cut"`` at most that and at most the candidates
    #: it is given (a cutoff); ``"retrieve"`` at most its limit run first, at most its candidates given some (a
    #: retriever rescoring them); ``"rescore"`` at most the candidates it is given (a reranker, a classifier, a
    #: grouping into documents); None where it cannot be told
    hits_bound: str | None = None
    #: the config stage whose ``k`` sets :meth:`hits_limit` (``--set bm25.k=5000``); a stage built from a pipeline
    #: config carries its entry's name (:func:`sleuth.pipelines.config.build_stages`), so a ``dual_encoder`` entry's
    #: dense retriever says ``dual_encoder.k``
    config_stage: str | None = None
    #: how many queries a progress count takes at most (:func:`transform_counted`): 1 for a stage slow per query
    #: (a private search sends each query's obfuscations, seconds a query), so a bar moves per query; None: the
    #: default (a 20th of the queries, 16 to 256, which keeps batches whole)
    progress_every: int | None = None

    @abstractmethod
    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        """Score candidates (or retrieve them when ``candidates`` is None) for every query."""

    def hits_limit(self) -> int | None:
        """The count :attr:`hits_bound` reads: the stage's ``k``."""
        k = getattr(self, "k", None)
        return k if isinstance(k, int) else None

    def index_folders(self) -> set[Path] | None:
        """The index folders this stage reads (a service reloads it after an update of one of them, and keeps it
        after an update of another), an empty set for a stage that reads none (a cutoff, a model's scores), None
        where that cannot be told (the default: such a stage is reloaded after every update). A subclass that
        reads more than its parent overrides this."""
        return None

    def __call__(self, queries: str | Query | Iterable[str | Query] | Mapping[str, str],
                 candidates: Run | Mapping[str, Sequence[Hit]] | None = None) -> Run:
        """Run the stage on queries given in any form :func:`as_queries` takes (a string, a list, ``{id: text}``, a
        PyTerrier topics frame), with candidates in any form :func:`as_candidates` takes."""
        return self.transform(as_queries(queries), as_candidates(candidates))

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Convenience: the top ``k`` hits of one query string (at most as many as the stage retrieves: a stage
        built with ``k=10`` gives 10 for ``search(..., k=50)``; build it deeper for more)."""
        check_k(k, "search")
        query_obj = Query("q1", query)
        check_query(query_obj)
        return self.transform([query_obj]).get("q1", [])[:k]

    def __rshift__(self, other: Stage) -> Stage:
        if isinstance(other, str):  # before: Python's "unsupported operand type(s) for >>: 'Sequential' and 'str'"
            raise ConfigError(f"a >> b needs a stage on the right, got the string '{other}'{pipeline_hint(other)}")
        if not isinstance(other, Stage):
            return NotImplemented  # Python then raises "unsupported operand type(s) for >>"
        return Sequential([self, other])

    def __mod__(self, k: int) -> Stage:
        return self >> Cutoff(k)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class ReadsNoIndex:
    """Mixin for a stage that reads no index folder (a cutoff, a regrouping of its candidates, a model's scores, a
    run file): an update of any index leaves it as it is (:meth:`Stage.index_folders` is empty)."""

    def index_folders(self) -> set[Path]:
        return set()


class Sequential(Stage):
    """Runs stages in order, each receiving the previous stage's candidates."""

    def __init__(self, stages: Sequence[Stage], name: str | None = None):
        flat: list[Stage] = []
        for stage in stages:
            flat.extend(stage.stages if isinstance(stage, Sequential) else [stage])
        self.stages: list[Stage] = flat
        self.name = name or " >> ".join(s.name for s in flat)

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        stray = next((q for q in queries if not isinstance(q, Query)), None)
        if stray is not None:  # a plain string here failed deep inside a stage with an AttributeError
            raise QueryError(f"transform takes sleuth.Query objects, got {type(stray).__name__} {stray!r:.60}; "
                             f"call the pipeline itself with strings: pipeline(['...', ...])")
        for stage in self.stages:
            candidates = stage.transform(queries, candidates)
        return candidates if candidates is not None else Run()

    def index_folders(self) -> set[Path] | None:
        return folders_of(self.stages)


class Cutoff(ReadsNoIndex, Stage):
    """Keeps the first ``k`` candidates per query (input must be ranked, as every stage's output is)."""

    hits_bound, config_stage = "cut", "cutoff"

    def __init__(self, k: int):
        self.k = check_k(k, "cutoff")
        self.name = f"cutoff({k})"

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        if candidates is None:  # before: an empty run, every query without hits
            raise ConfigError(f"{self.name} cuts the ranking of an earlier stage; run it after one (stage % k)")
        return candidates.cut(self.k)


def folders_of(stages: Iterable[Stage]) -> set[Path] | None:
    """The index folders ``stages`` read together (:meth:`Stage.index_folders`), None where one's cannot be told."""
    found: set[Path] = set()
    for stage in stages:
        folders = stage.index_folders()
        if folders is None:
            return None
        found |= folders
    return found
