"""The small interfaces every player and every search evaluator implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from orderchaos.envs.rules import State

SeedLike = int | np.random.Generator | None
"""What a randomised agent accepts: an int seed, a numpy Generator, or None (seed 0)."""


def make_rng(seed: SeedLike) -> np.random.Generator:
    """A numpy Generator from a seed-like value. None means seed 0, so that nothing is
    ever drawn from unseeded or global random state."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(0 if seed is None else seed)


@runtime_checkable
class Agent(Protocol):
    """A player: ``act(state)`` returns an action (0..71) for the side to move.

    Agents that have a policy also offer ``policy(state)``: a 72-long float vector of
    probabilities, zero on illegal actions.
    """

    name: str

    def act(self, state: State) -> int:
        """Choose a legal action for ``state.to_play``."""
        ...


@runtime_checkable
class PolicyAgent(Agent, Protocol):
    """An agent that can also report its move probabilities."""

    def policy(self, state: State) -> np.ndarray:
        """A 72-long probability vector over actions (zeros on illegal actions)."""
        ...


@runtime_checkable
class Evaluator(Protocol):
    """Leaf evaluator for tree search, as in OpenSpiel's ``mcts.Evaluator``.

    ``evaluate`` takes a batch of non-terminal states (possibly from many different trees)
    and returns ``(priors, values)``:

    * ``priors``: float32 array ``(B, 72)``, a probability vector over each state's legal
      actions (zeros elsewhere);
    * ``values``: float32 array ``(B,)`` in [-1, 1], the expected outcome for the player to
      move in each state.
    """

    def evaluate(self, states: Sequence[State]) -> tuple[np.ndarray, np.ndarray]:
        """Evaluate a batch of states; see the class docstring."""
        ...


@runtime_checkable
class ProvingEvaluator(Evaluator, Protocol):
    """An evaluator that can also settle some leaves exactly (as
    :class:`orderchaos.agents.solver_assisted.SolverLeafEvaluator` does with the solver).

    ``evaluate_with_proofs`` returns ``(priors, values, proven)``, where ``proven`` is an
    int8 array ``(B,)``: +1 when the player to move in that state provably wins, -1 when it
    provably loses, 0 when unknown (its value is then an estimate). Where ``proven`` is
    nonzero the value must equal it. :class:`orderchaos.agents.mcts.MCTS` uses this method
    when the evaluator has it: it marks the proven leaves in the tree (MCTS-Solver), so
    their results back up as proofs and the search never enters them again.
    """

    def evaluate_with_proofs(
        self, states: Sequence[State]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Priors, values and proven flags for a batch of states; see the class docstring."""
        ...
