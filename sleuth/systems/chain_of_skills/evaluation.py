"""Chain-of-Skills evaluation on HotpotQA dev questions: path recall@k and passage EM per chain (Ma et al., ACL 2023, Table 2).

Questions come from one or several HotpotQA-format files (2WikiMultihopQA dev too), optionally one part of the
fixed tuning / report split (``sleuth.corpus.question_split``). The corpus is the evaluated questions' own context
paragraphs, or one pooled corpus with distractors (``eval_corpus``; id = title); the gold path is a question's
supporting titles. A ``hotpotqa`` chain hit is a path "id1||id2"; a ``retrieval`` chain ranks single
passages, so its top-k "path" is the set of its top k passages (recall@k: both gold passages among them) and its
top path for EM is its first two passages.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sleuth.corpus.hotpotqa import read_hotpotqa_questions
from sleuth.corpus.model import Query
from sleuth.errors import ConfigError, InputError
from sleuth.systems.chain_of_skills.chain import PATH_SEPARATOR, ChainLimits
from sleuth.systems.chain_of_skills.eval_corpus import CORPUS_SETTINGS, eval_passages, eval_skill_indexes
from sleuth.systems.chain_of_skills.path_metrics import mean, passage_em, path_recall_at_k

EVAL_CHAINS = ("hotpotqa", "retrieval", "retrieval-2hop")
EVAL_KS = (1, 5, 10, 20)
#: hop limits of ``sleuth cos eval`` by name: "reduced" (the default: 20x fewer hop-1 candidates than the paper, what
#: a CPU evaluates 100 questions with in minutes) and "paper" (Ma et al., ACL 2023, Appendix A: 200 / 5 / 30 / 50 / 2)
LIMIT_SETS = {
    "reduced": {"k_retrieval": 10, "k_link": 2, "k_hop1": 3, "k_expanded": 4, "k_hop2_link": 1},
    "paper": {"k_retrieval": 200, "k_link": 5, "k_hop1": 30, "k_expanded": 50, "k_hop2_link": 2},
}


@dataclass
class ChainScores:
    """One chain's means over the questions and, by question id, its outcomes ``[recall@k for each k..., EM]``
    (each 0 or 1: what ``sleuth cos compare`` tests pairwise)."""

    chain: str
    questions: int
    recall: dict[int, float]
    em: float
    seconds: float
    outcomes: dict[str, list[int]] = field(default_factory=dict)

    def row(self, per_question: bool = False) -> dict:
        """The record's row; ``per_question`` adds the outcomes under ``per_question``."""
        return {"chain": self.chain, "questions": self.questions,
                **{f"path_recall@{k}": round(v, 4) for k, v in self.recall.items()},
                "passage_em": round(self.em, 4), "seconds": round(self.seconds, 1),
                **({"per_question": self.outcomes} if per_question else {})}


def ranked_paths(chain: str, hits, ks: Sequence[int]) -> tuple[dict[int, list[set[str]]], set[str] | None]:
    """Per k the paths recall@k looks at, and the top path for EM."""
    if chain != "retrieval":  # chains of evidence paths
        paths = [set(h.id.split(PATH_SEPARATOR)) for h in hits]
        return {k: paths for k in ks}, (paths[0] if paths else None)
    ids = [h.id for h in hits]
    return {k: [set(ids[:k])] for k in ks}, (set(ids[:2]) if ids else None)


def eval_questions(paths: Sequence[str | Path], part: str = "all", limit: int | None = None) -> list[Query]:
    """The questions with supporting facts of ``paths`` (an id seen in an earlier file is skipped), those of ``part``
    (all, tune, report: ``question_part``), the first ``limit`` of them. An InputError names ``file[record]`` of an
    id repeated within one file, and of a question whose gold can never be retrieved: no context paragraphs, or a
    supporting title none of them has (no HotpotQA or 2WikiMultihopQA dev or train question has either)."""
    from sleuth.corpus.question_split import question_part

    unique: dict[str, Query] = {}
    for path in paths:
        first: dict[str, int] = {}
        for index, query in enumerate(read_hotpotqa_questions(path)):
            where = f"{path}[{index}]"
            if query.id in first:
                raise InputError(f"question id '{query.id}' appears twice in the file (first at [{first[query.id]}])",
                                 path=where, field="_id")
            first[query.id] = index
            gold = query.metadata.get("supporting_titles")
            if gold:
                context = query.metadata.get("context_titles")
                if not context:
                    raise InputError("no paragraphs: the question's gold cannot be retrieved", path=where,
                                     field="context")
                missing = [title for title in gold if title not in context]
                if missing:
                    raise InputError(f"supporting title {missing[0]!r} is not among the context paragraphs' titles",
                                     path=where, field="supporting_facts")
                unique.setdefault(query.id, query)
    questions = question_part(list(unique.values()), part)
    questions = questions[:limit] if limit else questions
    if not questions:
        raise ConfigError(f"{', '.join(map(str, paths))}: no questions with supporting facts"
                          f"{'' if part == 'all' else f' in the {part} part'}")
    return questions


