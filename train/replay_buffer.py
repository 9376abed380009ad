"""A fixed-capacity replay buffer of training positions, with symmetry augmentation.

Each entry is one position seen by one role's network: the observation planes (encoding
v1), the legal-action mask, the search policy target and the value target (outcome from the
view of the player to move). Sampling maps each sampled position through a random one of
the 16 symmetries of the game (``orderchaos.envs.symmetry``), so the network sees every image.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from orderchaos.envs.encoding import OBS_SHAPE
from orderchaos.envs.rules import ACTIONS
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
        self.next = int((self.next + n) % self.capacity)
        self.size = min(self.capacity, self.size + n)
        self.total_added += n

    def sample(
        self, batch_size: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``batch_size`` rows drawn uniformly with replacement, each mapped through a random
        symmetry. Returns ``(planes, masks, policies, values)`` copies."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        idx = rng.integers(self.size, size=batch_size)
        planes, masks = self.planes[idx], self.masks[idx]
        policies, values = self.policies[idx], self.values[idx].copy()
        images = rng.integers(NUM_SYMMETRIES, size=batch_size)
        for g in np.unique(images):
            if g == 0:
                continue
            rows = images == g
            planes[rows] = transform_planes(planes[rows], int(g))
            masks[rows] = transform_policy(masks[rows], int(g))
            policies[rows] = transform_policy(policies[rows], int(g))
        return planes, masks, policies, values

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
                f"resume with the run's own replay.capacity"
            )
        n = len(state["values"])
        self.planes[:n] = state["planes"]
        self.masks[:n] = state["masks"]
        self.policies[:n] = state["policies"]
        self.values[:n] = state["values"]
        self.size, self.next, self.total_added = n, int(state["next"]), int(state["total_added"])

