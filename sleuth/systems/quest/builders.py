"""Config builders of the QUEST stages: dual_encoder (the trained retriever), classify (relevance classifier) and
setops (set-operation-aware scoring).

``model`` defaults to the classifier shipped in the package (``sleuth/systems/quest/weights/quest-classifier``, a
LoRA adapter over the packaged MiniLM; see its README.md). A threshold may be a number, null (keep and rank every
candidate) or "tuned": the set rule (threshold, and the score gap / keep-top if the sweep chose them) that ``sleuth
quest train`` chose for ``system`` (e.g. "bm25", "bm25+setops") and wrote to the model's training.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from sleuth.constraints import Count, OneOf
from sleuth.errors import ConfigError
from sleuth.index.dense import VectorSearch
from sleuth.pipelines.registry import register_stage
from sleuth.pipelines.workspace import Workspace
from sleuth.stages.base import Stage
from sleuth.systems.quest.classify import Classify
from sleuth.systems.quest.cut import SetCut
from sleuth.systems.quest.fuzzy import T_NORMS
from sleuth.systems.quest.set_ops import SetOperations


def model_dir(model: str | None) -> Path:
    """``model`` as a path, or the shipped classifier."""
    from sleuth.systems.quest.methods import shipped_classifier_dir

    return Path(model) if model else shipped_classifier_dir()


def classifier_model(ws: Workspace, model: str | None, int8: bool):
    """The workspace's classifier (loaded once per model path and precision)."""
    from sleuth.models.cross_encoder import CrossEncoderClassifier

    path = str(model_dir(model))
    return ws.memo(f"classifier:{path}:{int8}", lambda: CrossEncoderClassifier(path, device=ws.device, int8=int8))


