"""The first-move table of ``orderchaos prove --status``: each class of Order's first move
proven (by the strategy, or by the book with the check to rerun), refuted, or open with the
replies left and the solver work spent below it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from orderchaos.agents.proof_book import ProofBook, canonical_form
from orderchaos.proof.proof_meta import BookMeta
from orderchaos.proof.proof_status import status
from orderchaos.proof.prove import parse_action
from orderchaos.proof.solved import first_move_line, solved_status
from orderchaos.envs.rules import CHAOS, ORDER, State


def _key(*moves: str) -> int:
    s = State()
    for m in moves:
        s = s.apply(parse_action(m))
    return canonical_form(s.x, s.o)[0]


def _book(tmp_path: Path) -> Path:
    """a1 X proven, b1 X refuted (a made-up verdict: the table only reports the book), c1 X
    open with three replies proven and one refuted; work charged to each."""
    book = ProofBook()
    after = {m: State().apply(parse_action(m)) for m in ("a1X", "b1X", "c1X")}
    book.add(after["a1X"], ORDER)
    book.add(after["b1X"], CHAOS)
    for reply in ("c3X", "c3O", "d4X"):
        book.add(after["c1X"].apply(parse_action(reply)), ORDER)
    book.add(after["c1X"].apply(parse_action("a1O")), CHAOS)
    path = tmp_path / "t.ocb"
    book.save(path)
    meta = BookMeta(first=parse_action("c1X"))
    meta.add_work(_key("a1X"), 2163.4, 1086.2, 817_930_342)
    meta.add_work(_key("c1X"), 1733.0, 113.0, 98_320_149)
    meta.add_work(_key("c1X", "c3X"), 20.0, 10.0, 5_000)
    # the totals of every run: besides the work above, an older run's kept in total only
    meta.solver_seconds = 2163.4 + 1733.0 + 20.0 + 500.0
    meta.solver_cpu_seconds = 1086.2 + 113.0 + 10.0 + 50.0
    meta.solver_nodes = 817_930_342 + 98_320_149 + 5_000 + 1_000_000
    meta.save(path)
    return path


def test_each_class_gets_its_verdict_check_replies_and_work(tmp_path: Path) -> None:
    s = solved_status(status(_book(tmp_path)))
    rows = {f["move"]: f for f in s["first_moves"]}
    assert [rows[m]["verdict"] for m in ("a1 X", "b1 X", "c1 X", "b2 X", "c2 X", "c3 X")] == [
        "proven", "refuted", "open", "proven", "proven", "proven"]
    assert rows["a1 X"]["source"] == rows["b1 X"]["source"] == "book" and rows["c3 X"]["source"] == "strategy"
    assert rows["a1 X"]["check"] == "orderchaos prove --book B.ocb --first a1X; orderchaos prove --book B.ocb --verify"
    assert rows["b1 X"]["check"].endswith("--verify") and rows["c1 X"]["check"] is None
    c1 = rows["c1 X"]
    assert (c1["replies"], c1["replies_proven"], c1["replies_disproven"], c1["replies_open"]) == (68, 3, 1, 64)
    assert (rows["a1 X"]["seconds"], rows["a1 X"]["cpu_seconds"], rows["a1 X"]["solver_nodes"]) == (
        2163.4, 1086.2, 817_930_342)
    assert (c1["seconds"], c1["cpu_seconds"], c1["solver_nodes"]) == (1733.0, 113.0, 98_320_149)
    assert rows["b1 X"]["solver_nodes"] == 0
    reply = next(r for r in s["focus"]["replies"] if r["reply"] == "c3 X")
    assert (reply["cpu_seconds"], reply["solver_nodes"]) == (10.0, 5_000)


def test_the_rows_as_printed(tmp_path: Path) -> None:
    rows = {f["move"]: f for f in solved_status(status(_book(tmp_path)))["first_moves"]}
    assert first_move_line(rows["c3 X"]) == "c3 X: proven    by the strategy"
    assert first_move_line(rows["a1 X"]) == (
        "a1 X: proven    by the book; check: orderchaos prove --book B.ocb --first a1X; orderchaos prove "
        "--book B.ocb --verify; solver work 2,163 s wall, 1,086 s CPU, 817,930,342 nodes")
    assert first_move_line(rows["c1 X"]) == (
        "c1 X: open      by the book; replies proven 3/68, refuted 1, open 64; "
        "solver work 1,733 s wall, 113 s CPU, 98,320,149 nodes")


def test_the_totals_share_that_no_first_move_holds_is_unattributed(tmp_path: Path) -> None:
    s = status(_book(tmp_path))
    # the reply's work was charged to the reply alone in this made-up file, so it counts here too
    assert s["unattributed"] == {"seconds": 520.0, "cpu_seconds": 60.0, "solver_nodes": 1_005_000}


def test_an_old_side_file_without_per_position_work_reads_as_none(tmp_path: Path) -> None:
    """CPU time and nodes that were not kept per position are None (not 0, which would say
    no work was done), and the totals' share they hold is unattributed."""
    path = _book(tmp_path)
    meta_file = Path(f"{path}.meta.json")
    d = json.loads(meta_file.read_text())
    del d["cpu_seconds"], d["nodes"]  # as written before CPU time and nodes were kept per position
    meta_file.write_text(json.dumps(d))
    s = solved_status(status(path))
    rows = {f["move"]: f for f in s["first_moves"]}
    assert (rows["a1 X"]["seconds"], rows["a1 X"]["cpu_seconds"], rows["a1 X"]["solver_nodes"]) == (2163.4, None, None)
    assert (rows["b1 X"]["seconds"], rows["b1 X"]["cpu_seconds"], rows["b1 X"]["solver_nodes"]) == (0.0, 0.0, 0)
    assert s["unattributed"] == {"seconds": 520.0, "cpu_seconds": 1259.2, "solver_nodes": 917_255_491}
    assert first_move_line(rows["a1 X"]).endswith(
        "solver work 2,163 s wall (CPU time and nodes not recorded per position)")


