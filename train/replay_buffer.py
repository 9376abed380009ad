"""A fixed-capacity replay buffer of training positions, with symmetry augmentation.

Each entry is one position seen by one role's network: the observation planes (encoding
v1), the legal-action mask, the search policy target and the value target (outcome from the
view of the player to move). Sampling can map each sampled position through a random one of
the 16 symmetries of the game (``orderchaos.envs.symmetry``), so the network sees every image.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from orderchaos.envs.encoding import OBS_SHAPE
from orderchaos.envs.rules import ACTIONS, CELLS
from orderchaos.envs.symmetry import NUM_SYMMETRIES, transform_planes, transform_policy


class ReplayBuffer:
    """Circular buffer of ``(planes, mask, policy, value)`` rows; the oldest rows go first."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"replay capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.planes = np.zeros((capacity, *OBS_SHAPE), np.int8)
        self.masks = np.zeros((capacity, ACTIONS), np.int8)
        self.policies = np.zeros((capacity, ACTIONS), np.float32)
        self.values = np.zeros(capacity, np.float32)
        self.empties = np.zeros(capacity, np.int8)  # empty cells of each row, for weighted draws
        self.size = 0
        self.next = 0
        self.total_added = 0

    def __len__(self) -> int:
        return self.size

    def add(self, planes: np.ndarray, masks: np.ndarray, policies: np.ndarray, values: np.ndarray) -> None:
        """Append a batch of rows (arrays with a common first dimension)."""
        n = len(values)
        if not (len(planes) == len(masks) == len(policies) == n):
            raise ValueError(
                f"replay rows disagree in length: planes {len(planes)}, masks {len(masks)}, "
                f"policies {len(policies)}, values {n}"
            )
        if n > self.capacity:  # only the newest rows can fit
            planes, masks, policies, values = planes[-self.capacity:], masks[-self.capacity:], policies[-self.capacity:], values[-self.capacity:]
            self.total_added += n - self.capacity
            n = self.capacity
        idx = (self.next + np.arange(n)) % self.capacity
        self.planes[idx] = planes
        self.masks[idx] = masks
        self.policies[idx] = policies
        self.values[idx] = values
        self.empties[idx] = _empty_cells(planes)
        self.next = int((self.next + n) % self.capacity)
        self.size = min(self.capacity, self.size + n)
        self.total_added += n

    def sample(
        self,
        batch_size: int,
        rng: np.random.Generator,
        augment: bool = True,
        early_empties: int = 0,
        early_weight: float = 1.0,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``batch_size`` rows drawn uniformly with replacement, each mapped through a random
        symmetry when ``augment``. Returns ``(planes, masks, policies, values)`` copies.

        With ``early_empties`` (> 0), a row with at least that many empty cells is drawn
        ``early_weight`` times as often as any other row.
        """
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        if early_empties and early_weight != 1.0:
            idx = self._weighted_indices(batch_size, rng, early_empties, early_weight)
        else:
            idx = rng.integers(self.size, size=batch_size)
        planes, masks = self.planes[idx], self.masks[idx]
        policies, values = self.policies[idx], self.values[idx].copy()
        if augment:
            images = rng.integers(NUM_SYMMETRIES, size=batch_size)
            for g in np.unique(images):
                if g == 0:
                    continue
                rows = images == g
                planes[rows] = transform_planes(planes[rows], int(g))
                masks[rows] = transform_policy(masks[rows], int(g))
                policies[rows] = transform_policy(policies[rows], int(g))
        return planes, masks, policies, values

    def _weighted_indices(
        self, batch_size: int, rng: np.random.Generator, early_empties: int, early_weight: float
    ) -> np.ndarray:
        """Row indices where each early row (at least ``early_empties`` empty cells) weighs
        ``early_weight`` and each other row 1: a binomial split between the two groups, then
        uniform draws within each."""
        early = self.empties[: self.size] >= early_empties
        early_rows, other_rows = np.flatnonzero(early), np.flatnonzero(~early)
        mass = early_weight * len(early_rows)
        from_early = rng.binomial(batch_size, mass / (mass + len(other_rows)))
        return np.concatenate([
            early_rows[rng.integers(len(early_rows), size=from_early)] if from_early else early_rows[:0],
            other_rows[rng.integers(len(other_rows), size=batch_size - from_early)] if from_early < batch_size else other_rows[:0],
        ])

    def state_dict(self) -> dict[str, Any]:
        """The filled part of the buffer and its cursor, for a trainer-state file."""
        n = self.size
        return {
            "capacity": self.capacity,
            "planes": self.planes[:n].copy(),
            "masks": self.masks[:n].copy(),
            "policies": self.policies[:n].copy(),
            "values": self.values[:n].copy(),
            "next": self.next,
            "total_added": self.total_added,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict` (the capacity must match)."""
        if state["capacity"] != self.capacity:
            raise ValueError(
                f"buffer capacity changed from {state['capacity']} to {self.capacity}; "
                f"resume with the run's own replay.capacity and mistakes.capacity"
            )
        n = len(state["values"])
        self.planes[:n] = state["planes"]
        self.masks[:n] = state["masks"]
        self.policies[:n] = state["policies"]
        self.values[:n] = state["values"]
        self.empties[:n] = _empty_cells(self.planes[:n])
        self.size, self.next, self.total_added = n, int(state["next"]), int(state["total_added"])


def _empty_cells(planes: np.ndarray) -> np.ndarray:
    """The number of empty cells of each position of ``planes`` (rows of encoded boards)."""
    return CELLS - planes[:, :2].reshape(len(planes), 2 * CELLS).sum(axis=1, dtype=np.int32)
