"""Order and Chaos environments: the rules engine and thin adapters over it.

Importing ``envs`` registers the Gymnasium id ``OrderChaos-v0`` (single env and native
vector env). Torch is never imported here; the batch engine loads it only for
``backend="torch"``.
"""

from orderchaos.envs.batch import BatchGame
from orderchaos.envs.encoding import OBS_SHAPE, OBS_VERSION, action_mask, encode_state, encode_states
from orderchaos.envs.order_chaos import ENV_ID, OrderChaosEnv, register_envs
from orderchaos.envs.rules import (
    ACTIONS,
    AGENTS,
    CELLS,
    CHAOS,
    ORDER,
    BoardStringError,
    IllegalActionError,
    State,
    check_reachable,
    parse_board,
    render_ascii,
    unreachable_reason,
)
from orderchaos.envs.single_seat import SingleSeatEnv
from orderchaos.envs.vector import OrderChaosVectorEnv

register_envs()


def aec_env(**kwargs):  # noqa: ANN201 - the PettingZoo import stays lazy
    """A PettingZoo AEC env of Order and Chaos (see :func:`orderchaos.envs.aec.aec_env`)."""
    from orderchaos.envs.aec import aec_env as make_aec_env

    return make_aec_env(**kwargs)


__all__ = [
    "ACTIONS",
    "AGENTS",
    "CELLS",
    "CHAOS",
    "ENV_ID",
    "ORDER",
    "OBS_SHAPE",
    "OBS_VERSION",
    "BatchGame",
    "BoardStringError",
    "IllegalActionError",
    "OrderChaosEnv",
    "OrderChaosVectorEnv",
    "SingleSeatEnv",
    "State",
    "action_mask",
    "aec_env",
    "encode_state",
    "encode_states",
    "check_reachable",
    "parse_board",
    "unreachable_reason",
    "render_ascii",
]
