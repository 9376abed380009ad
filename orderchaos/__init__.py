"""Order and Chaos: a rules engine, Gymnasium and PettingZoo environments, search players up
to an exact solver, self-play training and the tools to measure strength.

``import orderchaos`` registers the Gymnasium id ``OrderChaos-v0`` and stays light: it loads
numpy and gymnasium, never torch, ray or the web stack. The rooms of the namespace are
imported on first use (``orderchaos.agents.make("heuristic")`` works after a bare
``import orderchaos``):

=====================  ===================================================================
``orderchaos.envs``    the rules (``State``), symmetries, encoding, batch engine, envs
``orderchaos.agents``  players behind one interface, MCTS, the solver, networks
``orderchaos.train``   configs, self-play trainers, replay buffers, checkpoints
``orderchaos.arena``   matches, game files, tournaments, position sets, mistake finding
``orderchaos.bench``   benchmarks that print figures against peers
``orderchaos.cli``     the ``orderchaos`` command
=====================  ===================================================================
"""

from __future__ import annotations

import importlib
from types import ModuleType

from orderchaos import envs

__version__ = "0.2.0"

_ROOMS = ("agents", "train", "arena", "bench", "cli")


def __getattr__(name: str) -> ModuleType:
    if name in _ROOMS:
        return importlib.import_module(f"orderchaos.{name}")
    raise AttributeError(f"module 'orderchaos' has no attribute {name!r}")


__all__ = ["envs", *_ROOMS, "__version__"]
