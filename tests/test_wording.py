"""The repository speaks of the project, not of how it was worked on.

The rule, checked over every tracked text file (docs, configs, the CI script, the web page's
files, and the prose of Python files: comments, docstrings, help texts and other strings):

* The word "session" is a period of work (numbered, or "the fourth" one) unless the word
  before it names the kind of session the software has: a web, browser, terminal, scripted,
  play, game, Ray, HTTP, login, user, interactive or pytest session. In Python, only comments
  and strings are read, so identifiers (``play_session``, the ``sessions`` module) never count,
  and neither does a string that is one bare word (``scope="session"``). In other files a
  "session" written as part of a name (``.sessions``, ``session_id``, ``session.run``) does not
  count either.
* An issue tracker's numbers and possessives ("issue 15", "the issue's target") are how the
  work was organised, not what the project does: a target is stated as a target.
* Phrases that date a text by the work that made it ("as runs made before it did", "before the
  stage sets shipped") say instead what the thing is.
"""

from __future__ import annotations

import io
import re
import subprocess
import tokenize
from pathlib import Path


from helpers import REPO

TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".html", ".js", ".css", ".cfg", ".sh"}
EXTRA_FILES = {".ci/run"}
SESSION_KINDS = {
    "web", "browser", "terminal", "scripted", "play", "game", "ray", "http", "login", "user",
    "interactive", "pytest",
}
SESSION = re.compile(r"(?<![._/\w])sessions?(?![_\w(]|\.\w)", re.IGNORECASE)
WORD_BEFORE = re.compile(r"([A-Za-z]+)[\s-]*$")
PHRASES = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bissue\s+#?\d+",
        r"\bissue's\b",
        r"\bas runs made before\b",
        r"\bbefore the stage sets shipped\b",
        r"\b(?:this|last|next|previous|earlier|first|second|third|fourth|fifth) round of work\b",
    )
]
QUOTES_THE_RULE = {"tests/test_wording.py"}
"""This file, which quotes the wording it looks for."""


def tracked_text_files() -> list[str]:
    """The repository's tracked text files, relative to its root."""
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True)
    names = [n for n in out.stdout.splitlines() if Path(n).suffix in TEXT_SUFFIXES or n in EXTRA_FILES]
    return [n for n in names if (REPO / n).is_file()]


def prose_of_python(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and string literal of a Python source, except strings
    that are one bare word."""
    out: list[tuple[int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], tok.string))
        elif tok.type == tokenize.STRING:
            if re.fullmatch(r"[rbuRBUfF]*(['\"]{1,3})\w*\1", tok.string):
                continue
            out.append((tok.start[0], tok.string))
    return out


def _matches(text: str) -> list[tuple[int, str]]:
    """(offset, phrase) of each place in ``text`` that speaks of how the project was worked on."""
    found = []
    for m in SESSION.finditer(text):
        before = WORD_BEFORE.search(text[max(0, m.start() - 40): m.start()])
        if before is None or before.group(1).lower() not in SESSION_KINDS:
            found.append((m.start(), text[max(0, m.start() - 30): m.end() + 10].replace("\n", " ")))
    for pattern in PHRASES:
        found += [(m.start(), m.group(0)) for m in pattern.finditer(text)]
    return found


def process_wording(text: str) -> list[str]:
    """The phrases of ``text`` that speak of how the project was worked on."""
    return [phrase for _, phrase in _matches(text)]


def findings(name: str) -> list[str]:
    """Every process wording in one tracked file, as ``path:line: phrase``."""
    text = (REPO / name).read_text(encoding="utf-8")
    out = []
    if name.endswith(".py"):
        for line, piece in prose_of_python(text):
            out += [f"{name}:{line}: {phrase.strip()}" for phrase in process_wording(piece)]
        return out
    lines = text.splitlines()
    for n, line in enumerate(lines, start=1):
        # A phrase may be broken over two lines of a paragraph: read each line with the next,
        # and report what starts on this one.
        joined = line + " " + (lines[n] if n < len(lines) else "")
        out += [f"{name}:{n}: {phrase.strip()}" for start, phrase in _matches(joined) if start < len(line)]
    return out


def test_the_rule_catches_process_wording_and_spares_the_software_s_sessions() -> None:
    word = "session"  # the examples are built, so that this file holds no such phrase itself
    assert process_wording(f"as measured in {word} 17, and the fourth {word}")
    assert process_wording("Three sessions of prover time")
    assert process_wording("(session-9 networks)")
    assert process_wording("the issue's target") and process_wording("as issue 15 set it")
    assert process_wording("false runs the modules, as runs made before it did")
    assert not process_wording("a web session keeps its seat; a scripted session; a Ray session")
    assert not process_wording("from orderchaos.web.sessions import Limits; session_id; session.run()")
    code = 'def f():\n    session = 1  # nothing here\n    return fixture(scope="session")\n'
    assert not any(process_wording(text) for _, text in prose_of_python(code))
    code = f'x = "after {word} 18"  # a {word} of work\n'
    assert [process_wording(text) != [] for _, text in prose_of_python(code)] == [True, True]


def test_no_wording_about_how_the_project_was_worked_on() -> None:
    found = [f for n in tracked_text_files() if n not in QUOTES_THE_RULE for f in findings(n)]
    assert not found, "wording about how the project was worked on:\n" + "\n".join(found)