def test_the_shipped_table_settles_every_first_move() -> None:
    """``orderchaos prove --status``: the strategy proves the central classes, the book the
    border ones (each with the command that re-derives and verifies it)."""
    done = subprocess.run([sys.executable, "-m", "orderchaos", "prove", "--status", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = {f["move"]: f for f in json.loads(done.stdout)["first_moves"]}
    assert {m: r["verdict"] for m, r in rows.items()} == dict.fromkeys(
        ("a1 X", "b1 X", "c1 X", "b2 X", "c2 X", "c3 X"), "proven")
    for move in ("a1 X", "b1 X", "c1 X"):
        assert rows[move]["source"] == "book" and rows[move]["solver_nodes"] > 0


def test_a_run_charges_cpu_time_and_nodes_to_the_positions_above_each_solve(tmp_path: Path) -> None:
    """Every solve is charged to each top-of-tree position on its path: the root gets all of
    the run's solver nodes and CPU time, a reply below it only its own share."""
    from orderchaos.proof.prove import ProveConfig, Prover
    from orderchaos.envs.rules import parse_board

    root = parse_board("..X.....O...O.X..........OX.........")
    path = tmp_path / "w.ocb"
    config = ProveConfig(first_budget=2000, cap=8000, tt_bits=16, leaf_rule="strategy")
    result = Prover(root, ProofBook(), config=config, book_path=path).run(300)
    assert result.winner == ORDER and result.tasks > 1
    meta = BookMeta.load(path)
    root_key = canonical_form(root.x, root.o)[0]
    assert meta.nodes[root_key] == meta.solver_nodes == result.solver_nodes > 0
    assert abs(meta.cpu_seconds[root_key] - meta.solver_cpu_seconds) < 0.01
    below = [k for k in meta.nodes if k != root_key]
    assert below and all(0 < meta.nodes[k] < meta.solver_nodes for k in below)
