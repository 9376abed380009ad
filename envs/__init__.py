"""Order and Chaos environments: the rules engine and thin adapters over it.

Importing ``envs`` registers the Gymnasium id ``OrderChaos-v0`` (single env and native
vector env). Torch is never imported here; the batch engine loads it only for
``backend="torch"``.
"""

from envs.batch import BatchGame
from envs.encoding import OBS_SHAPE, OBS_VERSION, action_mask, encode_state, encode_states
from envs.order_chaos import ENV_ID, OrderChaosEnv, register_envs
from envs.rules import (
    ACTIONS,
    AGENTS,
    CELLS,
    CHAOS,
    ORDER,
    BoardStringError,
    IllegalActionError,
    State,
    parse_board,
    render_ascii,
)
from envs.single_seat import SingleSeatEnv
from envs.vector import OrderChaosVectorEnv

register_envs()


def aec_env(**kwargs):  # noqa: ANN201 - the PettingZoo import stays lazy
    """A PettingZoo AEC env of Order and Chaos (see :func:`envs.aec.aec_env`)."""
    from envs.aec import aec_env as make_aec_env

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
    "parse_board",
    "render_ascii",
]
