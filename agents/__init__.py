"""Players for Order and Chaos, each behind the small ``Agent`` interface."""

from orderchaos.agents.base import Agent, Evaluator, PolicyAgent, make_rng
from orderchaos.agents.registry import SpecError, accepted_specs, make

__all__ = ["Agent", "Evaluator", "PolicyAgent", "SpecError", "accepted_specs", "make", "make_rng"]
