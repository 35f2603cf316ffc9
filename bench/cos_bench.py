"""Chain-of-Skills latency before and after the chain speed-ups, one question at a time, on the CPU.

Questions are the first HotpotQA dev (distractor) questions of the shared data; the corpus is the context paragraphs
of all 100 dev questions (1,000 passages; with --quick only the timed questions' own paragraphs), as ``sleuth cos
eval`` builds it. Every variant shares one multi-expert model's weights and one pair of skill indexes (encoded once
in float32, not timed). A variant is code, precision and torch threads:

* ``before``: ``stages.py`` and ``chain.py`` as of revision ``--before-rev`` (read with ``git show``): per-call
  batches of 32 by character length, the expanded queries encoded again after the hop-1 reranking, both linking
  passes over every text;
* ``after``: this tree (token-length buckets across a whole hop, the hop-1 reranking pass reused as the expanded
  queries, the linking pass only over texts with a proposed mention), the hotpotqa chain fused with two rounds of
  retrieval as shipped; ``unfused``: this tree without that fusion (the paper's order);
* ``fp32`` or ``int8`` (``sleuth.systems.chain_of_skills.quantise``), LoRA deltas merged into per-expert layers as
  sleuth's inference models have them; ``fp32-lora`` / ``int8-lora``: the deltas kept as float32 products beside
  the (quantised) frozen layer, as before 2026-11-25; ``@1`` / ``@2`` torch threads;
* ``/N``: the hop-2 reranking budget ``k_hop2_rerank`` (not in the paper; changes the ranking);
* ``~F``: the bucketing's ``MIN_FILL`` (a batch closes before a text under F x its longest; 0 = by the token
  budget only, as before 2026-11-25; default: the module's value).

Each question goes through every variant and chain in an order rotated per question, so machine noise (a shared
2-core machine) hits all alike; per-question wall and CPU seconds give p50 / p90 / mean and ratios against the
first variant. The HotpotQA chain's time is split per skill; the work per question (encoder sequences, padded and
real tokens, spans proposed) and the agreement of each variant's top-20 paths with the first variant's are
reported too. Hop limits: the reduced "cpu" limits of docs/cos (10 / 2 / 3 / 4 / 1) and the paper's
(200 / 5 / 30 / 50 / 2), each with its own question count.

    python -m bench.cos_bench [--quick] [--questions 20] [--paper-questions 1] [--model default|minilm|DIR]
        [--variant before:fp32@2 --variant after:int8@2 ...] [--limits cpu --limits paper]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import types
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.common import REPO, Report, ResultTable, base_parser, bench_main, load_average, progress, ratio, time_call
from sleuth.paths import shared_data_dir
from sleuth.systems.chain_of_skills.evaluation import LIMIT_SETS

NAME = "cos_bench"
QUICK_QUESTIONS = 2
BEFORE_REV = "5bd12d9"  # main before the chain speed-ups (issue 13 item 4)
LIMITS = {"cpu": {**LIMIT_SETS["reduced"], "k": 20}, "paper": {**LIMIT_SETS["paper"], "k": 100}}
DEFAULT_VARIANTS = {"cpu": ["before:fp32@2", "before:fp32@1", "after:fp32@1", "after:int8@1", "after:int8@2"],
                    "paper": ["before:fp32@1", "after:int8@1", "after:int8@1/300", "after:int8@1/100"]}
CHAINS = ("hotpotqa", "retrieval", "retrieval-2hop")
PRECISIONS = ("fp32", "int8", "fp32-lora", "int8-lora")
SKILLS = ("retrieval", "linking", "expanded", "reranking")
TOP = 20


CODES = ("before", "after", "unfused")


@dataclass(frozen=True)
class Variant:
    """``code:precision@threads[/budget][~fill]``, e.g. ``after:int8@1/300`` or ``after:int8-lora@2/30~0``."""

    code: str
    precision: str
    threads: int
    budget: int | None = None
    fill: float | None = None

    @classmethod
    def parse(cls, spec: str) -> Variant:
        try:
            head, _, fill = spec.partition("~")
            code, rest = head.split(":")
            precision, rest = rest.split("@")
            threads, _, budget = rest.partition("/")
            variant = cls(code, precision, int(threads), int(budget) if budget else None,
                          float(fill) if fill else None)
        except ValueError:
            raise SystemExit(f"bad variant {spec!r}: use code:precision@threads[/budget][~fill], "
                             "e.g. after:int8@2 or after:int8@1/300~0") from None
        if code not in CODES or precision not in PRECISIONS or variant.threads < 1:
            raise SystemExit(f"bad variant {spec!r}: code {'|'.join(CODES)}, precision {'|'.join(PRECISIONS)}, "
                             "threads >= 1")
        if code == "before" and variant.budget is not None:
            raise SystemExit(f"bad variant {spec!r}: the before code has no hop-2 reranking budget")
        return variant

    def __str__(self) -> str:
        return (f"{self.code}:{self.precision}@{self.threads}" + (f"/{self.budget}" if self.budget else "")
                + (f"~{self.fill:g}" if self.fill is not None else ""))


class Meter:
    """Per-question counters: wall and CPU seconds per skill (outermost call only), encoder sequences and tokens,
    proposed spans."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        self.depth: dict[str, int] = defaultdict(int)

    def reset(self) -> None:
        for values in (self.wall, self.cpu, self.counts):
            values.clear()

    def timed(self, skill: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.depth[skill] += 1
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.depth[skill] -= 1
                if not self.depth[skill]:
                    self.wall[skill] += time.perf_counter() - wall
                    self.cpu[skill] += time.process_time() - cpu

        return wrapper

    def counting_forward(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def forward(input_ids: Any, attention_mask: Any, *args: Any, **kwargs: Any) -> Any:
            self.counts["sequences"] += int(input_ids.shape[0])
            self.counts["padded_tokens"] += int(input_ids.numel())
            self.counts["tokens"] += int(attention_mask.sum())
            return fn(input_ids, attention_mask, *args, **kwargs)

        return forward

    def counting_spans(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def propose(*args: Any, **kwargs: Any) -> Any:
            spans = fn(*args, **kwargs)
            self.counts["spans"] += len(spans)
            self.counts["span_texts"] += 1
            return spans

        return propose


def before_modules(rev: str) -> tuple[types.ModuleType, types.ModuleType]:
    """``stages.py`` and ``chain.py`` as of ``rev``, imported as private modules (the chain's import of the stages
    points at the old stages)."""
    modules = []
    for name in ("stages", "chain"):
        path = f"sleuth/systems/chain_of_skills/{name}.py"
        try:
            source = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=REPO, capture_output=True, text=True,
                                    check=True).stdout
        except (OSError, subprocess.CalledProcessError) as error:
            raise SystemExit(f"cannot read {path} at {rev} with git ({error}); pass --before-rev") from None
        source = source.replace("from sleuth.systems.chain_of_skills.stages import", "from _cos_before_stages import")
        module = types.ModuleType(f"_cos_before_{name}")
        module.__file__ = f"{rev}:{path}"
        sys.modules[module.__name__] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        modules.append(module)
    return modules[0], modules[1]


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else float("nan")


def stats(values: Sequence[float]) -> dict[str, float]:
    return {"p50": percentile(values, 50), "p90": percentile(values, 90),
            "mean": statistics.fmean(values) if values else float("nan")}


def load_data(count: int, quick: bool):
    from sleuth.corpus.hotpotqa import read_hotpotqa_questions
    from sleuth.corpus.jsonfile import iter_json_records
    from sleuth.corpus.model import Passage

    path = shared_data_dir() / "hotpotqa" / "hotpot_dev_distractor_100.json"
    questions = [q for q in read_hotpotqa_questions(path) if q.metadata.get("supporting_titles")][:count]
    wanted = {q.id for q in questions}
    seen, passages = set(), []
    for _, record in iter_json_records(path):
        if quick and record.get("_id") not in wanted:
            continue
        for title, sentences in record.get("context", []):
            if title not in seen:
                seen.add(title)
                passages.append(Passage(id=title, doc_id=title, text="".join(sentences).strip(), title_path=(title,)))
    return questions, passages


class Contenders:
    """The model, its int8 copy, the skill indexes and the span head, shared by every variant's chains."""

    def __init__(self, model_name: str, passages, before_rev: str, meter: Meter):
        import torch

        from sleuth.systems.chain_of_skills.eval_corpus import eval_skill_indexes
        from sleuth.systems.chain_of_skills.model import load_model, model_path
        from sleuth.systems.chain_of_skills.quantise import quantise
        from sleuth.systems.chain_of_skills.span_head import model_span_head

        path = model_path(None if model_name == "default" else model_name)
        model = load_model(path)
        head = model_span_head(path, model.dim)
        progress(f"encoding {len(passages)} passages for the retrieval and linking indexes (not timed, 1 thread)")
        torch.set_num_threads(1)  # the faster setting on the shared 2-core machine (see the variants @1 / @2)
        self.index_s, (self.passages, self.entities) = time_call(
            lambda: eval_skill_indexes(passages, model, path, cache=False))
        self.models = {"fp32": model.for_inference(), "int8": quantise(model), "fp32-lora": model,
                       "int8-lora": quantise(model, merge=False)}
        for encoder in self.models.values():
            encoder.forward = meter.counting_forward(encoder.forward)
        head.propose = meter.counting_spans(head.propose)  # type: ignore[method-assign]  # the before code's path
        from sleuth.systems.chain_of_skills import span_proposal  # the after code's path (imported per call)

        span_proposal.propose_spans = meter.counting_spans(span_proposal.propose_spans)
        self.head, self.meter, self.before_rev = head, meter, before_rev
        self.before: tuple[types.ModuleType, types.ModuleType] | None = None

    def chain(self, variant: Variant, chain: str, limits: dict[str, int]):
        """The chain of ``variant`` with its skills timed by the meter."""
        if variant.code == "before":
            self.before = self.before or before_modules(self.before_rev)
            stages, chains = self.before
            chain_limits = chains.ChainLimits(**limits)
        else:
            from sleuth.systems.chain_of_skills import chain as chains
            from sleuth.systems.chain_of_skills import stages

            chain_limits = chains.ChainLimits(**limits, k_hop2_rerank=variant.budget)
        model, meter = self.models[variant.precision], self.meter
        retrieve, link = stages.SingleRetrieve(model, self.passages), stages.EntityLink(model, self.head, self.entities)
        expanded, rerank = stages.ExpandedRetrieve(model, self.passages), stages.Rerank(model)
        for stage, methods, skill in ((retrieve, ("retrieve",), "retrieval"), (link, ("link",), "linking"),
                                      (expanded, ("retrieve", "from_vectors", "vectors"), "expanded"),
                                      (rerank, ("scores", "score_pairs"), "reranking")):
            for method in methods:
                if hasattr(stage, method):
                    setattr(stage, method, meter.timed(skill, getattr(stage, method)))
        unfused = {"fusion": None} if variant.code == "unfused" else {}  # the before code has no fusion argument
        return chains.CosChain(chain, retrieve, link, rerank, expanded, limits=chain_limits, **unfused)


def path_sets(chain: str, hits) -> list[frozenset[str]]:
    if chain == "retrieval":
        return [frozenset([h.id]) for h in hits]
    return [frozenset(h.id.split("||")) for h in hits]


def time_limits(label: str, questions, contenders: Contenders, variants: list[Variant], chains: Sequence[str],
                meter: Meter) -> dict[str, Any]:
    """Every question through every (variant, chain), order rotated per question."""
    import torch

    from sleuth.corpus.model import Query
    from sleuth.systems.chain_of_skills import bucketing
    from sleuth.systems.chain_of_skills.path_metrics import passage_em, path_recall_at_k

    limits = LIMITS[label]
    default_fill = bucketing.MIN_FILL
    runs = {(v, c): contenders.chain(v, c, limits) for v in variants for c in chains}
    keys = list(runs)
    torch.set_num_threads(variants[0].threads)
    warm = contenders.chain(variants[0], "retrieval", LIMITS["cpu"])  # imports, lazy initialisation: cheap limits
    warm.transform([Query(id="warm-up", text=questions[0].text)])
    record: dict[tuple[Variant, str], dict[str, list]] = {k: defaultdict(list) for k in keys}
    progress(f"{label} limits: timing {len(questions)} questions x {len(keys)} (variant, chain) runs")
    for number, question in enumerate(questions):
        shift = number % len(keys)
        for key in keys[shift:] + keys[:shift]:
            variant, chain = key
            torch.set_num_threads(variant.threads)
            bucketing.MIN_FILL = default_fill if variant.fill is None else variant.fill
            meter.reset()
            wall, cpu = time.perf_counter(), time.process_time()
            hits = runs[key].transform([Query(id=question.id, text=question.text)]).get(question.id, [])
            out = record[key]
            out["wall"].append(time.perf_counter() - wall)
            out["cpu"].append(time.process_time() - cpu)
            for skill in SKILLS:
                out[f"{skill}_wall"].append(meter.wall.get(skill, 0.0))
                out[f"{skill}_cpu"].append(meter.cpu.get(skill, 0.0))
            for count in ("sequences", "padded_tokens", "tokens", "spans", "span_texts"):
                out[count].append(meter.counts.get(count, 0))
            paths = path_sets(chain, hits)
            out["top"].append([sorted(p) for p in paths[:TOP]])
            gold = question.metadata["supporting_titles"]
            if chain == "retrieval":
                ids = [h.id for h in hits]
                out["recall@20"].append(path_recall_at_k([set(ids[:TOP])], gold, TOP))
                out["em"].append(passage_em(set(ids[:2]) if ids else None, gold))
            else:
                out["recall@20"].append(path_recall_at_k([set(p) for p in paths], gold, TOP))
                out["em"].append(passage_em(set(paths[0]) if paths else None, gold))
        progress(f"  question {number + 1}/{len(questions)} done")
    bucketing.MIN_FILL = default_fill
    return {"limits": limits, "record": record}


def summarise(label: str, questions: int, passages: int, model: str, result: dict[str, Any],
              variants: list[Variant], chains: Sequence[str]) -> tuple[list[ResultTable], dict[str, Any]]:
    record = result["record"]
    base = variants[0]
    latency = ResultTable(f"{label} limits {list(result['limits'].values())[:5]}: per-question latency, {questions} "
                          f"questions, {passages:,} passages, model {model}",
                          ["chain", "variant", "wall p50 s", "wall p90 s", "wall mean s", "CPU p50 s", "CPU mean s",
                           f"p50 wall speed-up vs {base}", f"mean CPU speed-up vs {base}"])
    skills = ResultTable(f"{label} limits: HotpotQA chain per skill, mean wall s (CPU s) per question",
                         ["variant", *SKILLS, "other"])
    work = ResultTable(f"{label} limits: HotpotQA chain work per question (mean) and agreement with {base}",
                       ["variant", "sequences", "tokens", "padded tokens", "spans proposed (texts)",
                        f"top-{TOP} paths shared with {base}", "top-1 same", "path R@20", "EM"])
    data: dict[str, Any] = {"limits": result["limits"], "variants": {}}
    for chain in chains:
        for variant in variants:
            out = record[(variant, chain)]
            wall, cpu = stats(out["wall"]), stats(out["cpu"])
            first = record[(base, chain)]
            latency.add(chain, str(variant), wall["p50"], wall["p90"], wall["mean"], cpu["p50"], cpu["mean"],
                        ratio(percentile(first["wall"], 50), wall["p50"]),
                        ratio(statistics.fmean(first["cpu"]), cpu["mean"]))
            shared = [len({frozenset(p) for p in mine} & {frozenset(p) for p in theirs}) / max(1, len(theirs))
                      for mine, theirs in zip(out["top"], first["top"])]
            same_top = [float(mine[:1] == theirs[:1]) for mine, theirs in zip(out["top"], first["top"])]
            entry = {"wall_s": wall, "cpu_s": cpu, "wall_runs_s": out["wall"], "cpu_runs_s": out["cpu"],
                     "top20_shared_with_first": statistics.fmean(shared), "top1_same": statistics.fmean(same_top),
                     "path_recall@20": statistics.fmean(out["recall@20"]), "em": statistics.fmean(out["em"])}
            for count in ("sequences", "padded_tokens", "tokens", "spans", "span_texts"):
                entry[count] = statistics.fmean(out[count])
            if chain == "hotpotqa":
                entry["skills"] = {s: {"wall_s": statistics.fmean(out[f"{s}_wall"]),
                                       "cpu_s": statistics.fmean(out[f"{s}_cpu"])} for s in SKILLS}
                other = wall["mean"] - sum(v["wall_s"] for v in entry["skills"].values())
                skills.add(str(variant), *(f"{entry['skills'][s]['wall_s']:.3g} ({entry['skills'][s]['cpu_s']:.3g})"
                                           for s in SKILLS), other)
                work.add(str(variant), entry["sequences"], entry["tokens"], entry["padded_tokens"],
                         f"{entry['spans']:.1f} ({entry['span_texts']:.1f})", entry["top20_shared_with_first"],
                         entry["top1_same"], entry["path_recall@20"], entry["em"])
            data["variants"][f"{chain} {variant}"] = entry
    return [latency, skills, work], data


def run(args: argparse.Namespace) -> Report:
    labels = list(dict.fromkeys(args.limits or ["cpu", "paper"]))
    counts = {"cpu": args.questions or (QUICK_QUESTIONS if args.quick else 20),
              "paper": args.paper_questions or 1}
    questions, passages = load_data(max(counts[label] for label in labels), args.quick)
    meter = Meter()
    contenders = Contenders(args.model, passages, args.before_rev, meter)
    chains = list(dict.fromkeys(args.chain or CHAINS))
    load_start = load_average()
    tables, data = [], {"questions": counts, "passages": len(passages), "model": args.model,
                        "index_build_s": contenders.index_s, "before_rev": args.before_rev}
    for label in labels:
        variants = [Variant.parse(v) for v in (args.variant or DEFAULT_VARIANTS[label])]
        chosen = chains if label == "cpu" else ["hotpotqa"]
        result = time_limits(label, questions[:counts[label]], contenders, variants, chosen, meter)
        more, data[label] = summarise(label, counts[label], len(passages), args.model, result, variants, chosen)
        data[label]["loadavg_end"] = load_average()
        tables += more
    notes = [f"variants: code before = stages.py and chain.py at {args.before_rev}, after = this tree (the hotpotqa "
             "chain fused with two rounds of retrieval), unfused = this tree in the paper's order; fp32 / int8 "
             "(torch dynamic quantisation of nn.Linear) with LoRA deltas merged into per-expert layers, -lora = "
             "deltas kept unmerged; @N = torch threads; /N = hop-2 reranking budget (k_hop2_rerank); ~F = "
             "bucketing MIN_FILL (0 = token budget only)",
             "CPU s = time.process_time of this process (all its threads), steadier than wall on a shared machine; "
             f"load average at start {load_start}, at the end of each limit setting "
             f"{[data[label]['loadavg_end'] for label in labels]} (2 cores shared with other jobs)",
             "the paper-limit runs time the HotpotQA chain only; linking includes span proposal (question and "
             "hop-1 passages); tokens = real (unpadded) tokens through the encoder per question",
             f"top-{TOP} agreement: share of the first variant's top-{TOP} paths (unordered pairs) also in this "
             "variant's; path R@20 and EM over the timed questions only (the quality check on all 100 questions "
             "is `sleuth cos eval`, docs/cos/README.md)",
             f"skill indexes built once before timing (float32): {contenders.index_s:.0f} s wall"]
    data["loadavg_start"] = load_start
    return Report(tables=tables, data=data, notes=notes)


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=0,
                        help=f"dev questions at the cpu limits (default 20; --quick: {QUICK_QUESTIONS})")
    parser.add_argument("--paper-questions", type=int, default=0,
                        help="dev questions at the paper's limits (default 1: minutes per question)")
    parser.add_argument("--limits", action="append", choices=sorted(LIMITS),
                        help="limit settings to run (repeatable; default both)")
    parser.add_argument("--variant", action="append",
                        help="code:precision@threads[/budget] (repeatable; the first is the baseline; default "
                             f"cpu {DEFAULT_VARIANTS['cpu']}, paper {DEFAULT_VARIANTS['paper']})")
    parser.add_argument("--chain", action="append", choices=CHAINS,
                        help="chains timed at the cpu limits (repeatable; default all three)")
    parser.add_argument("--model", default="default",
                        help="'default' (the shipped model), 'minilm' (untrained experts) or a saved model directory")
    parser.add_argument("--before-rev", default=BEFORE_REV, help="git revision of the 'before' code")
    parser.add_argument("--name", help="result file name (default cos_bench, or cos_bench_paper for --limits paper)")
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    """Results in ``cos_bench.{json,md}``, ``cos_bench_paper.*`` for a run of the paper's limits alone, or --name."""
    args, _ = build_parser().parse_known_args(argv)
    name = args.name or (f"{NAME}_paper" if args.limits == ["paper"] else NAME)
    return bench_main(name, build_parser(), run, argv)


if __name__ == "__main__":
    main()