def evaluate_chains(model_dir: str | None, questions_path: str | Path | Sequence[str | Path],
                    chains: Sequence[str] = EVAL_CHAINS, limit: int | None = None,
                    limits: ChainLimits = ChainLimits(), ks: Sequence[int] = EVAL_KS, device: str = "cpu",
                    span_seed: int = 0, int8: bool = False, runs: dict | None = None, show_progress: bool = False,
                    part: str = "all", corpus: str = "questions", distractors: Sequence[str | Path] = (),
                    stats: dict | None = None, ablate: Sequence[str] = (),
                    shard: tuple[int, int] | None = None, hop2_ensemble: Sequence[str] = ()) -> list[ChainScores]:
    """Scores of each chain over the first ``limit`` questions with supporting facts of ``part`` (``model_dir``:
    None for the shipped model, "minilm" for untrained experts, or a saved multi-expert model directory); ``corpus``:
    "questions" or "pooled" with ``distractors`` (:mod:`eval_corpus`); ``int8``: the chains' encoder quantised
    (``quantise``), the skill indexes still encoded in float32. With ``runs`` (a dict) each chain's Run is also left
    there by chain name (for path-level analysis); with ``stats`` (a dict) the corpus size ("passages");
    ``ablate``: skills the hotpotqa chain runs without (``chain.ABLATIONS``); ``shard`` = (i, n): only every n-th of
    those questions from the i-th is evaluated, over the same corpus (:func:`merge_shards` joins the shards);
    ``hop2_ensemble``: model directories whose rerankers the hotpotqa chain's hop 2 averages with the model's.
    ``show_progress``: a bar per chain (questions done, questions/s, time left; :mod:`sleuth.progress`)."""
    from sleuth.stages.base import transform_counted
    from sleuth.systems.chain_of_skills.chain import EXPANDING, NO_RERANK, CosChain
    from sleuth.systems.chain_of_skills.model import load_model, model_path
    from sleuth.systems.chain_of_skills.span_head import model_span_head
    from sleuth.systems.chain_of_skills.stages import EntityLink, ExpandedRetrieve, Rerank, SingleRetrieve

    for chain in chains:
        if chain not in EVAL_CHAINS:
            raise ConfigError(f"unknown chain '{chain}': use one of {', '.join(EVAL_CHAINS)}")
    if corpus not in CORPUS_SETTINGS:
        raise ConfigError(f"unknown corpus '{corpus}': use one of {', '.join(CORPUS_SETTINGS)}")
    if distractors and corpus != "pooled":
        raise ConfigError("distractors need the pooled corpus")
    paths = [questions_path] if isinstance(questions_path, (str, Path)) else list(questions_path)
    questions = eval_questions(paths, part, limit)
    passages = eval_passages(corpus, paths, {q.id for q in questions}, distractors)
    if stats is not None:
        stats["passages"] = len(passages)
    if shard is not None:
        questions = questions[shard[0]::shard[1]]
        if not questions:
            raise ConfigError(f"shard {shard[0]}/{shard[1]} holds no question")

    path = model_path(model_dir)
    model = load_model(path, device=device).for_inference()
    head = model_span_head(path, model.dim, device, span_seed)
    retrieval_index, link_index = eval_skill_indexes(passages, model, path, True, show_progress)
    members = [load_model(model_path(other), device=device).for_inference() for other in hop2_ensemble]
    if int8:
        from sleuth.systems.chain_of_skills.quantise import quantise

        model, members = quantise(model), [quantise(member) for member in members]
    link = EntityLink(model, head, link_index)
    ensemble = [Rerank(member) for member in members]
    results = []
    for chain in chains:
        stage = CosChain(chain, SingleRetrieve(model, retrieval_index), link,
                         rerank=Rerank(model) if chain not in NO_RERANK else None,
                         expanded=ExpandedRetrieve(model, retrieval_index) if chain in EXPANDING else None,
                         limits=limits, ablate=ablate if chain == "hotpotqa" else (),
                         hop2_ensemble=ensemble if chain == "hotpotqa" else ())
        start = time.perf_counter()
        run = transform_counted(stage, [Query(id=q.id, text=q.text) for q in questions], f"chain {chain}",
                                show_progress, chunk=1, unit="questions")
        if runs is not None:
            runs[chain] = run
        recall: dict[int, list[float]] = {k: [] for k in ks}
        ems = []
        outcomes = {}
        for q in questions:
            gold = q.metadata["supporting_titles"]
            per_k, top = ranked_paths(chain, run.get(q.id, []), ks)
            for k in ks:
                recall[k].append(path_recall_at_k(per_k[k], gold, k))
            ems.append(passage_em(top, gold))
            outcomes[q.id] = [int(recall[k][-1]) for k in ks] + [int(ems[-1])]
        results.append(ChainScores(chain, len(questions), {k: mean(v) for k, v in recall.items()}, mean(ems),
                                   time.perf_counter() - start, outcomes))
    return results


