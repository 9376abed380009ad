"""``import orderchaos`` (and its envs and agents rooms) stays light: no torch, ray, OpenSpiel
or web stack until something that needs them is used (checked in a fresh interpreter); and
each room imports only from its own floor and the floors below (docs/architecture.md)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

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


@pytest.mark.parametrize("module", ["orderchaos.agents.solver_pool", "orderchaos.train.solver_targets",
                                    "orderchaos.arena.mistakes", "orderchaos.proof.prove"])
def test_the_solver_pool_and_its_jobs_stay_light(module: str) -> None:
    """A worker process imports the pool and the module of each job it runs: no torch or ray,
    so that it starts fast."""
    assert heavy_modules_after(module) == []


REPO = Path(__file__).resolve().parent.parent
FLOORS = {
    "envs": {"envs"},
    "agents": {"envs", "agents"},
    "arena": {"envs", "agents", "arena"},
    "proof": {"envs", "agents", "proof"},
    "learn": {"envs", "agents", "arena", "learn"},
    "train": {"envs", "agents", "arena", "proof", "train"},
    "bench": {"envs", "agents", "arena", "proof", "learn", "train", "bench"},
    "web": {"envs", "agents", "arena", "proof", "learn", "train", "web"},
}
"""The rooms each room may import from (the CLI, on top, may import them all; the site sits
beside it and never imports it)."""


def imported_names(path: Path) -> list[list[str]]:
    """For each absolute import in ``path`` (at the top or inside a function), the dotted
    names it may bring in: the module, and ``module.name`` for each ``from`` name."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append([node.module] + [f"{node.module}.{a.name}" for a in node.names])
        elif isinstance(node, ast.Import):
            out.append([a.name for a in node.names])
    return out


def upward_imports(room: str) -> list[str]:
    """``file: module`` for each import of ``orderchaos.<room>`` in ``room``'s files
    (anywhere in them: at the top or inside a function) that its floor does not allow."""
    found = []
    for path in sorted((REPO / room).rglob("*.py")):
        for names in imported_names(path):
            for name in names:
                parts = name.split(".")
                if parts[0] == "orderchaos" and len(parts) > 1 and parts[1] in {*FLOORS, "cli"} \
                        and parts[1] not in FLOORS[room]:
                    found.append(f"{path.relative_to(REPO)}: {name}")
    return found


@pytest.mark.parametrize("room", sorted(FLOORS))
def test_each_room_imports_only_its_floor_and_below(room: str) -> None:
    assert upward_imports(room) == []


def test_the_floor_check_sees_an_upward_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "pool.py").write_text("def f():\n    from orderchaos import arena\n    import orderchaos.envs.rules\n")
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    assert upward_imports("agents") == ["agents/pool.py: orderchaos.arena"]


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


def agents_import_graph(root: Path) -> dict[str, set[str]]:
    """For each module of ``root``/agents (``*.py``, one level), the agents modules it
    imports, at the top or inside a function (``from orderchaos.agents import x`` and
    ``from orderchaos.agents.x import y`` alike)."""
    folder = root / "agents"
    modules = {path.stem for path in folder.glob("*.py")} - {"__init__"}
    graph: dict[str, set[str]] = {}
    for name in sorted(modules):
        path = folder / f"{name}.py"
        edges = set()
        for names in imported_names(path):
            for full in names:
                parts = full.split(".")
                if parts[:2] == ["orderchaos", "agents"] and len(parts) > 2 and parts[2] in modules:
                    edges.add(parts[2])
        graph[name] = edges - {name}
    return graph


def import_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of ``graph`` as ``[a, b, ..., a]``, or [] when it has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return []


def test_the_agents_floor_has_no_import_circle() -> None:
    """No two agents modules import each other, directly or round a longer circle, even
    through an import inside a function (docs/architecture.md: the arrows run one way)."""
    assert import_cycle(agents_import_graph(REPO)) == []


def test_the_circle_check_sees_a_function_level_circle(tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "solver.py").write_text("from orderchaos.agents import strategy\n")
    (tmp_path / "agents" / "strategy.py").write_text(
        "def act():\n    from orderchaos.agents.solver import fallback_action\n"
    )
    (tmp_path / "agents" / "rules.py").write_text("import orderchaos.agents.strategy\n")
    assert import_cycle(agents_import_graph(tmp_path)) == ["strategy", "solver", "strategy"]
