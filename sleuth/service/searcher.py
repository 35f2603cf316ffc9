"""Searching for the service: requests checked against the limits (and ``k`` against the pipeline's depth:
:mod:`sleuth.service.depth`), run on the bounded executor within the time limit (a batch stops between queries once
it is passed), logged, and answered as capped JSON bytes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sleuth.index.partial import partial_results
from sleuth.service.depth import check_depth, depth
from sleuth.service.executor import BoundedExecutor, Deadline
from sleuth.service.limits import Limits, RequestError, check_flag
from sleuth.service.query_log import QueryLog
from sleuth.service.served import ServedPipelines
from sleuth.service.shape import Shape, encode, estimated_bytes, too_large
from sleuth.stages.base import Stage

DEFAULT_K = 10


class Searcher:
    """``search`` and ``search_batch`` over the served pipelines; both give the response body as JSON bytes."""

    def __init__(self, served: ServedPipelines, executor: BoundedExecutor, limits: Limits, query_log: QueryLog):
        self.served, self.executor, self.limits, self.query_log = served, executor, limits, query_log

    def _one(self, stage: Stage, query: str, k: int, shape: Shape, partial: bool) -> dict[str, Any]:
        """``{"hits"}`` of one query, with ``extras``: and each declared ``per_query`` extra the hits carry, under its
        own key (:mod:`sleuth.pipelines.extras`); with ``partial``, the ranking of the shards that answered and
        ``shards``: which answered, which are down (a 400 when it asked no shard actor)."""
        with partial_results(partial) as report:
            hits = stage.search(query, k=k)
        if partial and not (report.answered or report.down):  # before: "answered": [], read as none answered
            raise RequestError("'partial' applies to sharded indexes served from shard actors (sleuth serve "
                               "--ray-address), where a shard can be down; this pipeline searched none (every "
                               "in-process shard answers)")
        records, per_query = shape.hits(hits)
        out: dict[str, Any] = {**per_query, "hits": records}
        return {**out, "shards": report.to_dict()} if partial else out

    def _k(self, name: str, stage: Stage, k: Any) -> int:
        """``k`` checked against the limits and against the pipeline's depth (a 400 above it, naming the keys that
        raise it); not given (None): :data:`DEFAULT_K`, or the pipeline's depth where smaller."""
        if k is not None:
            return check_depth(name, stage, self.limits.k(k))
        k, found = self.limits.k(DEFAULT_K), depth(stage)
        return k if found is None else min(k, found.hits)

    async def _logged(self, name: str, queries: list[str], k: int, work: Callable[[Deadline], bytes],
                      answered: list[int], log: bool) -> bytes:
        """``work`` run on the executor; then each query logged with the status its request was answered with:
        ``200`` and its number of hits, or the refusal's status (503 busy, 504 past the time limit, 400 too large)
        and its error, without hits (before, a query was logged with its hits once ranked, even when the client
        got a 504 or a 400). ``answered`` holds each query's number of hits as ``work`` ranks them."""
        try:
            body = await self.executor.run_async(work)
        except RequestError as exc:
            if log:
                for query in queries:
                    self.query_log.record(pipeline=name, query=query, k=k, status=exc.status, error=str(exc))
            raise
        if log:
            for query, hits in zip(queries, answered):
                self.query_log.record(pipeline=name, query=query, k=k, status=200, hits=hits)
        return body

    async def search(self, query: Any, k: Any = None, pipeline: Any = None, extras: Any = False,
                     max_chars: Any = None, fields: Any = None, partial: Any = False, log: bool = True) -> bytes:
        """One search: ``{"query", "pipeline", "hits"}`` (and ``shards`` with ``partial``); ``log=False`` (a
        ``HEAD`` request) keeps it out of the query log."""
        name, stage = self.served.pipeline(pipeline)
        query, k = self.limits.query(query), self._k(name, stage, k)
        shape = Shape.of(self.limits, max_chars, fields, extras)
        partial = check_flag(partial, "partial")
        cap = self.limits.max_response_bytes
        answered: list[int] = []

        def work(deadline: Deadline) -> bytes:
            found = self._one(stage, query, k, shape, partial)
            answered.append(len(found["hits"]))
            return encode({"query": query, "pipeline": name, **found}, cap)

        return await self._logged(name, [query], k, work, answered, log)

    async def search_batch(self, queries: Any, k: Any = None, pipeline: Any = None, extras: Any = False,
                           max_chars: Any = None, fields: Any = None, partial: Any = False) -> bytes:
        """Several searches in one request: ``{"pipeline", "results": [{"query", "hits"}]}``; the work stops between
        queries once the time limit passed or the response grew past its size cap."""
        name, stage = self.served.pipeline(pipeline)
        queries, k = self.limits.batch(queries), self._k(name, stage, k)
        shape = Shape.of(self.limits, max_chars, fields, extras)
        partial = check_flag(partial, "partial")
        cap = self.limits.max_response_bytes
        answered: list[int] = []

        def work(deadline: Deadline) -> bytes:
            results, size = [], 0
            for query in queries:
                deadline.check()
                results.append({"query": query, **self._one(stage, query, k, shape, partial)})
                answered.append(len(results[-1]["hits"]))
                size += estimated_bytes(results[-1]["hits"])
                if size > cap:
                    raise too_large(size, cap)
            return encode({"pipeline": name, "results": results}, cap)

        return await self._logged(name, list(queries), k, work, answered, True)

