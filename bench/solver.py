"""Solver benchmark (part of ``orderchaos bench search``).

Both solvers measured here are this project's own: no outside solver for Order and Chaos
exists to compare with. On the same positions, each with a fresh transposition table:

* the project solver (:mod:`orderchaos.agents.solver`, numba kernel);
* its baseline: a straightforward pure-Python alpha-beta with a transposition table (plain
  position key) and the four / double-threat rules -- :func:`baseline_solve` below --
  capped by a time limit per position (how many it finished is reported, and a median
  over capped runs is a lower bound);
* optionally the same numba kernel run as plain Python (``NUMBA_DISABLE_JIT=1`` in a child
  process) on a few positions, to show what the JIT itself buys;
* the reach: the fewest stones on the board at which the solver proves typical positions
  within a time cap.

The positions come from seeded epsilon-heuristic play (so they look like real games), and
only those that need search are kept: no four already on the board, and at least
``MIN_NODES`` solver nodes to prove (most positions of such play are proven in a handful of
nodes, which says nothing about a solver). Each kept position's node count is reported.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from orderchaos.envs.rules import (
    CELL_WINDOW_MASKS,
    CHAOS,
    ORDER,
    State,
    completes_five,
    legal_action_list,
    threat_pairs,
)

ABORTED = None


def sensible_positions(count: int, empties: int, seed: int, epsilon: float = 0.15) -> list[State]:
    """``count`` distinct undecided positions with ``empties`` empty cells, from seeded
    heuristic-vs-heuristic play with a random move at chance ``epsilon``."""
    from orderchaos.agents.simple import epsilon_heuristic_position

    rng = np.random.default_rng(seed)
    found: list[State] = []
    seen: set[State] = set()
    attempts = 0
    while len(found) < count:
        attempts += 1
        if attempts > 50 * count:
            raise RuntimeError(f"could not reach {count} undecided positions at {empties} empties")
        state = epsilon_heuristic_position(empties, rng, epsilon)
        if state is None or state.decided or state in seen:
            continue
        seen.add(state)
        found.append(state)
    return found


# -- the peer: a straightforward pure-Python alpha-beta ------------------------------------------


class _Timeout(Exception):
    pass


def _makes_four(x: int, o: int, action: int) -> bool:
    cell, sym = action >> 1, action & 1
    mine, theirs = (x, o) if sym == 0 else (o, x)
    mine |= 1 << cell
    return any(
        m & theirs == 0 and (m & mine).bit_count() == 4 for m in CELL_WINDOW_MASKS[cell]
    )


def baseline_solve(state: State, time_limit: float | None = None) -> tuple[str | None, int]:
    """Straightforward exact solver in pure Python: depth-first boolean alpha-beta with a
    transposition table keyed on the plain position, Order winning at once with a four,
    Chaos forced to block a lone four (and lost against two), all moves otherwise.

    Returns (winner or None on timeout, nodes).
    """
    table: dict[tuple[int, int], bool] = {}
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    nodes = 0

    def order_wins(x: int, o: int) -> bool:
        nonlocal nodes
        nodes += 1
        if deadline is not None and nodes & 1023 == 0 and time.perf_counter() > deadline:
            raise _Timeout
        occupied = x | o
        empties = 36 - occupied.bit_count()
        if empties == 0:
            return False
        key = (x, o)
        if key in table:
            return table[key]
        order_to_move = empties % 2 == 0
        threats = threat_pairs(x, o)
        if order_to_move:
            if threats:
                return True
            # Moves that make a four first: they force Chaos's reply.
            actions = sorted(legal_action_list(x, o), key=lambda a: not _makes_four(x, o, a))
        else:
            if len(threats) > 1:
                return True  # two cells, or one cell wanted by both symbols
            if threats:
                cell, sym = threats[0]
                actions = [2 * cell + 1 - sym]
            else:
                actions = legal_action_list(x, o)
        result = not order_to_move
        for a in actions:
            bit = 1 << (a >> 1)
            nx, no = (x | bit, o) if a & 1 == 0 else (x, o | bit)
            if completes_five(nx if a & 1 == 0 else no, a >> 1):
                child = True
            else:
                child = order_wins(nx, no)
            if child == order_to_move:
                result = child
                break
        table[key] = result
        return result

    if state.has_five:
        return ORDER, 0
    try:
        return (ORDER if order_wins(state.x, state.o) else CHAOS), nodes
    except _Timeout:
        return ABORTED, nodes

# -- measurements ----------------------------------------------------------------------------------


def _solver_times(
    positions: list[State], options: dict, cap: float, tt_bits: int = 20
) -> list[tuple[str | None, int, float]]:
    """(winner, nodes, seconds) per position, each with a fresh Solver built from ``options``."""
    from orderchaos.agents.solver import Solver

    out = []
    for state in positions:
        result = Solver(tt_bits=tt_bits, **options).solve(state, time_limit=cap)
        out.append((result.winner, result.nodes, result.seconds))
    return out


def _baseline_times(positions: list[State], cap: float) -> list[tuple[str | None, int, float]]:
    out = []
    for state in positions:
        start = time.perf_counter()
        winner, nodes = baseline_solve(state, time_limit=cap)
        out.append((winner, nodes, time.perf_counter() - start))
    return out


_PURE_PYTHON_SCRIPT = """
import json, sys, warnings
warnings.simplefilter("ignore")
from orderchaos.agents.solver import Solver
from orderchaos.envs.rules import parse_board
cap = float(sys.argv[1])
rows = []
for board in sys.argv[2:]:
    r = Solver(tt_bits=16).solve(parse_board(board), time_limit=cap)
    rows.append([r.winner, r.nodes, r.seconds])
