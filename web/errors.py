"""The one error the web server sends back to a page."""

from __future__ import annotations

from typing import Any


class WebError(ValueError):
    """A request that cannot be carried out. ``str()`` is the English text; ``code``
    names the kind of error, so the page can show it in the reader's language (its
    catalogues hold ``error.<code>``, with ``{name}`` filled from ``args``)."""

    def __init__(self, message: str, code: str = "other", **args: Any) -> None:
        super().__init__(message)
        self.code = code
        self.args_ = args

    def payload(self, mode: str | None = None) -> dict[str, Any]:
        """The ``error`` message for the page."""
        out: dict[str, Any] = {"type": "error", "message": str(self), "code": self.code, "args": self.args_}
        if mode is not None:
            out["mode"] = mode
        return out


class TimedOut(WebError):
    """Work that ran past its time limit; it was asked to stop."""


class Busy(WebError):
    """The server is at one of its caps (connections, games, searches)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"the server is busy ({what}); try again in a minute", "busy")


class StoreFull(WebError):
    """The game store refused a write: its disk is full or read-only. Nothing of the request
    was saved; ``/healthz`` says 503 until it takes writes again."""

    def __init__(self) -> None:
        super().__init__("the server cannot save games just now (its disk is full); nothing of this was saved",
                         "store_full")


class StoreAway(WebError):
    """The game store's database does not answer just now (PostgreSQL restarting or out of
    reach); nothing of the request was committed."""

    def __init__(self) -> None:
        super().__init__("the game store cannot be reached just now; try again in a moment", "store_unavailable")
