"""Shared benchmark plumbing: interleaved timing, profiling, data loading, tables and result files.

Every benchmark module defines ``NAME``, ``build_parser()`` and ``run(args) -> Report``; :func:`bench_main`
parses the arguments, runs the benchmark, prints its tables with rich and writes ``bench/results/<NAME>.json``
and ``<NAME>.md`` atomically.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import json
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from sleuth.corpus.beir import read_beir_corpus, read_beir_queries
from sleuth.corpus.model import Passage
from sleuth.corpus.trec import read_trec_documents, read_trec_topics
from sleuth.index.docstore import DocStore
from sleuth.io import atomic_write_text
from sleuth.paths import shared_data_dir

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "bench" / "results"
PACKAGES = ("numpy", "faiss-cpu", "bm25s", "rank-bm25", "PyStemmer", "onnxruntime", "torch",
            "sentence-transformers", "tokenizers")
console = Console(width=None if sys.stdout.isatty() else 150)


# ---------------------------------------------------------------- timing

@dataclass
class Timing:
    """Wall-clock seconds of repeated runs of one competitor, and the value its last run returned."""

    name: str
    seconds: list[float] = field(default_factory=list)
    result: Any = None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def best(self) -> float:
        return min(self.seconds)

    def summary(self) -> dict[str, Any]:
        """JSON-ready view: every run, the median and the best."""
        return {"runs_s": [round(s, 6) for s in self.seconds], "median_s": self.median, "best_s": self.best}


def time_call(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds one call of ``fn`` takes (perf_counter), and what it returned."""
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def measure_interleaved(competitors: dict[str, Callable[[], Any]], repeats: int = 3,
                        warmup: bool = True) -> dict[str, Timing]:
    """Time every competitor ``repeats`` times, alternating them so machine noise hits all of them alike.

    Round r runs the competitors in an order rotated by r (A B C, B C A, C A B, ...). With ``warmup`` one untimed
    round runs first (imports, caches, lazy initialisation). Each Timing keeps the result of its last run; the
    previous result is dropped before a run so that large results (indexes) are never held twice.
    """
    names = list(competitors)
    timings = {name: Timing(name) for name in names}
    if warmup:
        for name in names:
            competitors[name]()
    for round_ in range(repeats):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            timings[name].result = None
            seconds, timings[name].result = time_call(competitors[name])
            timings[name].seconds.append(seconds)
    return timings


