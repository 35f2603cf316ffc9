"""Search engines the private-search client talks to: any HTTP engine through a small adapter, or a local stage.

:class:`RemoteEngine` fills a URL template (``{query}`` and ``{k}``, URL-encoded) for GET, or a JSON body template
for POST, and reads the hits from the response at a dotted ``hits_path`` with configurable field names.
``RemoteEngine.sleuth(base_url)`` is set up for sleuth's own ``sleuth serve``. ``search_many`` sends its queries
concurrently (``workers`` at a time), so n obfuscated queries cost about one round trip, not n. :class:`StageEngine` runs a local
Stage as if it were the remote engine (for offline evaluation) and keeps its own query log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import quote_plus

from sleuth.errors import ConfigError, MissingExtraError, SleuthError
from sleuth.stages.base import Stage
from sleuth.stages.run import Hit


class SearchEngine(Protocol):
    """What the client needs from an engine: the top ``k`` hits of each query text."""

    name: str

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]: ...


def dig(data: Any, path: str) -> Any:
    """The value at a dotted path ("response.docs", "hits"; list positions as numbers); '' is the data itself."""
    for part in [p for p in path.split(".") if p]:
        if isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        elif isinstance(data, Mapping) and part in data:
            data = data[part]
        else:
            raise SleuthError(f"remote engine: response has no '{path}' (missing '{part}')")
    return data


def fill(template: Any, query: str, k: int) -> Any:
    """A JSON body template with "{query}" and "{k}" strings replaced (k as a number when it is the whole value)."""
    if isinstance(template, str):
        if template == "{k}":
            return k
        return template.replace("{query}", query).replace("{k}", str(k))
    if isinstance(template, Mapping):
        return {key: fill(value, query, k) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(value, query, k) for value in template]
    return template


def text_field(record: Mapping[str, Any], field: str | None, where: str) -> str | None:
    """An optional text field of a hit (title, text): a string or absent."""
    value = record.get(field) if field else None
    if value is not None and not isinstance(value, str):
        raise SleuthError(f"{where}: field '{field}' must be a string, got {str(value)[:80]!r}")
    return value


class RemoteEngine:
    """An HTTP search engine: ``GET url_template`` or ``POST url`` with ``body_template``, hits at ``hits_path``."""

    def __init__(self, url: str, method: str = "GET", body_template: Mapping[str, Any] | None = None,
                 hits_path: str = "hits", id_field: str = "id", score_field: str = "score",
                 title_field: str | None = "title", text_field: str | None = "text",
                 headers: Mapping[str, str] | None = None, timeout: float = 30.0, workers: int = 8,
                 name: str = "remote"):
        method = method.upper()
        if method not in ("GET", "POST"):
            raise ConfigError(f"remote engine: method must be GET or POST, got '{method}'")
        if method == "GET" and "{query}" not in url:
            raise ConfigError("remote engine: a GET url template needs a {query} placeholder")
        if method == "POST" and body_template is None:
            raise ConfigError("remote engine: POST needs a JSON body template with a \"{query}\" value")
        try:
            import httpx
        except ImportError:
            raise MissingExtraError("httpx", "service", "remote search engines") from None
        self.url, self.method, self.body_template = url, method, body_template
        self.hits_path, self.id_field, self.score_field = hits_path, id_field, score_field
        self.title_field, self.text_field, self.name = title_field, text_field, name
        self.workers = max(1, workers)
        self.client = httpx.Client(headers=dict(headers or {}), timeout=timeout,
                                   limits=httpx.Limits(max_connections=self.workers))

    @classmethod
    def sleuth(cls, base_url: str, pipeline: str | None = None, **options: Any) -> RemoteEngine:
        """sleuth's own service (``sleuth serve``) at ``base_url``, POSTing to /search."""
        body: dict[str, Any] = {"query": "{query}", "k": "{k}"}
        if pipeline:
            body["pipeline"] = pipeline
        return cls(base_url.rstrip("/") + "/search", method="POST", body_template=body, **options)

    def search(self, query: str, k: int) -> list[Hit]:
        """The engine's top ``k`` hits for one query text."""
        import httpx

        try:
            if self.method == "GET":
                url = self.url.replace("{query}", quote_plus(query)).replace("{k}", str(k))
                response = self.client.get(url)
            else:
                response = self.client.post(self.url.replace("{k}", str(k)), json=fill(self.body_template, query, k))
        except httpx.HTTPError as exc:
            raise SleuthError(f"remote engine {self.url}: {type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            raise SleuthError(f"remote engine {self.url}: HTTP {response.status_code}: {response.text[:200]}")
        try:
            records = dig(response.json(), self.hits_path)
        except ValueError:
            raise SleuthError(f"remote engine {self.url}: the response is not JSON") from None
        if not isinstance(records, list):
            raise SleuthError(f"remote engine: '{self.hits_path}' is not a list")
        return [self._hit(record, rank) for rank, record in enumerate(records[:k], start=1)]

    def _hit(self, record: Any, rank: int) -> Hit:
        """One hit of the response, its fields checked: a hostile or broken engine gets a one-line error naming the
        engine, the hit and the field, never a traceback or a wrong-typed hit."""
        where = f"remote engine {self.url}: hit {rank}"
        if not isinstance(record, Mapping):
            raise SleuthError(f"{where} is not an object: {str(record)[:80]!r}")
        if self.id_field not in record and "." not in self.id_field:
            raise SleuthError(f"{where} has no field '{self.id_field}'")
        if self.score_field and self.score_field not in record and "." not in self.score_field:
            raise SleuthError(f"{where} has no field '{self.score_field}'")
        doc_id = dig(record, self.id_field)
        if not isinstance(doc_id, str | int) or isinstance(doc_id, bool) or str(doc_id) == "":
            raise SleuthError(f"{where}: field '{self.id_field}' must be a non-empty string or integer, "
                              f"got {str(doc_id)[:80]!r}")
        score = dig(record, self.score_field) if self.score_field else 1.0 / rank
        if not isinstance(score, int | float) or isinstance(score, bool) or score != score or abs(score) == float("inf"):
            raise SleuthError(f"{where}: field '{self.score_field}' must be a finite number, got {str(score)[:80]!r}")
        title, text = text_field(record, self.title_field, where), text_field(record, self.text_field, where)
        return Hit(str(doc_id), float(score), str(doc_id), title, text)

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """The top ``k`` hits of each query, in order; up to ``workers`` requests in flight at once."""
        if len(queries) <= 1 or self.workers == 1:
            return [self.search(query, k) for query in queries]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(self.workers, len(queries))) as pool:
            return list(pool.map(lambda query: self.search(query, k), queries))

    def close(self) -> None:
        self.client.close()


class StageEngine:
    """A local Stage standing in for the remote engine; ``sent`` records every query it received."""

    def __init__(self, stage: Stage, name: str | None = None):
        self.stage, self.name = stage, name or stage.name
        self.sent: list[str] = []

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        from sleuth.corpus.model import Query

        self.sent.extend(queries)
        batch = [Query(f"o{i}", text) for i, text in enumerate(queries)]
        run = self.stage.transform(batch) if batch else {}
        return [run.get(q.id, [])[:k] for q in batch]
