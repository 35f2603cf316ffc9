"""Chain-of-Skills latency: the HotpotQA chain against the retrieval-only chain, one question at a time, on the CPU.

Questions are the first HotpotQA dev (distractor) questions of the shared data; the corpus is the context paragraphs
of all 100 dev questions (about 1,000 passages; with --quick only the timed questions' own paragraphs). Both chains
share one multi-expert model and its skill indexes (built once, not timed). Each question goes through both chains
alternately (the first chain alternates too); per-question wall and CPU seconds give p50 / p90 / mean and the
HotpotQA / retrieval ratio, measured side by side. The HotpotQA chain's time is split per skill (single retrieval,
entity linking incl. span proposal, expanded retrieval, reranking; the rest is merging and path scoring).

Hop limits: by default the reduced "cpu" limits the measured evaluation uses (docs/cos/README.md); --paper-limits
uses the paper's (200 / 5 / 30 / 50 / 2), which reranks ~1,500 question-passage-passage triples per question.

    python -m bench.cos_bench [--quick] [--questions 20] [--model minilm] [--paper-limits]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench.common import Report, ResultTable, base_parser, bench_main, load_average, progress, ratio, time_call
from sleuth.paths import shared_data_dir

NAME = "cos_bench"
QUICK_QUESTIONS = 3
CPU_LIMITS = {"k_retrieval": 10, "k_link": 2, "k_hop1": 3, "k_expanded": 4, "k_hop2_link": 1, "k": 20}
PAPER_LIMITS = {"k_retrieval": 200, "k_link": 5, "k_hop1": 30, "k_expanded": 50, "k_hop2_link": 2, "k": 100}
SKILLS = ("retrieval", "linking", "expanded", "reranking")


class SkillClock:
    """Wall and CPU seconds spent in each skill's entry point, accumulated until :meth:`reset`."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)

    def reset(self) -> None:
        self.wall.clear()
        self.cpu.clear()

    def wrap(self, skill: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.wall[skill] += time.perf_counter() - wall
                self.cpu[skill] += time.process_time() - cpu

        return timed


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else float("nan")


def stats(values: Sequence[float]) -> dict[str, float]:
    return {"p50": percentile(values, 50), "p90": percentile(values, 90),
            "mean": statistics.fmean(values) if values else float("nan")}


def build_chains(model_name: str, passages, limits: dict[str, int], clock: SkillClock):
    """The retrieval-only and HotpotQA chains over one model and one pair of skill indexes, with timed skills."""
    from sleuth.systems.chain_of_skills.chain import ChainLimits, CosChain
    from sleuth.systems.chain_of_skills.model import MultiExpertEncoder
    from sleuth.systems.chain_of_skills.skill_index import SkillIndex
    from sleuth.systems.chain_of_skills.span_head import SpanProposalHead, load_span_head
    from sleuth.systems.chain_of_skills.stages import EntityLink, ExpandedRetrieve, Rerank, SingleRetrieve

    model = (MultiExpertEncoder.from_backbone("minilm") if model_name == "minilm"
             else MultiExpertEncoder.load(model_name))
    head = (load_span_head(model_name, model.dim) if model_name != "minilm" else None) \
        or SpanProposalHead(model.dim, seed=0)
    progress(f"encoding {len(passages)} passages for the retrieval and linking indexes (not timed)")
    index_s, (passage_index, entity_index) = time_call(lambda: (SkillIndex.build(passages, model, "retrieval"),
                                                               SkillIndex.build(passages, model, "linking")))
    retrieve, link = SingleRetrieve(model, passage_index), EntityLink(model, head, entity_index)
    expanded, rerank = ExpandedRetrieve(model, passage_index), Rerank(model)
    retrieve.retrieve = clock.wrap("retrieval", retrieve.retrieve)  # type: ignore[method-assign]
    link.link = clock.wrap("linking", link.link)  # type: ignore[method-assign]
    expanded.retrieve = clock.wrap("expanded", expanded.retrieve)  # type: ignore[method-assign]
    rerank.scores = clock.wrap("reranking", rerank.scores)  # type: ignore[method-assign]
    chain_limits = ChainLimits(**limits)
    chains = {"retrieval": CosChain("retrieval", retrieve, link, limits=chain_limits),
              "hotpotqa": CosChain("hotpotqa", retrieve, link, rerank, expanded, limits=chain_limits)}
    return chains, index_s


def run(args: argparse.Namespace) -> Report:
    from sleuth.corpus.hotpotqa import read_hotpotqa_questions
    from sleuth.corpus.jsonfile import iter_json_records
    from sleuth.corpus.model import Passage, Query

    count = args.questions or (QUICK_QUESTIONS if args.quick else 20)
    limits = PAPER_LIMITS if args.paper_limits else CPU_LIMITS
    path = shared_data_dir() / "hotpotqa" / "hotpot_dev_distractor_100.json"
    questions = [q for q in read_hotpotqa_questions(path) if q.metadata.get("supporting_titles")][:count]
    wanted = {q.id for q in questions}
    seen, passages = set(), []
    for _, record in iter_json_records(path):
        if args.quick and record.get("_id") not in wanted:
            continue
        for title, sentences in record.get("context", []):
            if title not in seen:
                seen.add(title)
                passages.append(Passage(id=title, doc_id=title, text="".join(sentences).strip(), title_path=(title,)))
    clock = SkillClock()
    chains, index_s = build_chains(args.model, passages, limits, clock)
    load_start = load_average()
    wall: dict[str, list[float]] = {name: [] for name in chains}
    cpu: dict[str, list[float]] = {name: [] for name in chains}
    skill_wall: dict[str, list[float]] = {s: [] for s in SKILLS}
    skill_cpu: dict[str, list[float]] = {s: [] for s in SKILLS}
    paths = []
    chains["retrieval"].transform([Query(id="warm-up", text=questions[0].text)])  # imports, lazy initialisation
    progress(f"timing {len(questions)} questions one at a time through both chains")
    for number, question in enumerate(questions):
        order = list(chains) if number % 2 == 0 else list(reversed(chains))
        for name in order:
            clock.reset()
            w, c = time.perf_counter(), time.process_time()
            run_ = chains[name].transform([Query(id=question.id, text=question.text)])
            wall[name].append(time.perf_counter() - w)
            cpu[name].append(time.process_time() - c)
            if name == "hotpotqa":
                paths.append(len(run_.get(question.id, [])))
                for skill in SKILLS:
                    skill_wall[skill].append(clock.wall.get(skill, 0.0))
                    skill_cpu[skill].append(clock.cpu.get(skill, 0.0))
    load_end = load_average()
    latency = ResultTable(f"Per-question latency, {len(questions)} HotpotQA dev questions, {len(passages):,} passages, "
                          f"model {args.model}, {'paper' if args.paper_limits else 'cpu'} limits",
                          ["chain", "wall p50 s", "wall p90 s", "wall mean s", "CPU p50 s", "CPU p90 s", "CPU mean s",
                           "mean wall vs retrieval"])
    summary = {}
    for name in chains:
        w, c = stats(wall[name]), stats(cpu[name])
        summary[name] = {"wall_s": w, "cpu_s": c, "wall_runs_s": wall[name], "cpu_runs_s": cpu[name]}
        latency.add(name, w["p50"], w["p90"], w["mean"], c["p50"], c["p90"], c["mean"],
                    ratio(w["mean"], statistics.fmean(wall["retrieval"])))
    breakdown = ResultTable("HotpotQA chain: time per skill per question (mean)",
                            ["skill", "wall s", "CPU s", "share of chain wall"])
    total = statistics.fmean(wall["hotpotqa"])
    skills = {}
    for skill in SKILLS:
        mean_wall, mean_cpu = statistics.fmean(skill_wall[skill]), statistics.fmean(skill_cpu[skill])
        skills[skill] = {"wall_s": mean_wall, "cpu_s": mean_cpu}
        breakdown.add(skill, mean_wall, mean_cpu, ratio(mean_wall, total))
    rest = total - sum(s["wall_s"] for s in skills.values())
    breakdown.add("other (merging, path scores)", rest, float("nan"), ratio(rest, total))
    data = {"questions": len(questions), "passages": len(passages), "model": args.model, "limits": limits,
            "index_build_s": index_s, "chains": summary, "hotpotqa_skills": skills,
            "hotpotqa_over_retrieval_mean_wall": ratio(total, statistics.fmean(wall["retrieval"])),
            "hotpotqa_over_retrieval_mean_cpu": ratio(statistics.fmean(cpu["hotpotqa"]),
                                                      statistics.fmean(cpu["retrieval"])),
            "paths_per_question": statistics.fmean(paths), "loadavg_start": load_start, "loadavg_end": load_end}
    notes = [f"hop limits {limits}; the retrieval chain is hop 1 only (single retrieval + question links, aligned "
             "and promoted), the HotpotQA chain adds hop-1 reranking, expanded retrieval, passage links and hop-2 "
             "reranking",
             "CPU s = time.process_time of this process (all its threads), robust to other processes' load; "
             f"load average at start {load_start}, at end {load_end} (2-core machine shared with other jobs)",
             "linking includes span proposal (the span expert's token states) and both question and passage links",
             f"skill indexes built once before timing: {index_s:.0f} s wall"]
    return Report(tables=[latency, breakdown], data=data, notes=notes)


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=0,
                        help=f"how many dev questions (default 20; --quick: {QUICK_QUESTIONS})")
    parser.add_argument("--model", default="minilm", help="'minilm' (untrained experts) or a saved model directory")
    parser.add_argument("--paper-limits", action="store_true", help="the paper's hop limits 200/5/30/50/2")
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    return bench_main(NAME, build_parser(), run, argv)


if __name__ == "__main__":
    main()