def profile_stats(profiler: cProfile.Profile, runs: int) -> dict[str, tuple[int, float, float]]:
    """A profiler's functions: name -> (calls, own seconds, cumulative seconds), averaged over ``runs`` runs.

    Anonymous code (``<listcomp>``, ``<lambda>`` ...) is named after its main caller: ``f:457(<listcomp>) in g``.
    """
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    result = {}
    for key, (_, calls, own, cum, _) in stats.items():
        name = function_name(key)
        if key[2].startswith("<"):
            name += f" in {function_name(enclosing_function(stats, key)).rsplit(':', 1)[-1]}"
        result[name] = (calls // runs, own / runs, cum / runs)
    return result


def enclosing_function(stats: dict, key: tuple[str, int, str]) -> tuple[str, int, str]:
    """The nearest named function above anonymous code, following each step's costliest caller."""
    seen = {key}
    while key[2].startswith("<") and stats.get(key, (0, 0, 0, 0, {}))[4]:
        callers = stats[key][4]
        key = max(callers, key=lambda c: callers[c][3])
        if key in seen:
            break
        seen.add(key)
    return key


def function_name(key: tuple[str, int, str]) -> str:
    """``path:line(function)`` of a pstats key, the path cut after site-packages or the repository root."""
    path, line, func = key
    for marker in ("site-packages/", f"{REPO}/"):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"{path}:{line}({func})"


def profile_diff(subject: Callable[[], Any], baseline: Callable[[], Any], runs: int = 3,
                 top: int = 12) -> dict[str, Any]:
    """Where ``subject`` spends more time than ``baseline``: per-function own-time differences under cProfile.

    Both run ``runs`` times, alternating, each under its own profiler; times are per run. Returns both totals and
    the ``top`` functions by extra own time, each with its share of the total excess, so the rows say which
    functions the overhead consists of (cProfile inflates Python-heavy code: read the shares, not the seconds).
    """
    profilers = cProfile.Profile(), cProfile.Profile()
    for _ in range(runs):
        profilers[0].runcall(subject)
        profilers[1].runcall(baseline)
    mine, theirs = (profile_stats(p, runs) for p in profilers)
    total_mine, total_theirs = (sum(own for _, own, _ in s.values()) for s in (mine, theirs))
    excess = total_mine - total_theirs
    rows = []
    for name, (calls, own, cum) in mine.items():
        base_own = theirs.get(name, (0, 0.0, 0.0))[1]
        rows.append({"function": name, "calls": calls, "own_s": own, "cum_s": cum, "baseline_own_s": base_own,
                     "extra_s": own - base_own, "share_of_excess": ratio(own - base_own, excess),
                     "share_of_subject": ratio(own, total_mine)})
    rows.sort(key=lambda r: r["extra_s"], reverse=True)
    return {"runs": runs, "subject_s": total_mine, "baseline_s": total_theirs, "excess_s": excess,
            "top": rows[:top]}


def ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, or NaN when the denominator is zero."""
    return numerator / denominator if denominator else float("nan")


def rss_bytes() -> int:
    """Resident set size of this process, in bytes (Linux /proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def mem_available_bytes() -> int:
    """MemAvailable of /proc/meminfo, in bytes (memory other processes leave free)."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (what ``uptime`` prints), rounded."""
    return [round(x, 2) for x in os.getloadavg()]


# ---------------------------------------------------------------- data

@dataclass
class Dataset:
    """A benchmark collection: passages as sleuth indexes them, their title+text strings, and query texts."""

    name: str
    passages: list[Passage]
    queries: list[str]

    @property
    def contents(self) -> list[str]:
        """Title and text of every passage, exactly the strings sleuth's document store hands to BM25/encoders."""
        return DocStore.from_passages(self.passages).contents()


def load_scifact() -> Dataset:
    """BEIR SciFact (train): 5,183 documents and the 809 queries of queries.jsonl."""
    folder = shared_data_dir() / "scifact"
    passages = [Passage.from_document(doc) for doc in read_beir_corpus(folder)]
    queries = [q.text for q in read_beir_queries(folder / "queries.jsonl")]
    return Dataset("scifact", passages, queries)


def load_vaswani() -> Dataset:
    """Vaswani (NPL): 11,429 TREC SGML documents and 93 topics (title field)."""
    folder = shared_data_dir() / "vaswani"
    passages = [Passage.from_document(doc) for doc in read_trec_documents(folder / "doc-text.trec")]
    queries = [q.text for q in read_trec_topics(folder / "query-text.trec")]
    return Dataset("vaswani", passages, queries)


DATASETS: dict[str, Callable[[], Dataset]] = {"scifact": load_scifact, "vaswani": load_vaswani}


# ---------------------------------------------------------------- reporting

@dataclass
class ResultTable:
    """A table printed with rich and written as Markdown; cells are already formatted strings."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)

    def add(self, *cells: Any) -> None:
        self.rows.append([fmt(c) for c in cells])

    def to_rich(self) -> Table:
        table = Table(title=self.title, title_justify="left")
        for i, column in enumerate(self.columns):
            table.add_column(column, justify="left" if i == 0 else "right")
        for row in self.rows:
            table.add_row(*row)
        return table

    def to_markdown(self) -> str:
        lines = [f"### {self.title}", "", "| " + " | ".join(self.columns) + " |",
                 "|" + "|".join("---" for _ in self.columns) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines)


@dataclass
class Report:
    """What a benchmark run returns: tables for people, data for programs, and notes for both."""

    tables: list[ResultTable]
    data: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def fmt(value: Any) -> str:
    """Compact cell text: thousands separators for large numbers, 3 significant digits for small floats."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:
            return "n/a"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.3g}" if abs(value) >= 0.001 else f"{value:.2e}"
    return str(value)


def machine_info() -> dict[str, Any]:
    """CPU count, platform, load and the versions of the packages the benchmarks touch."""
    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {"cpu_count": os.cpu_count(), "cpu_affinity": len(os.sched_getaffinity(0)),
            "platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(), "loadavg_at_start": list(os.getloadavg()), "versions": versions}


def portable(text: str) -> str:
    """``text`` with this machine's absolute paths replaced by portable ones: the repository -> relative, the shared
    data -> ``../shared/data``, sleuth's home -> ``$SLEUTH_HOME``, the temporary folder -> ``$TMPDIR``, the user's
    home -> ``~`` (result files name what was run, not where)."""
    import tempfile

    from sleuth.paths import home_dir

    replacements = [(str(REPO) + "/", ""), (str(REPO), "."), (str(shared_data_dir().resolve()), "../shared/data"),
                    (str(home_dir()), "$SLEUTH_HOME"), (tempfile.gettempdir(), "$TMPDIR"), (str(Path.home()), "~")]
    for old, new in replacements:
        text = text.replace(old, new)
    return text


def write_results(name: str, report: Report, args: argparse.Namespace, machine: dict[str, Any],
                  elapsed_s: float, directory: Path = RESULTS_DIR) -> tuple[Path, Path]:
    """Write ``<name>.json`` (everything) and ``<name>.md`` (tables and notes) atomically; return both paths."""
    created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    payload = {"name": name, "created": created, "elapsed_s": elapsed_s, "args": vars(args), "machine": machine,
               "results": report.data, "notes": report.notes}
    json_path, md_path = directory / f"{name}.json", directory / f"{name}.md"
    atomic_write_text(json_path, portable(json.dumps(payload, indent=2, default=str)) + "\n")
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    module = spec.name if spec is not None and spec.name.startswith("bench.") else f"bench.{name}"  # --name X
    header = (f"# {name}\n\n{created}, {machine['cpu_affinity']} CPUs, {machine['platform']}, "
              f"python {machine['python']}; command: `python -m {module} {' '.join(args.argv)}`; "
              f"wall time {elapsed_s:.0f} s.\n")
    body = "\n\n".join(t.to_markdown() for t in report.tables)
    notes = "".join(f"- {n}\n" for n in report.notes)
    atomic_write_text(md_path, portable(header + "\n" + body + "\n" + ("\nNotes\n\n" + notes if notes else "")))
    return json_path, md_path


def base_parser(description: str) -> argparse.ArgumentParser:
    """Options every benchmark has: --quick, --repeats and --results-dir."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a fast check")
    parser.add_argument("--repeats", type=int, default=3, help="timed repetitions per competitor (median reported)")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where to write <name>.json/.md")
    return parser


def add_size_option(parser: argparse.ArgumentParser, flag: str, full: int, quick: int, what: str) -> None:
    """An integer size option whose 0 default means "the benchmark's own size": ``full``, or ``quick`` with
    --quick."""
    parser.add_argument(flag, type=int, default=0, help=f"{what} (default {full:,}, --quick {quick:,})")


def bench_main(name: str, parser: argparse.ArgumentParser, run: Callable[[argparse.Namespace], Report],
               argv: Sequence[str] | None = None) -> Report:
    """Parse ``argv``, run the benchmark, print its tables and notes, and write the result files."""
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    machine = machine_info()
    console.rule(f"[bold]bench.{name}")
    elapsed, report = time_call(lambda: run(args))
    args.argv = list(argv) if argv is not None else list(sys.argv[1:])
    for table in report.tables:
        console.print(table.to_rich())
    for note in report.notes:
        console.print(f"- {note}")
    json_path, md_path = write_results(name, report, args, machine, elapsed, args.results_dir)
    console.print(f"[dim]{elapsed:.0f} s; wrote {json_path} and {md_path}[/dim]")
    return report


def progress(message: str) -> None:
    """A dim progress line (benchmarks take minutes; show what runs)."""
    console.print(f"[dim]{dt.datetime.now():%H:%M:%S} {message}[/dim]")
