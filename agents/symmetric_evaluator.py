"""Symmetry averaging: ask the network about every image of a position and average.

A position and its images under the game's symmetries (:mod:`orderchaos.envs.symmetry`: the
8 board symmetries, times swapping X and O) have the same value, and their best moves are
images of each other. A trained network is only nearly equivariant, and where it errs on
one image it is often right on the others, so averaging its answers over the images
(test-time augmentation; AlphaGo averaged over the 8 board symmetries in its evaluation)
gives a steadier policy. It costs one batched evaluation of ``symmetries`` positions for
each position asked about.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from orderchaos.agents.base import Evaluator
from orderchaos.envs.rules import State
from orderchaos.envs.symmetry import ACTION_PERM, NUM_BOARD_SYMMETRIES, NUM_SYMMETRIES, transform_state

SYMMETRY_COUNTS = (1, NUM_BOARD_SYMMETRIES, NUM_SYMMETRIES)
"""Accepted numbers of images: the position alone, the board symmetries, and those with
the colours swapped as well."""


def check_symmetries(symmetries: object) -> int:
    """``symmetries`` if it is one of :data:`SYMMETRY_COUNTS`, else a ValueError naming them."""
    if not isinstance(symmetries, int) or isinstance(symmetries, bool) or symmetries not in SYMMETRY_COUNTS:
        raise ValueError(
            f"sym must be 1 (the position alone), 8 (its board symmetries) or 16 (and with "
            f"X and O swapped), got {symmetries!r}"
        )
    return symmetries


class SymmetricEvaluator:
    """``inner``'s answers averaged over the first ``symmetries`` images of each position
    (symmetry ``g`` = 0..symmetries-1 of :mod:`orderchaos.envs.symmetry`; 0 is the identity).

    The priors of image ``g`` are mapped back to the position's actions before averaging, so
    the average is a probability vector over the position's legal moves; the value is the
    mean of the images' values. With ``symmetries=1`` it passes the batch through unchanged.
    """

    def __init__(self, inner: Evaluator, symmetries: int = NUM_SYMMETRIES) -> None:
        self.inner = inner
        self.symmetries = check_symmetries(symmetries)

    @property
    def positions_evaluated(self) -> int:
        """Positions the wrapped evaluator has evaluated (0 if it does not count them)."""
        return int(getattr(self.inner, "positions_evaluated", 0))

    def evaluate(self, states: Sequence[State]) -> tuple[np.ndarray, np.ndarray]:
        """Priors ``(B, 72)`` and values ``(B,)``, averaged over the images (one batch of
        ``B * symmetries`` positions for the wrapped evaluator)."""
        if self.symmetries == 1:
            return self.inner.evaluate(states)
        n = len(states)
        images = [transform_state(state, g) for g in range(self.symmetries) for state in states]
        priors, values = self.inner.evaluate(images)
        summed = np.zeros((n, priors.shape[1]), np.float64)
        for g in range(self.symmetries):
            # the position's action a is the image's action ACTION_PERM[g, a]
            summed += priors[g * n : (g + 1) * n][:, ACTION_PERM[g]]
        mean_values = np.asarray(values, np.float64).reshape(self.symmetries, n).mean(axis=0)
        return (summed / self.symmetries).astype(np.float32), mean_values.astype(np.float32)
