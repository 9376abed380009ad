"""The bot protocol, version :data:`PROTOCOL_VERSION`: the messages a bot and the site send
each other over ``/api/bot/ws`` (docs/bots.md), shared by the server (:mod:`.bot_hub`) and the
client (:mod:`.bot_client`).

Each message is one JSON object with a ``type``; :data:`SCHEMAS` holds a JSON Schema for every
message in either direction, and docs/bots.md shows them. What a bot sends is read by
:func:`decode`: the same checks as a page's messages (:func:`.protocol.decode`: size, nesting,
integer digits, known type and fields) against :data:`FIELDS`.

A move is an ``action`` in the project's contract (``a = 2*c + s``, ``c = row*6 + col``,
``s`` 0 for X and 1 for O) or a ``text`` such as ``"c3 X"``.
"""

from __future__ import annotations

from typing import Any

from orderchaos.web.protocol import decode as decode_message, message_fields

PROTOCOL_VERSION = 1
"""Raised whenever a message changes in a way an older bot would misread."""
PATH = "/api/bot/ws"
"""Where a bot connects."""
MAX_MESSAGE_BYTES = 4096
"""The largest message a bot may send; a longer one is refused with ``too_large``."""

FIELDS: dict[str, frozenset[str]] = message_fields({
    "challenge": "opponent time_control rated side",
    "accept": "challenge",
    "decline": "challenge reason",
    "move": "game action text",
    "resign": "game",
    "games": "",
})
"""What a bot may send, and each message's fields."""

_NAME = {"type": "string", "minLength": 2, "maxLength": 30}
_ROLE = {"enum": ["order", "chaos"]}
_TIME_CONTROL = {"type": "string", "description": "a preset such as \"1+0\", \"3+2\", or \"none\""}
_GAME = {"type": "string", "minLength": 16, "maxLength": 64}
_CLOCK = {
    "type": ["object", "null"],
    "description": "null: no clock",
    "properties": {
        "control": _TIME_CONTROL,
        "order": {"type": "number", "description": "Order's seconds left now"},
        "chaos": {"type": "number", "description": "Chaos's seconds left now"},
        "increment": {"type": "number"},
        "running": {"enum": ["order", "chaos", None]},
    },
    "required": ["control", "order", "chaos", "increment", "running"],
    "additionalProperties": False,
}
_OPPONENT = {
    "type": "object",
    "properties": {"name": {"type": ["string", "null"]}, "bot": {"type": "boolean"}},
    "required": ["name", "bot"],
    "additionalProperties": False,
}


def _message(kind: str, properties: dict[str, Any], required: list[str], doc: str) -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": kind,
        "description": doc,
        "type": "object",
        "properties": {"type": {"const": kind}, **properties},
        "required": ["type", *required],
        "additionalProperties": False,
    }


TO_BOT: dict[str, dict[str, Any]] = {
    "hello": _message("hello", {
        "protocol": {"const": PROTOCOL_VERSION},
        "bot": _NAME,
        "rating": {"type": "number"},
        "games": {"type": "array", "items": _GAME, "description": "the unfinished games the bot is seated in"},
        "limits": {"type": "object", "additionalProperties": {"type": "number"}},
    }, ["protocol", "bot", "rating", "games", "limits"], "The first message after the handshake."),
    "challenge": _message("challenge", {
        "id": {"type": "string"},
        "from": {"type": "string", "description": "bot:NAME for a bot, \"person\" for a person"},
        "rated": {"type": "boolean"},
        "time_control": _TIME_CONTROL,
    }, ["id", "from", "rated", "time_control"], "Someone challenges the bot: answer accept or decline."),
    "declined": _message("declined", {
        "challenge": {"type": "string"},
        "reason": {"type": "string"},
    }, ["challenge", "reason"], "A challenge the bot sent was declined, or expired unanswered."),
    "challenge_sent": _message("challenge_sent", {
        "challenge": {"type": "string"}, "opponent": _NAME,
    }, ["challenge", "opponent"], "The bot's challenge went to its opponent."),
    "game_start": _message("game_start", {
        "game": _GAME,
        "seat": _ROLE,
        "opponent": _OPPONENT,
        "rated": {"type": "boolean"},
        "time_control": _TIME_CONTROL,
    }, ["game", "seat", "opponent", "rated", "time_control"], "A game the bot is seated in (again after a reconnect)."),
    "game_state": _message("game_state", {
        "game": _GAME,
        "seat": _ROLE,
        "actions": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 71}},
        "board": {"type": "string", "pattern": "^[XO.]{36}$"},
        "to_play": {"enum": ["order", "chaos", None]},
        "clock": _CLOCK,
        "over": {"type": "boolean"},
        "winner": {"enum": ["order", "chaos", None]},
        "reason": {"enum": ["five", "full_board", "resign", "time", "aborted", None]},
    }, ["game", "seat", "actions", "board", "to_play", "clock", "over", "winner", "reason"],
        "The position after every move, and once more when the game ends."),
    "error": _message("error", {
        "code": {"type": "string"},
        "message": {"type": "string"},
        "game": {"type": "string"},
        "args": {"type": "object"},
    }, ["code", "message"], "What was wrong with the bot's last message (nothing changed), or why the site closes."),
}
"""Every message the site sends a bot."""

FROM_BOT: dict[str, dict[str, Any]] = {
    "challenge": _message("challenge", {
        "opponent": _NAME,
        "time_control": _TIME_CONTROL,
        "rated": {"type": "boolean"},
        "side": {"enum": ["order", "chaos", "random"], "description": "the challenger's side (default random)"},
    }, ["opponent", "time_control"], "Challenge another bot (or a house bot) to a game."),
    "accept": _message("accept", {"challenge": {"type": "string"}}, ["challenge"], "Accept a challenge."),
    "decline": _message("decline", {"challenge": {"type": "string"}, "reason": {"type": "string"}},
                        ["challenge"], "Decline a challenge."),
    "move": _message("move", {
        "game": _GAME,
        "action": {"type": "integer", "minimum": 0, "maximum": 71, "description": "a = 2*c + s"},
        "text": {"type": "string", "maxLength": 40, "description": "a move such as \"c3 X\""},
    }, ["game"], "The bot's move: an action or a text, one of the two."),
    "resign": _message("resign", {"game": _GAME}, ["game"], "Give up a game."),
    "games": _message("games", {}, [], "Ask for game_start and game_state of every game the bot is seated in."),
}
"""Every message a bot may send."""

SCHEMAS = {"to_bot": TO_BOT, "from_bot": FROM_BOT}
assert set(FROM_BOT) == set(FIELDS) and all(
    set(FROM_BOT[k]["properties"]) == FIELDS[k] for k in FIELDS), "FIELDS and FROM_BOT disagree"


def decode(text: str | None) -> dict[str, Any]:
    """A bot's message, checked as a page's are (:func:`.protocol.decode`) against
    :data:`FIELDS` and :data:`MAX_MESSAGE_BYTES`; raises WebError."""
    return decode_message(text, MAX_MESSAGE_BYTES, 0, fields=FIELDS)
