"""Config builders of the QUEST stages: classify (relevance classifier) and setops (set-operation-aware scoring).

A threshold may be a number, null (keep and rank every candidate) or "tuned": the value that ``sleuth train
classifier`` chose for ``system`` (e.g. "bm25", "dense+setops") and wrote to the model's training.json.
"""

from __future__ import annotations

from typing import Any

from sleuth.errors import ConfigError
from sleuth.pipelines.registry import register_stage
from sleuth.pipelines.workspace import Workspace
from sleuth.systems.quest.classify import Classify
from sleuth.systems.quest.set_ops import SetOperations


def classifier_model(ws: Workspace, model: str | None, int8: bool):
    """The workspace's classifier (loaded once per model path and precision)."""
    from sleuth.models.cross_encoder import CrossEncoderClassifier
    from sleuth.systems.quest.methods import default_classifier_dir

    path = str(model or default_classifier_dir())
    return ws.memo(f"classifier:{path}:{int8}", lambda: CrossEncoderClassifier(path, device=ws.device, int8=int8))


def resolve_threshold(threshold: Any, model: str | None, system: str) -> float | None:
    """A number, None, or the tuned threshold of ``system`` recorded with the model."""
    if threshold != "tuned":
        return None if threshold is None else float(threshold)
    from sleuth.systems.quest.classifier_training import read_training_record
    from sleuth.systems.quest.methods import default_classifier_dir

    tuned = read_training_record(model or default_classifier_dir()).get("thresholds", {})
    if system not in tuned:
        raise ConfigError(f"no tuned threshold for '{system}' in {model or default_classifier_dir()}/training.json "
                          f"(tuned: {', '.join(tuned) or 'none'}); give a number")
    return float(tuned[system])


@register_stage("classify")
def classify_stage(ws: Workspace, *, model: str | None = None, threshold: Any = "tuned", system: str = "bm25",
                   int8: bool = False, name: str = "classify") -> Classify:
    """Relevance classifier over the candidates; keeps those above ``threshold`` (see the module docstring)."""
    return Classify(classifier_model(ws, model, int8), resolve_threshold(threshold, model, system), name=name,
                    show_progress=ws.show_progress)


@register_stage("setops")
def setops_stage(ws: Workspace, *, model: str | None = None, threshold: Any = "tuned", system: str = "bm25+setops",
                 t_norm: str = "min", int8: bool = False, split_and: bool = True, split_modifiers: bool = True,
                 name: str = "setops") -> SetOperations:
    """Parse the query, classify every candidate against every constraint, combine with fuzzy set operations."""
    from functools import partial

    from sleuth.systems.quest.query_parser import ParserOptions, parse_query

    scorer = Classify(classifier_model(ws, model, int8), None, show_progress=ws.show_progress)
    parser = partial(parse_query, options=ParserOptions(split_and=split_and, split_modifiers=split_modifiers))
    return SetOperations(scorer, parser=parser, t_norm=t_norm, threshold=resolve_threshold(threshold, model, system),
                         name=name)
