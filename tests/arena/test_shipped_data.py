"""Every shipped data file is reproducible from the command written next to it
(arena/data/README.md): the command is run on a prefix and compared with the file."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from orderchaos.arena.positions import DEFAULT_POSITIONS, load_positions, positions_accuracy
from orderchaos.cli.main import main

from helpers import REPO

DATA = REPO / "arena" / "data"
MAKE = re.compile(r"<!-- make: (?P<file>\S+) -->\n```bash\n(?P<command>[^\n]+)\n```")


def commands() -> dict[str, list[str]]:
    """File name -> the command's arguments, from arena/data/README.md."""
    return {m["file"]: shlex.split(m["command"]) for m in MAKE.finditer((DATA / "README.md").read_text())}


def test_every_shipped_data_file_has_its_command() -> None:
    shipped = {p.name for p in DATA.iterdir() if p.name != "README.md"}
    assert shipped == set(commands())


def test_the_position_set_is_reproduced_by_its_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = commands()[DEFAULT_POSITIONS.name]
    assert argv[:2] == ["orderchaos", "positions"]
    argv = argv[1:]
    out = argv.index("--out")
    assert REPO / argv[out + 1] == DEFAULT_POSITIONS
    count = argv.index("--make")
    assert int(argv[count + 1]) == len(DEFAULT_POSITIONS.read_text().splitlines())
    # The generator is deterministic per candidate: 20 positions are the file's first 20 lines.
    argv[count + 1], argv[out + 1] = "20", str(tmp_path / "prefix.jsonl")
    assert main(argv) == 0, capsys.readouterr().err
    made = (tmp_path / "prefix.jsonl").read_text().splitlines()
    assert made == DEFAULT_POSITIONS.read_text().splitlines()[:20]


def test_shipped_set_accuracy_figures() -> None:
    """The figures arena/data/README.md gives for the set (random with seed 0)."""
    positions = load_positions(DEFAULT_POSITIONS)
    assert positions_accuracy("random", positions, seed=0).correct == 178
    assert positions_accuracy("heuristic", positions, seed=0).correct == 397
    assert positions_accuracy("pretrained", positions, seed=0).correct == 398
