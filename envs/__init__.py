"""Order and Chaos environments: the rules engine and thin adapters over it."""

from envs.encoding import OBS_SHAPE, OBS_VERSION, action_mask, encode_state, encode_states
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

__all__ = [
    "ACTIONS",
    "AGENTS",
    "CELLS",
    "CHAOS",
    "ORDER",
    "OBS_SHAPE",
    "OBS_VERSION",
    "BoardStringError",
    "IllegalActionError",
    "State",
    "action_mask",
    "encode_state",
    "encode_states",
    "parse_board",
    "render_ascii",
]