def parse_shard(text: str, what: str = "--shard") -> tuple[int, int]:
    """"i/n" (0 <= i < n) as (i, n); ``what`` names the option or field in the error."""
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not match or not int(match[1]) < int(match[2]):
        raise ConfigError(f"{what} must be i/n with 0 <= i < n (e.g. 0/4), got '{text}'")
    return int(match[1]), int(match[2])


def row_measures(row: dict[str, Any]) -> list[str]:
    """The measures of a record's row, in the order of its per-question outcomes."""
    return [key for key in row if key.startswith("path_recall@")] + ["passage_em"]


def check_record(record: Any, where: str | Path, shard: bool = False) -> dict[str, Any]:
    """A `sleuth cos eval --json` record (``shard``: of one ``--shard i/n``) checked as it is read: a non-empty list
    of rows, each with its chain, question count, numeric measures and seconds, and (``--per-question``) one outcome
    0 or 1 per measure for each of its questions; else a one-line error naming the file and the field."""
    keys = ("model", "corpus", "shard", "rows") if shard else ("rows",)
    missing = [key for key in keys if key not in record] if isinstance(record, dict) else ["rows"]
    if missing:
        raise ConfigError(f"{where}: not a `sleuth cos eval {'--shard i/n ' if shard else ''}--json` record "
                          f"(no '{missing[0]}')")
    if shard:
        parse_shard(str(record["shard"]), f"{where}: field 'shard'")
        if not (isinstance(record["corpus"], dict) and "passages" in record["corpus"]):
            raise InputError("expected an object with the corpus's 'passages'", path=where, field="corpus")
    rows = record["rows"]
    if not (isinstance(rows, list) and rows and all(isinstance(row, dict) for row in rows)):
        raise InputError("expected a non-empty list of chain rows (objects)", path=where, field="rows")
    for index, row in enumerate(rows):
        for key in ("chain", "questions", "passage_em", "seconds"):
            if key not in row:
                raise InputError("missing", path=where, field=f"rows[{index}].{key}")
        if not isinstance(row["chain"], str):
            raise InputError(f"expected a chain name, found {row['chain']!r}", path=where, field=f"rows[{index}].chain")
        for key, value in row.items():
            if key in ("chain", "per_question"):
                continue
            if key == "questions":
                valid = isinstance(value, int) and not isinstance(value, bool) and value >= 1
            else:
                valid = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            if not valid:
                raise InputError(f"expected a {'count >= 1' if key == 'questions' else 'number'}, found {value!r}",
                                 path=where, field=f"rows[{index}].{key}")
        if "per_question" in row:
            check_outcomes(row, where, f"rows[{index}].per_question")
    return record


def check_outcomes(row: dict[str, Any], where: str | Path, field: str) -> None:
    """A row's per-question outcomes: one list of 0 / 1 per question of the row, one value per measure."""
    outcomes, measures = row["per_question"], row_measures(row)
    if not isinstance(outcomes, dict) or len(outcomes) != row["questions"]:
        raise InputError(f"expected the outcomes of the row's {row['questions']} questions by id, found "
                         f"{len(outcomes) if isinstance(outcomes, dict) else type(outcomes).__name__}", path=where,
                         field=field)
    for qid, values in outcomes.items():
        if not (isinstance(values, list) and len(values) == len(measures) and all(v in (0, 1) for v in values)):
            raise InputError(f"question '{qid}': expected {len(measures)} outcomes 0 or 1 ({', '.join(measures)}), "
                             f"found {values!r}", path=where, field=field)


