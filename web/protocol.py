"""Reading one WebSocket message safely: limits on size, nesting and integer digits, the
known message types and their fields, and a per-connection rate limit.

Whatever a client sends, :func:`decode` either returns a flat JSON object of a known type
with only that type's fields, or raises :class:`~orderchaos.web.errors.WebError` with a
short reason; nothing here can raise anything else, so a bad message never closes the
connection.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

from orderchaos.web.errors import WebError

MAX_DEPTH = 3
"""JSON nesting allowed: a message is one object of plain values."""
MAX_INT_DIGITS = 12
"""Digits an integer may have; no field needs more."""

FIELDS: dict[str, frozenset[str]] = {
    name: frozenset(fields.split()) | {"type"}
    for name, fields in {
        "new_game": "side opponent time_control",
        "play_friend": "side time_control",
        "open": "game token invite",
        "leave": "",
        "move": "cell symbol text",
        "undo": "",
        "resign": "",
        "retry": "",
        "hint": "",
        "state": "",
        "rematch": "",
        "study_game": "",
        "watch": "order chaos delay_ms",
        "pause": "",
        "resume": "",
        "step": "",
        "speed": "delay_ms",
        "list_files": "",
        "open_file": "name",
        "upload": "name content",
        "analyse": "game",
        "lobby": "",
        "challenge": "side time_control rated",
        "accept": "challenge",
        "cancel": "challenge",
        "play_anyone": "time_control rated",
        "identify": "player",
        "rename": "name",
        "live": "",
        "challenge_bot": "bot time_control",
    }.items()
}
"""Each message type and the fields it may carry."""


def message_fields(table: dict[str, str]) -> dict[str, frozenset[str]]:
    """Each message type's fields (``"side time_control"``) as a set, with ``type``: a
    table like :data:`FIELDS` for another protocol (the bots')."""
    return {name: frozenset(fields.split()) | {"type"} for name, fields in table.items()}


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


class _Refused(ValueError):
    pass


def _refuse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"a number with more than {MAX_INT_DIGITS} digits")
    return int(text)


def _refuse_constant(text: str) -> float:
    raise _Refused(f"{text} is not a number here")


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text, strings skipped (for text that is
    not valid JSON the answer is an upper bound good enough to refuse it)."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def decode(text: str | None, max_bytes: int, max_upload_bytes: int,
           fields: dict[str, frozenset[str]] = FIELDS) -> dict[str, Any]:
    """The message in ``text``, checked: JSON text of at most ``max_bytes`` bytes (an
    ``upload`` up to twice ``max_upload_bytes`` plus room for its fields), nested at most
    :data:`MAX_DEPTH` deep, integers of at most :data:`MAX_INT_DIGITS` digits, an object of
    a known ``type`` whose fields are that type's and hold no lists or objects. ``fields``:
    the known types and their fields (the page's by default; the bots' protocol has its own)."""
    if text is None:
        raise WebError("binary messages are not accepted: send JSON text", "binary")
    size = len(text.encode())
    upload_room = 2 * max_upload_bytes + 64 * 1024 if "upload" in fields else 0
    if size > max(max_bytes, upload_room):
        raise WebError(f"message too large ({size} bytes); the limit is {max_bytes} bytes", "too_large")
    if nesting_depth(text) > MAX_DEPTH:
        raise WebError(f"message nested too deeply: at most {MAX_DEPTH} levels", "bad_message")
    try:
        msg = json.loads(text, parse_int=_refuse_int, parse_constant=_refuse_constant)
    except _Refused as exc:
        raise WebError(f"malformed message: {exc}", "bad_message") from None
    except (ValueError, RecursionError) as exc:
        where = f" ({exc.msg} at column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise WebError(f"malformed message: not JSON{where}", "bad_message") from None
    if not isinstance(msg, dict):
        raise WebError("a message must be a JSON object with a 'type'", "bad_message")
    kind = msg.get("type")
    if not isinstance(kind, str) or kind not in fields:
        raise WebError(
            f"unknown message type {str(kind)[:40]!r}; expected one of: {', '.join(fields)}", "bad_message"
        )
    if size > max_bytes and kind != "upload":
        raise WebError(f"message too large ({size} bytes); the limit is {max_bytes} bytes", "too_large")
    unknown = sorted(set(msg) - fields[kind])
    if unknown:
        allowed = ", ".join(sorted(fields[kind] - {"type"})) or "none"
        raise WebError(
            f"unknown field {unknown[0][:40]!r} in '{kind}'; its fields: {allowed}", "bad_message"
        )
    for name, value in msg.items():
        if isinstance(value, (list, dict)):
            raise WebError(f"field '{name}' must be a string or a number, not a list or object", "bad_message")
    return msg


class RateLimit:
    """A token bucket: ``rate`` messages a second on average, bursts of up to ``burst``."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens = float(burst)
        self.stamp = clock()

    def allow(self) -> bool:
        """Take one token; False (and nothing taken) when the bucket is empty."""
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True
