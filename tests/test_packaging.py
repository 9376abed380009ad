"""The install adds one top-level package, ``orderchaos``, with its data, from the editable
install (the development venv) and from a built wheel, imported from outside the repo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

PROBE = """
import importlib.util, json, sys
import orderchaos
from orderchaos.agents.policy_files import pretrained_dir
from orderchaos.arena.positions import DEFAULT_POSITIONS
from orderchaos.learn.puzzles import SHIPPED_PUZZLES
from orderchaos.bench.train import TRAINED_NETWORKS, trained_networks
from pathlib import Path
print(json.dumps({
    "file": orderchaos.__file__,
    "envs_file": orderchaos.envs.__file__,
    "stray": [n for n in ("envs", "agents", "train", "arena", "bench", "cli")
              if importlib.util.find_spec(n) is not None],
    "pretrained": (pretrained_dir() / "meta.json").is_file(),
    "positions": DEFAULT_POSITIONS.is_file(),
    "puzzles": SHIPPED_PUZZLES.is_file(),
    "puzzle_page": (Path(importlib.util.find_spec("orderchaos.web").origin).parent / "static" / "puzzles.js").is_file(),
    "bench_networks": all((Path(trained_networks(c)) / "meta.json").is_file() for c in TRAINED_NETWORKS),
    "registered": "OrderChaos-v0" in __import__("gymnasium").registry,
}))
"""


def _probe(cwd: Path, extra_path: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if extra_path is not None:
        env["PYTHONPATH"] = extra_path
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_editable_install_imports_from_outside_the_repo(tmp_path: Path) -> None:
    found = _probe(tmp_path)
    assert found["stray"] == []
    assert Path(found["envs_file"]).parent == REPO / "envs"
    assert found["pretrained"] and found["positions"] and found["registered"] and found["bench_networks"]
    assert found["puzzles"] and found["puzzle_page"]


def test_wheel_holds_one_namespace_with_its_data(tmp_path: Path) -> None:
    wheels, target = tmp_path / "wheels", tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation",
         "-q", "-w", str(wheels)], capture_output=True, text=True, timeout=300,
    )
    if build.returncode != 0:
        pytest.fail(f"building the wheel failed:\n{build.stderr[-2000:]}")
    (wheel,) = wheels.glob("orderchaos-*.whl")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True, text=True, timeout=300,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    top_level = {p.name for p in target.iterdir() if not p.name.endswith(".dist-info")} - {"bin"}
    assert top_level == {"orderchaos"}
    work = tmp_path / "elsewhere"
    work.mkdir()
    found = _probe(work, extra_path=str(target))
    assert Path(found["file"]).parent == target / "orderchaos"
    assert Path(found["envs_file"]).parent == target / "orderchaos" / "envs"
    assert found["stray"] == []
    assert found["pretrained"] and found["positions"] and found["registered"] and found["bench_networks"]
    assert found["puzzles"] and found["puzzle_page"]
