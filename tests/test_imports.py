"""``import orderchaos`` (and its envs and agents rooms) stays light: no torch, ray, OpenSpiel
or web stack until something that needs them is used (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "ray", "fastapi", "starlette", "uvicorn", "pyspiel")

PROBE = """
import json, sys
import {module}
print(json.dumps(sorted(name for name in {heavy!r} if name in sys.modules)))
"""


def heavy_modules_after(module: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(module=module, heavy=heavy)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", ["orderchaos", "orderchaos.envs", "orderchaos.agents"])
def test_importing_stays_light(module: str) -> None:
    assert heavy_modules_after(module) == []


def test_the_probe_sees_a_heavy_import() -> None:
    """The check itself: a module that is imported is reported (json and its decoder here:
    importing torch just to see it reported would take seconds)."""
    assert heavy_modules_after("json", heavy=("json.decoder", "torch")) == ["json.decoder"]


def test_the_openspiel_modules_load_openspiel_and_nothing_heavier() -> None:
    """The OpenSpiel game and bot adapter are imported on demand only; they bring pyspiel
    (which the probe sees) and no torch."""
    pytest.importorskip("pyspiel", reason="the openspiel extra is not installed: pip install -e '.[dev]'")
    assert heavy_modules_after("orderchaos.envs.openspiel") == ["pyspiel"]
    assert heavy_modules_after("orderchaos.agents.openspiel_bot") == ["pyspiel"]