def merge_shards(records: Sequence[dict], names: Sequence[str | Path] = ()) -> dict:
    """``sleuth cos eval --shard i/n --json`` records of one evaluation merged into the record of the whole: the
    same settings (all but ``shard`` and the rows; ``limit`` too, in records that have it) and chains, shards
    0..n-1 each once holding the question counts of one run's shards; per chain the questions summed, each measure
    their question-weighted mean (exact up to the records' four decimals), the seconds summed, the per-question
    outcomes (``--per-question``) joined when every shard has them. ``names``: the records' files, for errors
    (:func:`check_record` has checked each)."""
    if not records:
        raise ConfigError("no shard records to merge")
    names = list(names) or [f"shard record {index + 1}" for index in range(len(records))]
    settings = [{k: v for k, v in r.items() if k not in ("shard", "rows")} for r in records]
    for index, other in enumerate(settings[1:], 1):
        differing = sorted(k for k in {*settings[0], *other} if settings[0].get(k) != other.get(k))
        if differing:
            raise ConfigError(f"shard record {index + 1} differs from the first in '{differing[0]}' ({names[index]}: "
                              f"{other.get(differing[0])!r}, {names[0]}: {settings[0].get(differing[0])!r})")
    chains = [[(row["chain"], *row_measures(row)) for row in r["rows"]] for r in records]
    for index, other_chains in enumerate(chains[1:], 1):
        if other_chains != chains[0]:
            raise ConfigError(f"{names[index]} and {names[0]} list different chains or measures "
                              f"({', '.join(c[0] for c in other_chains)}; {', '.join(c[0] for c in chains[0])}): "
                              "not shards of one run")
    ordered = sorted(zip(records, names), key=lambda pair: parse_shard(pair[0]["shard"]))
    shards = [parse_shard(record["shard"]) for record, _ in ordered]
    count = shards[0][1]
    if shards != [(i, count) for i in range(count)]:
        raise ConfigError(f"shards {', '.join(f'{i}/{n}' for i, n in shards)} are not 0/{count}..{count - 1}/{count} "
                          "each once")
    held = [record["rows"][0]["questions"] for record, _ in ordered]  # shard i of N questions holds range(i, N, n)
    if any(row["questions"] != len(range(i, sum(held), count)) for i, (record, _) in enumerate(ordered)
           for row in record["rows"]):
        raise ConfigError(f"{', '.join(str(name) for _, name in ordered)} hold {', '.join(map(str, held))} questions: "
                          "not the shards of one run (of another --max-queries, --part or --questions?)")
    rows = []
    for chain_rows in zip(*(r["rows"] for r in records)):
        total = sum(row["questions"] for row in chain_rows)
        merged = {"chain": chain_rows[0]["chain"], "questions": total}
        for key in chain_rows[0]:
            if key not in merged and key not in ("seconds", "per_question"):
                merged[key] = round(sum(row[key] * row["questions"] for row in chain_rows) / total, 4)
        merged["seconds"] = round(sum(row["seconds"] for row in chain_rows), 1)
        if all("per_question" in row for row in chain_rows):  # the shards' outcomes, question by question
            merged["per_question"] = {qid: v for row in chain_rows for qid, v in row["per_question"].items()}
        rows.append(merged)
    return {**settings[0], "shards": count, "rows": rows}


@dataclass
class SpanScores:
    """Proposed spans against gold mention spans: exact-match precision / recall / F1, recall with any character
    overlap, and spans proposed per text."""

    texts: int
    precision: float
    recall: float
    f1: float
    overlap_recall: float
    spans_per_text: float

    def row(self) -> dict:
        return {"texts": self.texts, **{k: round(v, 4) for k, v in vars(self).items() if k != "texts"}}


def span_quality(model, head, examples: Sequence[tuple[str, Sequence[tuple[int, int]]]]) -> SpanScores:
    """How well ``head`` (over ``model``'s span expert) proposes the gold spans of ``examples`` ((text, [(start,
    end) character spans]); e.g. a question's mentions of its supporting titles, or a passage's anchors)."""
    texts = [text for text, _ in examples]
    states = model.token_states(texts, "span", side="query") if texts else []
    proposed = gold_total = exact = overlapped = 0
    for (text, gold), tokens in zip(examples, states):
        spans = [(s.char_start, s.char_end) for s in head.propose(tokens, text)]
        proposed += len(spans)
        gold_total += len(gold)
        exact += len(set(spans) & set(map(tuple, gold)))
        overlapped += sum(any(a < e and s < b for s, e in spans) for a, b in gold)
    precision = exact / proposed if proposed else 0.0
    recall = exact / gold_total if gold_total else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return SpanScores(len(texts), precision, recall, f1, overlapped / gold_total if gold_total else 0.0,
                      proposed / len(texts) if texts else 0.0)


def question_spans(questions: Sequence[Query]) -> list[tuple[str, list[tuple[int, int]]]]:
    """HotpotQA questions (``eval_questions``) with their gold mention spans: the supporting titles they name (as
    the training data's span examples; questions naming none are left out)."""
    from sleuth.systems.chain_of_skills.training_data import mention_span

    out = []
    for query in questions:
        spans = sorted({s for t in query.metadata.get("supporting_titles", []) if (s := mention_span(t, query.text))})
        if spans:
            out.append((query.text, spans))
    return out
