"""QUEST's part of the search service: ``POST /quest/predict`` answers a set-seeking query with a served QUEST
pipeline (e.g. ``sleuth serve --pipeline quest-bm25-classify`` over a QUEST corpus) and ``GET /quest`` is its page.

Request ``{"query", "pipeline"?, "max_chars"?}`` (default: the first served pipeline whose name starts with ``quest``); response
``{"query", "pipeline", "template", "symbol", "constraints": [{"text", "negated"}], "members": [{"rank", "id",
"title", "text", "score", "constraint_scores"?, "whole_score"?}]}``: the predicted set, each member with its
classifier score (the probability, or for a set-operation pipeline the fuzzy combination, one probability per
constraint and, when anchored, the whole query's), and the query's parsed template and constraints. Members' titles
and texts are cut, and the response bounded, as ``/search``'s are (:mod:`sleuth.service.shape`: ``--text-chars``
unless ``max_chars`` asks for more, ``"truncated": true``; a 400 above ``--max-response-bytes``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sleuth.service.limits import RequestError, safe_name
from sleuth.service.shape import Shape, json_response

STATIC = Path(__file__).parent / "static"
FIELDS = {"query", "pipeline", "max_chars"}
PREFIX = "quest"


def quest_pipelines(service) -> list[str]:
    """The served pipelines a QUEST query can go to (name starting with "quest")."""
    return [name for name in service.pipelines if name.startswith(PREFIX)]


class QuestEndpoint:
    """Adds ``POST /quest/predict``, ``GET /quest`` (the page) and ``/quest/static/*`` to a service app."""

    def predict(self, service, query: Any, pipeline: Any = None, max_chars: Any = None) -> dict[str, Any]:
        """The predicted set of ``query`` by a served QUEST pipeline, with scores and the parsed query (members'
        title and text cut to ``max_chars``, default the service's ``text_chars``)."""
        from sleuth.corpus.model import Query
        from sleuth.systems.quest.query_parser import parse_query
        from sleuth.systems.quest.templates import SYMBOLS

        query = service.limits.query(query)
        shape = Shape.of(service.limits, max_chars)
        served = quest_pipelines(service)
        if not served:
            raise RequestError("no QUEST pipeline is served (serve e.g. quest-bm25-classify)", 404)
        name = served[0] if pipeline is None else safe_name(pipeline)
        if name not in served:
            raise RequestError(f"unknown QUEST pipeline '{name}' (served: {', '.join(served)})")
        stage = service.pipelines[name]
        hits = service.timed(lambda: stage.transform([Query("q", query)]).get("q", []))
        parsed = parse_query(query)
        members = []
        for rank, hit in enumerate(hits, start=1):
            member = {"rank": rank, "id": hit.id, "title": hit.title, "text": hit.text, "score": float(hit.score)}
            if "constraint_scores" in hit.extras:
                member["constraint_scores"] = [float(s) for s in hit.extras["constraint_scores"]]
            if "whole_score" in hit.extras:
                member["whole_score"] = float(hit.extras["whole_score"])
            members.append(shape.cut(member))
        return {"query": query, "pipeline": name, "template": parsed.template,
                "symbol": SYMBOLS.get(parsed.template, parsed.template),
                "constraints": [{"text": text, "negated": negated}
                                for text, negated in zip(parsed.constraints, parsed.negated)],
                "members": members}

    def __call__(self, app, service) -> None:
        from fastapi import Body
        from fastapi.responses import FileResponse, Response
        from fastapi.staticfiles import StaticFiles

        from sleuth.service.app import check_fields
        from sleuth.service.page import SECURITY_HEADERS

        app.mount("/quest/static", StaticFiles(directory=STATIC), name="quest-static")

        @app.get("/quest", include_in_schema=False)
        def quest_page() -> FileResponse:
            """The QUEST page: a query in, the predicted set with scores and the parsed constraints out."""
            return FileResponse(STATIC / "quest.html", media_type="text/html; charset=utf-8",
                                headers=SECURITY_HEADERS)

        @app.get("/quest/pipelines")
        def quest_pipeline_names() -> dict[str, Any]:
            """The served QUEST pipelines."""
            return {"pipelines": quest_pipelines(service)}

        @app.post("/quest/predict", response_class=Response, response_model=None)
        def quest_predict(body: Any = Body(...)):  # no return annotation: Response is imported here, not at the top
            """The predicted set of a QUEST query: ``{"query", "pipeline"?, "max_chars"?}``."""
            body = check_fields(body, FIELDS)
            answer = self.predict(service, body.get("query"), body.get("pipeline"), body.get("max_chars"))
            return json_response(answer, service.limits.max_response_bytes)


def endpoints() -> list[QuestEndpoint]:
    """What QUEST adds to the service (:attr:`sleuth.plugins.System.service`)."""
    return [QuestEndpoint()]
