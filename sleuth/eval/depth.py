"""Result depth: pipelines that return different numbers of hits (dhr 100, dense 1,000) are not comparable on
depth-sensitive measures (AP, R@1000) until every run is cut to the depth they share."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sleuth.stages.run import Run


def run_depth(run: Run) -> int:
    """The most hits any query of the run has (0 for an empty run)."""
    return max((len(hits) for hits in run.values()), default=0)


def common_depth(runs: Mapping[str, Run], measures: Iterable[object] = ()) -> tuple[dict[str, Run], str | None]:
    """Every run cut to the smallest depth among those that returned hits, with a note naming each pipeline's depth
    and the ``measures`` (ir_measures measures or names) the cut changes; the runs unchanged and None when they all
    have the same depth. A run without any hit sets no depth (before: it cut every other run to 0, a table of
    zeros)."""
    depths = {name: run_depth(run) for name, run in runs.items()}
    if len({value for value in depths.values() if value > 0}) <= 1:
        return dict(runs), None
    depth = min(value for value in depths.values() if value > 0)
    listed = ", ".join(f"{name} {value:,}" for name, value in depths.items())
    note = f"runs cut to their common depth {depth:,} before measuring and testing (depths: {listed})"
    deeper = deeper_measures(measures, depth)
    if deeper:  # before: an R@100 column of R@10 figures, said only by the depth
        note += (f"; so {', '.join(deeper)} {'is' if len(deeper) == 1 else 'are'} measured on the top {depth:,} of "
                 "every run (Experiment(same_depth=False) measures each run whole)")
    return {name: run.cut(depth) for name, run in runs.items()}, note


def deeper_measures(measures: Iterable[object], depth: int) -> list[str]:
    """The names of the measures that read deeper than ``depth``: a cutoff above it, or none (AP, RR)."""
    from sleuth.eval.measures import parse_measure_name

    deeper = []
    for measure in measures:
        parsed = parse_measure_name(measure) if isinstance(measure, str) else measure
        cutoff = getattr(parsed, "params", {}).get("cutoff")
        if cutoff is None or cutoff > depth:
            deeper.append(str(measure))
    return deeper


def differing_depths(runs: Mapping[str, Run], baseline: str) -> list[str]:
    """The pipelines whose depth differs from the baseline's (no significance test is fair for them uncut)."""
    base = run_depth(runs[baseline])
    return [name for name, run in runs.items() if name != baseline and run_depth(run) != base]
