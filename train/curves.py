"""Learning curves: the scalars a training run logged to TensorBoard, as tables and a plot.

A run writes its evaluations as TensorBoard scalars (``eval/accuracy_23_26_chaos``,
``eval/order_vs_heuristic_winrate``, ... see :mod:`orderchaos.train.run_logger`). This
module reads them back from one or more run directories, picks tags by name or shell-style
pattern, and lays them out as a markdown table (one row per evaluation step) or one plot
with a panel per tag and a line per run, so runs of two seeds or two arms of an A/B can be
compared without opening TensorBoard.
"""

from __future__ import annotations

import fnmatch
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The default tags: the Chaos network's optimal-move accuracy at each stage of the game.
CHAOS_ACCURACY_TAGS = "eval/accuracy_*_chaos"


@dataclass(frozen=True)
class Curve:
    """One scalar of one run: ``(step, value)`` points in step order."""

    run: str
    tag: str
    points: tuple[tuple[int, float], ...]


def read_scalars(run_dir: str | Path) -> dict[str, tuple[tuple[int, float], ...]]:
    """Every scalar tag a run logged, with its ``(step, value)`` points in step order.

    When a resumed run logged a step twice, the last value written wins. Raises ValueError
    when ``run_dir`` is not a directory or holds no TensorBoard events.
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    path = Path(run_dir)
    if not path.is_dir():
        raise ValueError(f"{run_dir}: not a directory (give a training run directory)")
    if not any(path.glob("events.out.tfevents.*")):
        raise ValueError(f"{run_dir}: no TensorBoard events here (give a training run directory)")
    accumulator = EventAccumulator(str(path), size_guidance={"scalars": 0})
    # A resumed run marks where it restarted, and the accumulator drops what a killed attempt
    # wrote past that step; that is expected here, so its warning for each restart is muted.
    tb_logger = logging.getLogger("tensorboard")
    level = tb_logger.level
    tb_logger.setLevel(logging.ERROR)
    try:
        accumulator.Reload()
    finally:
        tb_logger.setLevel(level)
    scalars: dict[str, tuple[tuple[int, float], ...]] = {}
    for tag in accumulator.Tags()["scalars"]:
        by_step = {event.step: float(event.value) for event in accumulator.Scalars(tag)}
        scalars[tag] = tuple(sorted(by_step.items()))
    return scalars


def select_curves(
    run_dirs: list[str | Path], patterns: list[str], labels: list[str] | None = None
) -> list[Curve]:
    """The curves of ``run_dirs`` whose tags match any of ``patterns`` (exact names or
    shell-style patterns such as ``eval/accuracy_*_chaos``), run by run, tags sorted.

    ``labels`` names the runs (default: the directory names). Raises ValueError naming a
    pattern that matches no tag in any run, with the tags there are.
    """
    labels = labels or [Path(d).name or str(d) for d in run_dirs]
    if len(labels) != len(run_dirs):
        raise ValueError(f"{len(labels)} labels for {len(run_dirs)} runs")
    per_run = [read_scalars(d) for d in run_dirs]
    all_tags = sorted(set().union(*per_run))
    for pattern in patterns:
        if not fnmatch.filter(all_tags, pattern):
            shown = ", ".join(t for t in all_tags if t.startswith("eval/")) or ", ".join(all_tags[:20])
            raise ValueError(f"tag {pattern!r} matches nothing these runs logged; there are: {shown}")
    curves = []
    for label, scalars in zip(labels, per_run, strict=True):
        for tag in sorted(scalars):
            if any(fnmatch.fnmatchcase(tag, p) for p in patterns):
                curves.append(Curve(label, tag, scalars[tag]))
    return curves


def curves_table(curves: list[Curve]) -> str:
    """A markdown table: one row per run and step, one column per tag (blank where a run
    did not log that tag at that step)."""
    tags = sorted({c.tag for c in curves})
    runs = list(dict.fromkeys(c.run for c in curves))
    values = {(c.run, c.tag, step): value for c in curves for step, value in c.points}
    lines = ["| run | step | " + " | ".join(tags) + " |", "|---|---:|" + "---:|" * len(tags)]
    for run in runs:
        steps = sorted({step for c in curves if c.run == run for step, _ in c.points})
        for step in steps:
            cells = [_cell(values.get((run, tag, step))) for tag in tags]
            lines.append(f"| {run} | {step} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


LOG_SPAN = 100.0
"""With ``log``, a panel whose values span more than this factor is drawn on a log axis."""


def curves_figure(curves: list[Curve], title: str | None = None, log: bool = False) -> Any:
    """A matplotlib figure: a panel per tag, a line per run, step on the x axis. ``log``: a
    symmetric log y axis (linear within 1 of 0) on each panel whose values span more than a
    factor of :data:`LOG_SPAN`, for counts that fall by orders of magnitude down to 0
    (``exploit/refutations``); the other panels stay linear, where their ticks are read."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tags = sorted({c.tag for c in curves})
    runs = list(dict.fromkeys(c.run for c in curves))  # a run keeps its colour on every panel
    columns = min(len(tags), 2)
    rows = -(-len(tags) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 3.4 * rows), squeeze=False)
    for ax, tag in zip(axes.flat, tags):
        for curve in (c for c in curves if c.tag == tag):
            steps = [s for s, _ in curve.points]
            ax.plot(steps, [v for _, v in curve.points], marker="o", markersize=3, label=curve.run,
                    color=f"C{runs.index(curve.run) % 10}")
        ax.set_title(tag, fontsize=10)
        ax.set_xlabel("iteration")
        values = [abs(v) for c in curves if c.tag == tag for _, v in c.points]
        if log and values and max(values) > LOG_SPAN * max(1.0, min(values)):
            ax.set_yscale("symlog", linthresh=1)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(tags):]:
        ax.set_visible(False)
    for ax in list(axes.flat)[:len(tags)]:
        ax.legend(fontsize=8)  # on each panel: a run may lack a tag
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def check_plot_path(path: str | Path) -> None:
    """Raise ValueError, one line naming the accepted endings, unless ``path`` ends in a
    file type matplotlib can draw (``.png``, ``.pdf``, ``.svg``, ...): checked before the
    curves are read, so that a ``--out curves.txt`` fails before any work, not after it."""
    from matplotlib.backend_bases import FigureCanvasBase

    kinds = sorted(FigureCanvasBase.get_supported_filetypes())
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in kinds:
        raise ValueError(f"cannot draw {path}: a plot file ends in .png or another type matplotlib draws "
                         f"({', '.join('.' + k for k in kinds)}), got {'.' + suffix if suffix else 'no ending'}")


def plot_curves(curves: list[Curve], path: str | Path, title: str | None = None, log: bool = False) -> Path:
    """:func:`curves_figure` at ``path`` (its folder made if needed), as PNG or the type its
    ending names (:func:`check_plot_path`)."""
    import matplotlib.pyplot as plt

    check_plot_path(path)
    fig = curves_figure(curves, title, log)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
