"""Evaluation: IR measures, answer accuracy, paired significance tests and side-by-side experiments."""

from sleuth.eval.answers import answer_hits, answer_matcher, has_answer, tokenize, top_k_accuracy, top_k_per_query
from sleuth.eval.experiment import Experiment, ExperimentResult
from sleuth.eval.measures import evaluate, parse_measures, per_query
from sleuth.eval.significance import holm, paired_randomisation, paired_ttest

__all__ = [
    "Experiment", "ExperimentResult",
    "answer_hits", "answer_matcher", "evaluate", "has_answer", "holm", "paired_randomisation", "paired_ttest",
    "parse_measures", "per_query", "tokenize", "top_k_accuracy", "top_k_per_query",
]