def given_cut(value: Any, key: str) -> SetCut | None:
    """The set rule of a threshold given as a number (None for None); any other value is a ConfigError naming
    ``key``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{key} must be a number in [0, 1), null or 'tuned', got {value!r}")
    if not 0.0 <= value < 1.0:
        raise ConfigError(f"{key} must be in [0, 1), got {value}")
    return SetCut(float(value))


def resolve_threshold(threshold: Any, model: str | None, system: str) -> SetCut | None:
    """A number, None, or the tuned set rule of ``system`` recorded with the model."""
    if threshold != "tuned":
        return given_cut(threshold, "threshold")
    from sleuth.systems.quest.classifier_training import read_training_record

    record = read_training_record(model_dir(model))
    tuned = record.get("cuts") or record.get("thresholds", {})
    if system not in tuned:
        raise ConfigError(f"no tuned threshold for '{system}' in {model_dir(model)}/training.json "
                          f"(tuned: {', '.join(tuned) or 'none'}); give a number")
    return SetCut.from_record(tuned[system])


def resolve_set_threshold(set_threshold: Any, threshold: Any, model: str | None, system: str) -> SetCut | None:
    """The set rule of the queries parsed as intersections or differences: a number, None (``threshold``'s rule),
    or "tuned": the one recorded for ``system`` when ``threshold`` is tuned too (``threshold``'s rule when it is
    given, or when the model's record has none: one written before session 24)."""
    if set_threshold == "tuned" and threshold != "tuned":
        return None
    if set_threshold != "tuned":
        return given_cut(set_threshold, "set_threshold")
    from sleuth.systems.quest.classifier_training import read_training_record

    tuned = read_training_record(model_dir(model)).get("set_operation_cuts", {})
    return SetCut.from_record(tuned[system]) if system in tuned else None


def resolve_weight(weight: Any, model: str | None, system: str, kind: str = "retriever_weights",
                   default: float = 0.0) -> float:
    """A number, or the weight of ``kind`` tuned for ``system`` with the model (``default`` when none was tuned):
    the retriever's vote ("retriever_weights"), setops' soft negation ("not_weights") or its share of the set
    operation ("constraint_weights")."""
    if weight != "tuned":
        return float(weight)
    from sleuth.systems.quest.classifier_training import read_training_record

    return float(read_training_record(model_dir(model)).get(kind, {}).get(system, default))


@register_stage("dual_encoder")
def dual_encoder_stage(ws: Workspace, *, k: Count = 1000, model: str | None = None,
                       search: VectorSearch = VectorSearch(), name: str = "dense") -> Stage:
    """Dense retrieval over the workspace corpus with QUEST's trained dual encoder (``model``: an encoder
    directory or adapter; default the shipped one, ``weights/quest-dual-encoder``)."""
    from sleuth.pipelines.index_stage import dense_retrieve
    from sleuth.systems.quest.methods import shipped_dual_encoder_dir

    return dense_retrieve(ws, k, encoder=str(model or shipped_dual_encoder_dir()), search=search, name=name)


@register_stage("classify", needs_candidates=True)
def classify_stage(ws: Workspace, *, model: str | None = None, threshold: Any = "tuned", system: str = "bm25",
                   retriever_weight: Any = "tuned", int8: bool = False, name: str = "classify") -> Classify:
    """Relevance classifier over the candidates, optionally voting with the retriever's score
    (``retriever_weight``); keeps the set's members (see the module docstring)."""
    return Classify(classifier_model(ws, model, int8), resolve_threshold(threshold, model, system), name=name,
                    show_progress=ws.show_progress, retriever_weight=resolve_weight(retriever_weight, model, system))


@register_stage("setops", needs_candidates=True)
def setops_stage(ws: Workspace, *, model: str | None = None, threshold: Any = "tuned", system: str = "bm25+setops",
                 t_norm: Annotated[str, OneOf(T_NORMS)] = "min", int8: bool = False, split_and: bool = True,
                 split_modifiers: bool = True, expand: Annotated[str, OneOf(("bm25", "dense"))] | None = None,
                 expand_depth: Count = 10, anchor: bool = True, not_weight: Any = "tuned",
                 retriever_weight: Any = "tuned", constraint_weight: Any = "tuned", set_threshold: Any = "tuned",
                 name: str = "setops") -> SetOperations:
    """Parse the query, classify every candidate against every constraint, combine with fuzzy set operations;
    with ``expand`` ("bm25" or "dense") each positive constraint's own top ``expand_depth`` join the candidates;
    ``anchor`` ANDs the whole query's classifier score in, ``not_weight`` (a number or "tuned") softens the
    subtraction to 1 - w x, ``retriever_weight`` (a number or "tuned", 0 when none was tuned) votes with the
    retriever's score as ``classify`` does, ``constraint_weight`` (a number or "tuned", 1 when none was tuned) is
    the anchored set operation's share of the score, ``set_threshold`` (a number, null: ``threshold``'s, or
    "tuned") the set rule of the queries parsed as intersections or differences. The defaults are the shipped
    ``quest-bm25-setops``'s (``- setops: {}`` is it)."""
    from functools import partial

    from sleuth.systems.quest.methods import retriever
    from sleuth.systems.quest.query_parser import ParserOptions, parse_query

    scorer = Classify(classifier_model(ws, model, int8), None, show_progress=ws.show_progress)
    parser = partial(parse_query, options=ParserOptions(split_and=split_and, split_modifiers=split_modifiers))
    return SetOperations(scorer, parser=parser, t_norm=t_norm, threshold=resolve_threshold(threshold, model, system),
                         expand=retriever(ws, expand, expand_depth) if expand else None,
                         expand_depth=expand_depth if expand else 0, anchor=anchor,
                         not_weight=resolve_weight(not_weight, model, system, "not_weights", 1.0),
                         retriever_weight=resolve_weight(retriever_weight, model, system),
                         constraint_weight=resolve_weight(constraint_weight, model, system, "constraint_weights", 1.0)
                         if anchor else 1.0,
                         set_threshold=resolve_set_threshold(set_threshold, threshold, model, system), name=name)