print(json.dumps(rows))
"""


def _pure_python_times(positions: list[State], cap: float) -> list[tuple[str | None, int, float]]:
    """The same kernel run as plain Python (NUMBA_DISABLE_JIT=1) in a child process."""
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    boards = [s.to_string() for s in positions]
    done = subprocess.run(
        [sys.executable, "-c", _PURE_PYTHON_SCRIPT, str(cap), *boards],
        env=env, capture_output=True, text=True, check=True,
        timeout=60 + cap * len(boards) * 2,
    )  # fmt: skip
    return [tuple(row) for row in json.loads(done.stdout)]


def _median_seconds(rows: list[tuple[str | None, int, float]]) -> float:
    return statistics.median(r[2] for r in rows)


def _rate(rows: list[tuple[str | None, int, float]]) -> float:
    seconds = sum(r[2] for r in rows)
    return sum(r[1] for r in rows) / seconds if seconds > 0 else float("nan")


ABLATIONS: dict[str, dict] = {
    "default": {},
    "no pairing test": {"pairing": False},
    "greedy pairing only (no backtracking)": {"pairing": 1},
    "no dead-cell/dominance pruning": {"pruning": False},
    "TT without symmetry": {"canon_min_empty": 37},
    "no TT": {"tt_min_empty": 37},
    "+ history heuristic": {"history": True},
    "+ VCF pre-search (6 fours)": {"vcf_depth": 6},
}


def _jit_comparison(quick: bool, seed: int) -> dict:
    """Nodes per second of the numba kernel and of the same code under NUMBA_DISABLE_JIT."""
    if quick:
        return {}
    positions = sensible_positions(3, 22, seed)
    jit = _solver_times(positions, {"pairing": False}, 10.0)
    plain = _pure_python_times(positions, 10.0)
    print(f"same kernel (pairing test off), {len(positions)} positions at 22 empties, 10s cap: "
          f"numba {_rate(jit):,.0f} nodes/s, pure Python (NUMBA_DISABLE_JIT=1) "
          f"{_rate(plain):,.0f} nodes/s -> {_rate(jit) / _rate(plain):.0f}x")
    return {"numba_nodes_per_s": _rate(jit), "pure_python_nodes_per_s": _rate(plain)}


def _ablation(quick: bool, hard: list[State]) -> dict:
    """Each idea switched off (or on) alone, on the same positions that need search."""
    cap = 0.5 if quick else 20.0
    print(f"\nAblation on {len(hard)} of those positions (cap {cap:g}s each)")
    print(f"{'variant':<40}{'total s':>10}{'nodes':>14}{'proven':>8}")
    out = {}
    for name, options in ABLATIONS.items():
        rows = _solver_times(hard, options, cap, tt_bits=22)
        total = sum(r[2] for r in rows)
        nodes = sum(r[1] for r in rows)
        proven = sum(r[0] is not None for r in rows)
        print(f"{name:<40}{total:>10.3f}{nodes:>14,}{proven:>5}/{len(rows)}", flush=True)
        out[name] = {"total_s": total, "nodes": nodes, "proven": proven}
    return out


def _reach(cap: float, per_level: int, seed: int, quick: bool) -> tuple[int | None, list[dict]]:
    """Probe decreasing stone counts; the fewest stones at which at least half of the
    positions were proven within ``cap`` seconds each."""
    levels = [14, 12, 10] if quick else [14, 12, 10, 8, 6, 4, 2, 0]
    best: int | None = None
    rows = []
    for stones in levels:
        empties = 36 - stones
        positions = [State()] if stones == 0 else sensible_positions(per_level, empties, seed)
        results = _solver_times(positions, {}, cap, tt_bits=22)
        proven = sum(r[0] is not None for r in results)
        rows.append({"stones": stones, "positions": len(positions), "proven": proven,
                     "median_s": _median_seconds(results), "nodes_per_s": _rate(results)})
        print(f"  reach: {stones:2d} stones  proven {proven}/{len(positions)}  "
              f"median {rows[-1]['median_s']:.3f}s  {rows[-1]['nodes_per_s'] / 1e6:.2f} M nodes/s",
              flush=True)
        if 2 * proven < len(positions):
            break
        best = stones
    return best, rows


MIN_NODES = 1000
"""A benchmark position must need at least this many solver nodes."""


def hard_positions(
    count: int, empties: tuple[int, ...], seed: int, node_cap: int, per_level: int
) -> tuple[list[tuple[State, int]], dict]:
    """Up to ``count`` positions from seeded epsilon-heuristic play at each of ``empties``
    (``per_level`` candidates a level) that need search: no four on the board, proven by a
    fresh solver within ``node_cap`` nodes, with at least MIN_NODES nodes. Returns
    (state, nodes) pairs, hardest last, and how the candidates were sorted out."""
    from orderchaos.agents.solver import Solver

    stats = {"candidates": 0, "with_a_four": 0, "easy": 0, "over_cap": 0}
    kept: list[tuple[State, int]] = []
    for e in empties:
        for state in sensible_positions(per_level, e, seed + e):
            stats["candidates"] += 1
            if threat_pairs(state.x, state.o):
                stats["with_a_four"] += 1
                continue
            result = Solver(tt_bits=20).solve(state, node_limit=node_cap)
            if result.winner is None:
                stats["over_cap"] += 1
            elif result.nodes < MIN_NODES:
                stats["easy"] += 1
            else:
                kept.append((state, result.nodes))
    kept.sort(key=lambda pair: pair[1])
    if len(kept) > count:  # spread over the range of difficulty, hardest kept
        step = (len(kept) - 1) / (count - 1) if count > 1 else 0
        kept = [kept[round(i * step)] for i in range(count)] if count > 1 else kept[-1:]
    return kept, stats


def run(quick: bool = False) -> dict:
    """Measure the solver against the pure-Python baseline on positions that need search,
    its own ideas one by one, and how far it reaches; print tables and return the figures."""
    seed = 2024
    base_cap = 0.5 if quick else 10.0
    solver_cap = 5.0 if quick else 60.0
    empties = (24, 26, 28) if quick else (22, 23, 24, 25, 26, 27, 28)
    _solver_times([sensible_positions(1, 22, seed)[0]], {}, solver_cap)  # compile / load the kernel first
    picked, stats = hard_positions(4 if quick else 16, empties, seed, node_cap=100_000 if quick else 5_000_000,
                                   per_level=25 if quick else 40)
    if not picked:
        raise RuntimeError(f"no position needing {MIN_NODES}+ nodes among {stats['candidates']} candidates")
    positions = [state for state, _ in picked]

    ours = _solver_times(positions, {}, solver_cap)
    base = _baseline_times(positions, base_cap)
    agree = all(b[0] is None or b[0] == s[0] for s, b in zip(ours, base))
    finished = sum(b[0] is not None for b in base)
    ours_median, base_median = _median_seconds(ours), _median_seconds(base)
    capped = 2 * finished <= len(base)  # the baseline median is then a lower bound
    ratio = base_median / ours_median if ours_median > 0 else float("inf")
    both = [b[2] / s[2] for s, b in zip(ours, base) if b[0] is not None and s[2] > 0]
    print("\nBoth solvers below are this project's own (no outside Order and Chaos solver exists): "
          "the numba kernel,\nand a plain pure-Python alpha-beta + TT written as its baseline.")
    print(f"Exact solver on {len(positions)} positions needing {MIN_NODES:,}+ nodes, with {min(empties)}-"
          f"{max(empties)} empty cells (seeded epsilon-heuristic play; of {stats['candidates']} candidates "
          f"{stats['with_a_four']} held a four, {stats['easy']} took fewer nodes, {stats['over_cap']} "
          f"more than the cap)")
    print("  nodes per position: " + ", ".join(f"{n:,}" for _, n in picked))
    print(f"{'solver':<44}{'median s':>10}{'worst s':>10}{'nodes/s':>12}{'finished':>10}")
    for name, rows in (("numba kernel (orderchaos.agents.solver)", ours),
                       (f"pure-Python alpha-beta + TT (cap {base_cap:g}s)", base)):
        print(f"{name:<44}{_median_seconds(rows):>10.4f}{max(r[2] for r in rows):>10.3f}"
              f"{_rate(rows):>12,.0f}{sum(r[0] is not None for r in rows):>7}/{len(rows)}")
    print(f"median speed-up over the baseline: {'>=' if capped else ''}{ratio:.0f}x"
          f"{' (the baseline median hit its cap)' if capped else ''}; on the {len(both)} positions "
          f"both finished: median {statistics.median(both) if both else float('nan'):.0f}x; "
          f"values agree: {agree}")

    figures: dict = {
        "positions": len(positions),
        "min_nodes": MIN_NODES,
        "nodes": [n for _, n in picked],
        "selection": stats,
        "solver_median_s": ours_median,
        "solver_worst_s": max(r[2] for r in ours),
        "solver_max_s": max(r[2] for r in ours),
        "solver_nodes_per_s": _rate(ours),
        "baseline_median_s": base_median,
        "baseline_finished": finished,
        "baseline_cap_s": base_cap,
        "speedup_median": ratio,
        "speedup_is_lower_bound": capped,
        "speedup_median_both_finished": statistics.median(both) if both else None,
        "values_agree": agree,
        "peers": "both our own: numba kernel vs pure-Python alpha-beta baseline",
    }

    # The JIT itself: the same kernel as plain Python, on positions that need many nodes
    # (pairing test off), both capped; the rates are compared, not the verdicts.
    figures.update(_jit_comparison(quick, seed))

    # Each idea, switched off (or on) alone, on the hardest of those positions.
    figures["ablation"] = _ablation(quick, positions[-6:])

    print(f"\nReach: fewest stones at which typical positions are proven within {solver_cap:g}s")
    reach, rows = _reach(solver_cap, 2 if quick else 3, seed, quick)
    figures["reach_fewest_stones"] = reach
    figures["reach"] = rows
    return figures


def probe_opening(first_action: int, cap: float, total: float, tt_bits: int = 25) -> dict:
    """The moonshot probe: after Order's ``first_action`` on the empty board, try to prove
    every Chaos reply (one per symmetry class) an Order win, ``cap`` seconds each and
    ``total`` seconds in all, with one shared transposition table. If every reply is
    proven, the empty board is a proven Order win."""
    from orderchaos.agents.solver import Solver
    from orderchaos.envs.rules import action_name
    from orderchaos.envs.symmetry import canonical_key

    solver = Solver(tt_bits=tt_bits)
    start = time.perf_counter()
    root = State().apply(first_action)
    classes: dict[int, int] = {}
    for a in root.legal_actions():
        child = root.apply(a)
        classes.setdefault(canonical_key(child.x, child.o), a)
    rows = []
    for a in classes.values():
        if time.perf_counter() - start > total:
            rows.append({"reply": action_name(a), "winner": None, "nodes": 0, "seconds": 0.0})
            continue
        r = solver.solve(root.apply(a), time_limit=cap)
        rows.append({"reply": action_name(a), "winner": r.winner, "nodes": r.nodes,
                     "seconds": r.seconds, "tt_entries": solver.tt_entries})
        print(f"  {action_name(first_action)} then {action_name(a)}: {r.winner}  "
              f"{r.nodes:,} nodes  {r.seconds:.1f}s  TT {solver.tt_entries:,}", flush=True)
    proven = sum(row["winner"] == "order" for row in rows)
    return {"first": action_name(first_action), "replies": len(rows), "proven_order": proven,
            "chaos": sum(row["winner"] == "chaos" for row in rows),
            "seconds": time.perf_counter() - start, "tt_capacity": solver.tt_capacity,
            "rows": rows}


if __name__ == "__main__":
    if "--moonshot" in sys.argv:  # python -m orderchaos.bench.solver --moonshot [CAP TOTAL]
        rest = [float(v) for v in sys.argv[sys.argv.index("--moonshot") + 1:]]
        cap, total = (rest + [90.0, 1200.0][len(rest):])[:2]
        summary = probe_opening(2 * 14, cap, total)  # c3 X, the solver's own first choice
        print({k: v for k, v in summary.items() if k != "rows"})
    else:
        run(quick="--quick" in sys.argv)
