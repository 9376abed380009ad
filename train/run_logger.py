"""Run logging: TensorBoard scalars in CleanRL-style tag groups plus a live tqdm display.

Tags: ``order/losses/policy``, ``chaos/losses/value``, ``charts/games_per_sec``,
``charts/SPS``, ``eval/order_vs_heuristic_winrate``, ... The resolved hyperparameters are
written once as a markdown table under the text tag ``hyperparameters``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tqdm import tqdm


def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"optim": {"lr": 1}}`` -> ``{"optim.lr": 1}``."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def hyperparameter_table(config: dict[str, Any]) -> str:
    """A markdown table ``|param|value|`` of the flattened config, as CleanRL logs it."""
    rows = "\n".join(f"|{k}|{v}|" for k, v in flatten(config).items())
    return f"|param|value|\n|-|-|\n{rows}"


class RunLogger:
    """TensorBoard writer plus progress bar for one run.

    ``start_step`` is where the run (re)starts: TensorBoard events after it from an earlier,
    killed attempt are purged. The bar shows the run's progress as a percentage, which is
    by iterations or by time, whichever limit comes first (see :meth:`set_progress`), so a
    time-limited run shows its time budget and an honest ETA.
    """

    STEPS = 1000  # the bar's resolution: per-mille of the run

    def __init__(
        self,
        run_dir: str | Path,
        config: dict[str, Any],
        start_progress: float = 0.0,
        start_step: int = 0,
        progress: bool = True,
    ) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(run_dir), purge_step=start_step + 1 if start_step else None)
        if start_step == 0:
            self.writer.add_text("hyperparameters", hyperparameter_table(config))
        self.bar = tqdm(
            total=self.STEPS,
            initial=round(self.STEPS * min(1.0, start_progress)),
            disable=not progress,
            dynamic_ncols=True,
            bar_format="{l_bar}{bar}| [{elapsed}<{remaining}{postfix}]",
        )
        self.postfix: dict[str, str] = {}

    def scalars(self, metrics: dict[str, float], step: int) -> None:
        """Write each ``tag: value`` at ``step``."""
        for tag, value in metrics.items():
            self.writer.add_scalar(tag, float(value), step)

    def show(self, **fields: float | str) -> None:
        """Update the fields shown after the progress bar (e.g. games/s, losses, last eval)."""
        for key, value in fields.items():
            self.postfix[key] = f"{value:.3g}" if isinstance(value, float) else str(value)
        self.bar.set_postfix(self.postfix, refresh=False)

    def set_progress(self, fraction: float) -> None:
        """Move the bar to ``fraction`` (0..1) of the run."""
        target = round(self.STEPS * min(1.0, max(0.0, fraction)))
        if target > self.bar.n:
            self.bar.update(target - self.bar.n)

    def message(self, text: str) -> None:
        """Print a line without breaking the progress bar."""
        self.bar.write(text)

    def close(self) -> None:
        """Flush and close the writer and the bar."""
        self.writer.flush()
        self.writer.close()
        self.bar.close()
