"""Radar plots like Faggioli & Ferro's Figure 1: one polygon per system over the axes nDCG@10, obfuscation and recall."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sleuth.errors import MissingExtraError

AXES = (("ndcg10", "nDCG@10"), ("obfuscation", "obf"), ("pooled_recall", "recall"))


def radar_plot(systems: Mapping[str, Mapping[str, float]], path_stem: str | Path, title: str = "",
               axes: Sequence[tuple[str, str]] = AXES, ticks: Sequence[float] = (0.3, 0.7)) -> list[Path]:
    """Draw ``{label: {axis key: value in [0, 1]}}`` and write ``<path_stem>.png`` and ``.svg``; returns the paths."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
    except ImportError:
        raise MissingExtraError("matplotlib", "plots", "radar plots") from None
    angles = [2 * np.pi * i / len(axes) for i in range(len(axes))]
    figure = plt.figure(figsize=(6.4, 4.8))
    ax: Any = figure.add_subplot(111, polar=True)  # a PolarAxes
    ax.set_theta_offset(np.pi / 2)
    ax.set_xticks(angles)
    ax.set_xticklabels([label for _, label in axes])
    ax.set_rlabel_position(200)  # tick labels in the lower left, away from the axes
    ax.set_yticks(list(ticks))
    ax.set_yticklabels([f"{t:g}" for t in ticks], color="grey")
    ax.set_ylim(0, 1)
    for label, values in systems.items():
        points = [float(values[key]) for key, _ in axes]
        ax.plot(angles + angles[:1], points + points[:1], linewidth=2, label=label)
    ax.legend(loc="center left", bbox_to_anchor=(1.1, 0.5), frameon=False)
    if title:
        ax.set_title(title, pad=18)
    figure.tight_layout()
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    for path in paths:
        figure.savefig(path, dpi=120 if path.suffix == ".png" else None)
    plt.close(figure)
    return paths
