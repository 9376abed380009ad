"""Build any player from a spec string: ``name`` or ``name:key=value,key=value``.

The same strings are accepted by the CLI (``--order``, ``--chaos``, ``--vs``, ``--agent``).
Factories are imported lazily, so that making a ``random`` agent never imports torch.

A spec whose name is an existing directory is a training run directory (or any folder
with a saved policy); it accepts the same parameters as ``pretrained``.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import Any

from orderchaos.agents.base import Agent, SeedLike


@dataclass(frozen=True)
class FactoryInfo:
    """Where an agent's factory lives and which parameters it accepts (name -> type).

    ``ranges`` gives, for every parameter, the inclusive range of accepted values, checked
    when a spec is resolved (so that a bad value, ``nan`` or ``inf`` included, is refused
    in one line before any game starts).
    ``roles``: the sides the player can play (:func:`check_role` refuses the others).
    """

    target: str
    params: dict[str, type]
    help: str
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    roles: tuple[str, ...] = ("order", "chaos")


_NETWORK_OPTIONS = {
    "sims": int, "temp": float, "c": float, "seed": int, "solver": int, "sym": int, "avoid": int, "recheck": int,
}
MAX_SIMS = 1_000_000
"""The most search simulations per move a spec may ask for (the config's cap too)."""
MAX_MOVE_SECONDS = 86_400
"""A day: the longest time per move a spec may give."""
_SEED_RANGE = (0, 2**63 - 1)
_TIME_RANGE = (0.001, MAX_MOVE_SECONDS)
_C_RANGE = (0.001, 1000)
_NETWORK_RANGES = {
    "sims": (0, MAX_SIMS), "temp": (0, 100), "c": _C_RANGE, "seed": _SEED_RANGE,
    "solver": (0, 36), "sym": (1, 16), "avoid": (0, 10**9), "recheck": (0, 10**9),
}
_ZERO_MEANS = {"solver": "no solver", "avoid": "no check", "recheck": "one pass of the check"}
"""What 0 means for the network options whose range starts there."""

REGISTRY: dict[str, FactoryInfo] = {
    "random": FactoryInfo("orderchaos.agents.simple:RandomAgent", {"seed": int}, "uniform over legal actions",
                          {"seed": _SEED_RANGE}),
    "heuristic": FactoryInfo(
        "orderchaos.agents.simple:HeuristicAgent", {"seed": int}, "fast rule-based baseline for both roles",
        {"seed": _SEED_RANGE},
    ),
    "mcts": FactoryInfo(
        "orderchaos.agents.mcts:MCTSAgent",
        {"sims": int, "c": float, "seed": int, "time": float},
        "UCT with random rollouts and MCTS-Solver backups",
        {"sims": (1, MAX_SIMS), "c": _C_RANGE, "seed": _SEED_RANGE, "time": _TIME_RANGE},
    ),
    "solver": FactoryInfo(
        "orderchaos.agents.solver:SolverAgent",
        {"time": float, "seed": int},
        "exact solver; when the time limit is hit, falls back to a tactical move (take a five, block a four)",
        {"time": _TIME_RANGE, "seed": _SEED_RANGE},
    ),
    "strategy": FactoryInfo(
        "orderchaos.agents.strategy:StrategyAgent", {},
        "Order only: the central-pairing strategy, which wins every game from the empty board",
        roles=("order",),
    ),
    "strategy:extended": FactoryInfo(
        "orderchaos.agents.pairing_extended:ExtendedStrategyAgent", {},
        "Order only: the strategy, and where its plain rule does not cover the position (after a "
        "border first move, say) the extended pairing rule (equal pairs, open half pairs) where that covers it",
        roles=("order",),
    ),
    "pretrained": FactoryInfo(
        "orderchaos.agents.network_agent:pretrained_agent",
        _NETWORK_OPTIONS,
        "the shipped Order and Chaos policies; sims>0 adds PUCT search; solver=D adds the proof "
        "book at the root and the exact solver at positions with at most D empty cells (avoid=N: "
        "solver nodes for Chaos's check of its move, 0: off; recheck=N: for its second pass, 0: "
        "one pass); sym=8 "
        "or 16 averages the networks over the board symmetries (16: and with X and O swapped)",
        _NETWORK_RANGES,
    ),
    "repaired": FactoryInfo(
        "orderchaos.agents.network_agent:repaired_agent",
        _NETWORK_OPTIONS,
        "the shipped policies with the Order network after orderchaos repair --border-moves 1 "
        "(no refutation when Chaos plays at most one border cell while the centre is open); "
        "the same options as pretrained",
        _NETWORK_RANGES,
    ),
}
RUN_DIR = FactoryInfo(
    "orderchaos.agents.network_agent:run_dir_agent",
    _NETWORK_OPTIONS,
    "a training run directory; sims>0 adds PUCT search; solver=D, avoid=N, recheck=N and sym=N as for pretrained",
    _NETWORK_RANGES,
)


class SpecError(ValueError):
    """An agent spec that cannot be built; the message lists what is accepted."""


def accepted_specs() -> str:
    """A one-line summary of the accepted spec names and their parameters."""
    parts = [f"{n}[:{','.join(f'{p}=' for p in i.params)}]" for n, i in REGISTRY.items()]
    return ", ".join(parts) + ", or a training run directory"


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``name:k=v,k=v`` into the name and a dict of raw string values."""
    if not isinstance(spec, str) or not spec.strip():
        raise SpecError(f"empty agent spec; accepted: {accepted_specs()}")
    spec = spec.strip()
    name, params_text = spec, ""
    if ":" in spec:
        head, tail = spec.rsplit(":", 1)
        if "=" in tail or tail == "":
            name, params_text = head.strip(), tail
    params: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in params_text.split(","))):
        if "=" not in item:
            raise SpecError(f"bad parameter {item!r} in agent spec {spec!r}: expected key=value")
        key, value = (s.strip() for s in item.split("=", 1))
        if key in params:
            raise SpecError(f"parameter {key!r} given twice in agent spec {spec!r}")
        params[key] = value
    return name, params


def _convert(spec: str, key: str, raw: str, kind: type) -> Any:
    try:
        return kind(raw)
    except ValueError:
        raise SpecError(
            f"parameter {key}={raw!r} in agent spec {spec!r} must be {kind.__name__}"
        ) from None


def resolve(spec: str) -> tuple[FactoryInfo, str, dict[str, Any]]:
    """Validate a spec: returns the factory info, the name, and typed parameters."""
    name, raw = parse_spec(spec)
    if name in REGISTRY:
        info = REGISTRY[name]
    elif os.path.isdir(name):
        info = RUN_DIR
    else:
        raise SpecError(f"unknown agent {name!r}; accepted: {accepted_specs()}")
    params: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in info.params:
            accepted = ", ".join(info.params) or "none"
            raise SpecError(
                f"unknown parameter {key!r} for agent {name!r}; accepted parameters: {accepted}"
            )
        params[key] = _convert(spec, key, value, info.params[key])
        if key in info.ranges:
            low, high = info.ranges[key]
            if not low <= params[key] <= high:
                raise SpecError(
                    f"parameter {key}={value!r} in agent spec {spec!r} must be from {low:,} to {high:,}"
                    + (f" (0: {_ZERO_MEANS.get(key, 'off')})" if low == 0 else "")
                )
    return info, name, params


def check_role(spec: str, role: str) -> None:
    """Raise SpecError when the player ``spec`` names cannot play ``role`` ("order" or
    "chaos"), e.g. ``strategy`` as Chaos; also when the spec itself is bad."""
    info, name, _ = resolve(spec)
    if role not in info.roles:
        raise SpecError(f"agent {name!r} plays {' and '.join(info.roles)} only, not {role}")


def make(spec: str, *, seed: SeedLike = None) -> Agent:
    """Build an agent from a spec string such as ``"mcts:sims=800,c=1.4,seed=3"``.

    ``seed`` seeds agents that use randomness unless the spec gives its own ``seed=``.
    Raises SpecError (a ValueError) naming the accepted specs or parameters.
    """
    info, name, params = resolve(spec)
    module_name, attr = info.target.split(":")
    factory = getattr(importlib.import_module(module_name), attr)
    if "seed" in info.params and "seed" not in params and seed is not None:
        params["seed"] = seed
    if info is RUN_DIR:
        agent = factory(name, **params)
    else:
        agent = factory(**params)
    return agent
