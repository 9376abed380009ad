"""Players without an account: a display name for the id the browser keeps, and the ratings of
games between people.

A player is the anonymous id the page makes once and keeps (the puzzle rating's id,
:data:`orderchaos.web.puzzles.PLAYER_ID`); nothing else identifies them, so the id is never
shown to anyone else: other people see the display name. The first name is generated from the
id (:func:`generated_name`: an adjective, a noun and two digits, the same for the same id);
the person may choose another, which :func:`name_refusal` checks (length, characters, no
imitation of a bot or of the house's players) and the store checks for uniqueness, letter
case ignored.

Games between two people on the clock are rated per category (:data:`CATEGORIES`) with
Glicko-2 (:mod:`orderchaos.arena.glicko2`), each game a rating period of one game against
the opponent's rating before it (:func:`rate_game`). A rating whose deviation is above
:data:`PROVISIONAL_RD` is provisional and shown with a "?".
"""

from __future__ import annotations

import hashlib
import re

from orderchaos.agents.registry import REGISTRY
from orderchaos.arena.glicko2 import MIN_DEVIATION, Rating, update

PLAYER_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")
"""What a player id looks like: the page makes 22 URL-safe characters of 128 random bits."""
CATEGORIES: dict[str, str] = {"1+0": "bullet", "3+2": "blitz", "5+3": "blitz", "10+5": "rapid"}
"""The rated category of each time control the page offers; a game without a clock has none."""
CATEGORY_NAMES = ("bullet", "blitz", "rapid")
"""The categories, fastest first."""
PROVISIONAL_RD = 110.0
"""A rating whose deviation is above this is provisional (shown with a "?"): a newcomer's
350 falls below it after about ten games against established players (deviation 60),
won and lost in turn."""
NAME_MIN, NAME_MAX = 3, 20
"""The length of a display name, in characters."""
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
"""What a display name is made of: ASCII letters and digits, ``_`` and ``-`` after the first."""
LEVEL_NAMES = ("easy", "medium", "hard", "strongest")
"""The computer's levels on the page (:data:`orderchaos.web.services.LEVELS`)."""
HOUSE_WORDS = ("bot", "computer", "engine", "house", "admin", "orderchaos", "order", "chaos")
"""Words a person's name may not be: the house's players, the sides and the site."""
ADJECTIVES = (
    "amber", "bold", "brave", "bright", "calm", "clever", "cosy", "crisp", "daring", "eager",
    "fair", "fleet", "gentle", "glad", "golden", "grand", "green", "happy", "honest", "keen",
    "kind", "lively", "lucky", "merry", "mild", "nimble", "noble", "patient", "plucky", "proud",
    "quick", "quiet", "rapid", "ready", "silver", "sly", "steady", "sunny", "swift", "tidy",
    "true", "vivid", "warm", "wise", "witty", "young", "zesty", "jolly",
)
NOUNS = (
    "otter", "falcon", "badger", "heron", "lynx", "marten", "puffin", "raven", "salmon", "seal",
    "sparrow", "stoat", "swan", "tern", "trout", "walrus", "wren", "beaver", "bison", "crane",
    "dolphin", "eagle", "ferret", "finch", "fox", "gecko", "hare", "hawk", "ibis", "koala",
    "lark", "lemur", "moose", "newt", "owl", "panda", "pike", "quail", "robin", "shrew",
    "tapir", "toad", "vole", "whale", "yak", "zebra", "elk", "orca",
)


def category_of(time_control: str | None) -> str | None:
    """The rated category of a time control's name (``"3+2"`` -> ``"blitz"``), None without one."""
    return CATEGORIES.get(time_control) if time_control else None


def generated_name(player: str, attempt: int = 0) -> str:
    """The name a new player gets: an adjective, a noun and two digits drawn from a hash of
    their id (``attempt`` > 0: the next choice, when an earlier one is taken; from the third
    on, more digits)."""
    digest = hashlib.sha256(f"{player}/{attempt}".encode()).digest()
    adjective = ADJECTIVES[digest[0] % len(ADJECTIVES)].capitalize()
    noun = NOUNS[digest[1] % len(NOUNS)].capitalize()
    digits = int.from_bytes(digest[2:6], "big") % (100 if attempt < 3 else 100_000)
    return f"{adjective}{noun}{digits:02d}"


def house_names() -> set[str]:
    """The names of the house's players in lower case: the computer's levels and agents."""
    agents = {name.split(":")[0].lower() for name in REGISTRY}
    return agents | set(LEVEL_NAMES) | set(HOUSE_WORDS)


def name_refusal(name: object) -> str | None:
    """Why ``name`` cannot be a person's display name, as the coded error's code, or None
    when it may be (uniqueness is the store's to check): ``name_length``, ``name_chars``,
    ``name_reserved`` (a bot's or a house player's name, or one ending in "bot")."""
    if not isinstance(name, str) or not NAME_MIN <= len(name) <= NAME_MAX:
        return "name_length"
    if not NAME_PATTERN.fullmatch(name):
        return "name_chars"
    key = name_key(name)
    bare = key.rstrip("0123456789_-")
    if key.endswith("bot") or bare.endswith("bot") or key in house_names() or bare in house_names():
        return "name_reserved"
    return None


def name_key(name: str) -> str:
    """What two names are compared by: letter case ignored."""
    return name.casefold()


def score(winner: str, role: str) -> float:
    """The score of the side ``role`` in a game ``winner`` won: 1 or 0 (there are no draws)."""
    return 1.0 if winner == role else 0.0


def rate_game(order: Rating, chaos: Rating, winner: str) -> tuple[Rating, Rating]:
    """Both players' ratings after one rated game (each a one-game period against the other's
    rating before it), deviations kept at least :data:`MIN_DEVIATION`."""
    new_order = update(order, [(chaos, score(winner, "order"))])
    new_chaos = update(chaos, [(order, score(winner, "chaos"))])
    return _floored(new_order), _floored(new_chaos)


def _floored(rating: Rating) -> Rating:
    return rating if rating.rd >= MIN_DEVIATION else Rating(rating.r, MIN_DEVIATION, rating.sigma)


def provisional(rd: float) -> bool:
    """Whether a rating with deviation ``rd`` is provisional (shown with a "?")."""
    return rd > PROVISIONAL_RD


def shown_rating(r: float, rd: float) -> str:
    """A rating as people see it: rounded, with "?" while provisional."""
    return f"{round(r)}{'?' if provisional(rd) else ''}"


PAIRING_WINDOW = 100.0
"""Rating points apart two people may be to be paired at once in "Play anyone"."""
PAIRING_WIDENING = 50.0
"""Rating points the window widens by for each second the longer waiter has waited."""


def pairing_window(waited: float) -> float:
    """How far apart in rating two seekers may be once the longer of them has waited
    ``waited`` seconds: :data:`PAIRING_WINDOW`, widening by :data:`PAIRING_WIDENING` a second."""
    return PAIRING_WINDOW + PAIRING_WIDENING * max(0.0, waited)
