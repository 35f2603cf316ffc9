"""Config builder of the private-search stage (Faggioli & Ferro, ECIR 2024): ``private``.

    stages:
      - private: {engine: "http://127.0.0.1:8000", mechanism: vickrey-mahalanobis, epsilon: 6.25, n: 20}

``mechanism`` and ``epsilon`` default to the CLI's and ``POST /obfuscate``'s (``mechanisms.DEFAULT_MECHANISM``,
``DEFAULT_EPSILON``).

The local reranker defaults to the client's fast set-up (int8 ONNX MiniLM at 128 tokens over the top 50 of the
pool by local BM25, see ``sleuth.systems.private_search.rescore``); ``rerank_depth: null`` reranks the whole pool.
"""

from __future__ import annotations

from typing import Annotated, Any

from sleuth.constraints import AtLeast, Check, Count
from sleuth.pipelines.extras import register_extra
from sleuth.pipelines.registry import register_stage
from sleuth.pipelines.workspace import Workspace
from sleuth.systems.private_search.mechanisms import DEFAULT_EPSILON, DEFAULT_MECHANISM, MIN_EPSILON
from sleuth.systems.private_search.registry import PARAMETER_USERS, mechanism_params

# what the private stage writes in Hit.extras
register_extra("obfuscated_queries", list, "per_query", "the obfuscated queries sent to the engine for the query")
register_extra("found_by", int, "count_of_per_query", "how many of the obfuscated queries retrieved the hit")
register_extra("privacy", dict, "per_query", "what the engine saw of the query: queries sent, original words, words "
               "sent verbatim and in how many queries each, and the summary line (as sleuth privacy search)")
register_extra("obfuscation", dict, "per_query", "how the queries sent were made: mechanism, epsilon, n, seed, depth, "
               "sent and withheld")


def private_problem(params: dict[str, Any]) -> str | None:
    """The private stage's keys together: fsh is refused (its keyqueries come from a local corpus, which the stage
    has none of), and so are ``epsilon`` and ``embeddings`` with aed, which uses neither (before: both ignored),
    and ``lam`` / ``t`` with a mechanism they do not shape."""
    mechanism = params.get("mechanism", DEFAULT_MECHANISM)
    if mechanism == "fsh":
        return ("mechanism fsh finds its keyqueries in a local corpus, which the private stage has none of: use a DP "
                "mechanism or aed here (sleuth privacy obfuscate --mechanism fsh --corpus FILE obfuscates with fsh)")
    given = [key for key in ("epsilon", "embeddings") if key in params]
    if mechanism == "aed" and given:
        return f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for the DP mechanisms; aed uses neither"
    for key, users in PARAMETER_USERS.items():
        if params.get(key) is not None and mechanism not in users:
            return f"{key} shapes {', '.join(users)}, not {mechanism}"
    return None


def unit_interval(value: object) -> str | None:
    """A number in [0, 1], or the problem."""
    return None if isinstance(value, (int, float)) and 0 <= value <= 1 else "must be a number in [0, 1]"


@register_stage("private", check=private_problem, reads_corpus=False)  # the engine's corpus, not the workspace's
def private_stage(ws: Workspace, *, engine: str, mechanism: str = DEFAULT_MECHANISM,
                  epsilon: Annotated[float, AtLeast(MIN_EPSILON)] = DEFAULT_EPSILON,
                  n: Count = 20, depth: Count = 100, pipeline: str | None = None, encoder: str = "minilm-onnx-128",
                  rerank_depth: Count | None = 50, embeddings: str = "glove-6b-50d", oov: str | None = None,
                  seed: Annotated[int, AtLeast(0)] | None = None, withhold_original: bool = True,
                  lam: Annotated[float, Check(unit_interval)] | None = None,
                  t: Annotated[float, Check(unit_interval)] | None = None, name: str = "private"):
    """Private search against the sleuth service at ``engine`` (its ``pipeline``), reranked locally by ``encoder``
    (the top ``rerank_depth`` of the pool by local BM25; null: the whole pool). ``oov``: the out-of-vocabulary
    policy (default: drop for a DP mechanism, keep for aed, which takes keep or error). ``lam`` (Mahalanobis'
    lambda) and ``t`` (Vickrey's t) shape the mechanisms that use them (default: theirs)."""
    from sleuth.systems.private_search.client import PrivateSearch
    from sleuth.systems.private_search.registry import load_vocabulary_table, make_obfuscator
    from sleuth.systems.private_search.remote import RemoteEngine
    from sleuth.systems.private_search.rescore import TextRescore

    table = load_vocabulary_table(embeddings) if mechanism not in ("aed", "fsh") else None
    obfuscator = make_obfuscator(mechanism, embeddings=table, oov=oov, **mechanism_params(lam, t))
    reranker = TextRescore(ws.encoder(encoder), depth=rerank_depth)
    return PrivateSearch(obfuscator, RemoteEngine.sleuth(engine, pipeline), reranker, n=n, epsilon=epsilon,
                         depth=depth, seed=seed, withhold_original=withhold_original, name=name)
