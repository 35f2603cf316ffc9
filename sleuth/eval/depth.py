"""Result depth: pipelines that return different numbers of hits (dhr 100, dense 1,000) are not comparable on
depth-sensitive measures (AP, R@1000) until every run is cut to the depth they share."""

from __future__ import annotations

from collections.abc import Mapping

from sleuth.stages.run import Run


def run_depth(run: Run) -> int:
    """The most hits any query of the run has (0 for an empty run)."""
    return max((len(hits) for hits in run.values()), default=0)


def common_depth(runs: Mapping[str, Run]) -> tuple[dict[str, Run], str | None]:
    """Every run cut to the smallest depth among them, with a note naming each pipeline's depth; the runs
    unchanged and None when they all have the same depth."""
    depths = {name: run_depth(run) for name, run in runs.items()}
    if len(set(depths.values())) <= 1:
        return dict(runs), None
    depth = min(depths.values())
    listed = ", ".join(f"{name} {value:,}" for name, value in depths.items())
    note = f"runs cut to their common depth {depth:,} before measuring and testing (depths: {listed})"
    return {name: run.cut(depth) for name, run in runs.items()}, note


def differing_depths(runs: Mapping[str, Run], baseline: str) -> list[str]:
    """The pipelines whose depth differs from the baseline's (no significance test is fair for them uncut)."""
    base = run_depth(runs[baseline])
    return [name for name, run in runs.items() if name != baseline and run_depth(run) != base]
