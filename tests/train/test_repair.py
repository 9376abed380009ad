"""``orderchaos.train.repair``: the repair point of a refutation line, the repaired player's
subtree, and a whole repair of the shipped network where it is known to lose, checked by
walking the result again with ``exploit``."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from orderchaos.agents import strategy
from orderchaos.agents.network_agent import NetworkEvaluator
from orderchaos.agents.policy_files import load_policy_dir, pretrained_dir, read_meta, repaired_dir
from orderchaos.proof.exploit import WorkDirError, exploit, order_priors
from orderchaos.cli.main import main
from orderchaos.envs.encoding import bitboard_masks
from orderchaos.envs.rules import State, parse_cell
from orderchaos.train.repair import (
    RepairReport, RepairSettings, best_keeping_move, fine_tune, greedy_moves, repair, repair_point, sample_anchors,
    subtree_targets, _repaired_walk,
)

# The shipped network's second family of K=1 refutations: after b2 O and the first eleven
# moves Chaos plays the border cell f4 O, and the network's e3 X loses; a4 X (the
# strategy's partner answer) and 39 other moves win.
MISTAKE = State.from_string(".......OOX....XX...XXX.O..XOO.......")
LINE_TO_MISTAKE = ["b2 O", "d2 X", "e5 O", "c5 X", "d3 X", "d5 O", "c4 X", "d4 X", "c3 X", "c2 O", "b4 X", "f4 O"]
SMALL_SETTINGS = RepairSettings(anchors=5000, anchor_batch=256, target_batch=64, check_every=20, max_steps=60, rounds=2,
                                lines=20)


def parse_action(name: str) -> int:
    cell, symbol = name.split()
    return 2 * parse_cell(cell) + (symbol == "O")


def same_order_weights(a: Path, b: Path) -> bool:
    """The Order networks of two policy folders hold equal tensors (the files' metadata
    order may differ)."""
    first, second = load_policy_dir(a)[0]["order"].state_dict(), load_policy_dir(b)[0]["order"].state_dict()
    return first.keys() == second.keys() and all(np.array_equal(first[k].numpy(), second[k].numpy()) for k in first)


def board_after(moves: list[str]) -> State:
    state = State()
    for name in moves:
        state = state.apply(parse_action(name))
    return state


def test_the_repair_point_is_the_last_covered_order_position_and_counts_border_moves() -> None:
    evaluator = NetworkEvaluator(load_policy_dir(pretrained_dir())[0])
    walk = exploit("pretrained", MISTAKE, 0, max_lines=3)
    assert walk.refutation_count == 610
    for line in walk.refutations:
        state, used = repair_point(line, MISTAKE)
        assert state == MISTAKE and used == 0
    # From the empty board the line reaches it with one border move used; the empty board and
    # the Order positions before it are covered too, so the repair point is the last of them.
    prefix = [parse_action(m) for m in LINE_TO_MISTAKE]
    assert board_after(LINE_TO_MISTAKE) == MISTAKE
    state, used = repair_point(prefix + walk.refutations[0])
    assert state == MISTAKE and used == 1
    priors = order_priors(evaluator, np.array([MISTAKE.x], np.uint64), np.array([MISTAKE.o], np.uint64))[0]
    given = best_keeping_move(MISTAKE, priors)
    assert strategy.keeps_win(MISTAKE, given)
    assert int(np.argmax(priors)) == parse_action("e3 X") and not strategy.keeps_win(MISTAKE, parse_action("e3 X"))


def test_the_subtree_overrides_only_the_repair_point_and_wins_everywhere(tmp_path: Path) -> None:
    nets = load_policy_dir(pretrained_dir())[0]
    evaluator = NetworkEvaluator(nets)
    x, o, moves = subtree_targets(evaluator, MISTAKE, 0, tmp_path / "subtree")
    assert (x[0], o[0], moves[0]) == (MISTAKE.x, MISTAKE.o, parse_action("b3 X"))
    network = greedy_moves(nets["order"], x, o)
    changed = np.flatnonzero(network != moves)
    assert changed.tolist() == [0]  # below the repaired move the network's own moves win
    overridden = {(int(a), int(b)): int(m) for a, b, m in zip(x, o, moves)}

    def repaired(xs: np.ndarray, os_: np.ndarray) -> np.ndarray:
        return np.array([overridden[(int(a), int(b))] for a, b in zip(xs, os_)], dtype=np.int64)

    assert exploit(repaired, MISTAKE, 0, max_lines=0).refutation_count == 0


def test_a_first_move_whose_losses_cannot_be_repaired_below_it_is_given_up(tmp_path: Path) -> None:
    evaluator = NetworkEvaluator(load_policy_dir(pretrained_dir())[0])
    # after e3 X the refutations pass no covered position below MISTAKE
    assert _repaired_walk(evaluator, MISTAKE, parse_action("e3 X"), 0, tmp_path / "e3", 5) is None
    assert [p.name for p in (tmp_path / "e3").iterdir()] == ["walk_0"]  # given up after the first walk
    x, o, moves = _repaired_walk(evaluator, MISTAKE, parse_action("a4 X"), 0, tmp_path / "a4", 5)
    assert moves[0] == parse_action("a4 X") and x.shape[0] == 27


@pytest.fixture(scope="module")
def repaired(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RepairReport]:
    """One repair of the shipped network from MISTAKE at K=0, shared by the tests below."""
    folder = tmp_path_factory.mktemp("repair")
    return folder, repair("pretrained", folder / "out", folder / "work", 0, SMALL_SETTINGS, start=MISTAKE)


def test_repair_closes_every_refutation(repaired: tuple[Path, RepairReport]) -> None:
    folder, report = repaired
    assert report.original_refutations == 610 and report.repaired
    first = report.rounds[0]
    assert [p["position"] for p in first.repair_points] == [MISTAKE.to_string()]
    assert first.repair_points[0]["played"] == "e3 X"
    # b3 X, the network's second choice, wins below with the network's own moves, so it is
    # given rather than a4 X, the only move that keeps the strategy's win (a larger change)
    assert first.repair_points[0]["given"] == "b3 X"
    assert first.targets_changed == 1 and report.rounds[-1].refutations == 0
    assert exploit(str(folder / "out"), MISTAKE, 0, max_lines=0).refutation_count == 0
    # the Chaos network is the shipped one, and the metadata says where the policy came from
    repaired_nets, _ = load_policy_dir(folder / "out")
    shipped, shipped_meta = load_policy_dir(pretrained_dir())
    for name, tensor in shipped["chaos"].state_dict().items():
        assert np.array_equal(tensor.numpy(), repaired_nets["chaos"].state_dict()[name].numpy())
    assert read_meta(folder / "out")["repair"]["from_order_sha256"] == shipped_meta["files"]["order.safetensors"]


def test_a_repair_resumes_from_its_work_folder(repaired: tuple[Path, RepairReport]) -> None:
    folder, report = repaired
    shutil.rmtree(folder / "work" / "round_1" / "walk_k0")  # as if stopped before the round's walk
    shutil.rmtree(folder / "work" / "round_1" / "policy")  # ... and before its network was saved
    again = repair("pretrained", folder / "out2", folder / "work", 0, SMALL_SETTINGS, start=MISTAKE)
    assert again.as_json() | {"rounds": []} == report.as_json() | {"rounds": []}
    assert [r.refutations for r in again.rounds] == [r.refutations for r in report.rounds]
    assert same_order_weights(folder / "out2", folder / "out")


def test_the_fine_tune_plays_its_targets_and_is_deterministic(tmp_path: Path) -> None:
    shipped = load_policy_dir(pretrained_dir())[0]["order"]
    walk = tmp_path / "walk"
    exploit("pretrained", MISTAKE, 0, max_lines=0, work_dir=walk)
    anchors = sample_anchors(walk, 300, np.random.default_rng(0))
    target = (np.array([MISTAKE.x], np.uint64), np.array([MISTAKE.o], np.uint64), np.array([parse_action("a4 X")]))
    settings = RepairSettings(anchor_batch=64, target_batch=8, check_every=10, max_steps=40)
    tuned = [copy.deepcopy(shipped) for _ in range(2)]
    results = [fine_tune(net, shipped, anchors, target, settings) for net in tuned]
    assert results[0] == results[1]
    for name, tensor in tuned[0].state_dict().items():
        assert np.array_equal(tensor.numpy(), tuned[1].state_dict()[name].numpy())
    assert greedy_moves(tuned[0], target[0], target[1]).tolist() == [parse_action("a4 X")]
    assert greedy_moves(shipped, target[0], target[1]).tolist() == [parse_action("e3 X")]


def test_repair_refuses_an_out_folder_that_holds_files(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a new or empty folder"):
        repair("pretrained", tmp_path / "out", tmp_path / "work", 0, SMALL_SETTINGS, start=MISTAKE)
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("argv, message", [
    (["--agent", "nowhere/at/all"], "nowhere/at/all"),
    (["--agent", "pretrained", "--border-moves", "-1"], "--border-moves"),
    (["--agent", "pretrained", "--rounds", "0"], "--rounds"),
    (["--agent", "pretrained", "--start", "XXXXX" + "." * 31], "--start"),
])
def test_the_command_refuses_bad_input_in_one_line(argv: list[str], message: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["repair", *argv, "--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "work").exists()


def test_the_command_refuses_an_out_folder_that_holds_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    assert main(["repair", "--agent", "pretrained", "--out", str(tmp_path / "out"),
                 "--work-dir", str(tmp_path / "work")]) == 2
    assert "--out" in capsys.readouterr().err and (tmp_path / "out" / "keep.txt").read_text() == "mine"


def test_the_command_refuses_a_work_folder_of_another_question(repaired: tuple[Path, RepairReport], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    folder, _ = repaired
    before = sorted(p.name for p in (folder / "work").iterdir())
    assert main(["repair", "--agent", "pretrained", "--border-moves", "0", "--start", MISTAKE.to_string(),
                 "--anchors", "5000", "--out", str(tmp_path / "out"), "--work-dir", str(folder / "work")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another settings" in err[0]
    assert sorted(p.name for p in (folder / "work").iterdir()) == before and not (tmp_path / "out").exists()


def test_no_refutation_line_through_a_covered_position_is_one_line(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    uncovered = State.from_string(".......OOX...OXXX..XXX.O..XOO.......")
    assert not strategy.covers(uncovered)
    assert main(["repair", "--agent", "pretrained", "--border-moves", "0", "--start", uncovered.to_string(),
                 "--anchors", "500", "--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "strategy covers" in err[0]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_command_prints_the_rounds_then_writes_the_policy_and_the_report(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "report.json"
    status = main(["repair", "--agent", "pretrained", "--border-moves", "0", "--start", MISTAKE.to_string(),
                   "--anchors", "5000", "--rounds", "2", "--max-steps", "60", "--out", str(tmp_path / "out"),
                   "--work-dir", str(tmp_path / "work"), "--report", str(out_file)])
    printed = capsys.readouterr().out
    assert status == 0
    assert "original: K=0: 2,262 positions, 610 refutations" in printed
    assert "repaired in 1 round: no refutation left" in printed
    written = json.loads(out_file.read_text())
    assert written["repaired"] is True and written["original_refutations"] == 610
    assert [r["refutations"] for r in written["rounds"]] == [0]
    assert exploit(str(tmp_path / "out"), MISTAKE, 0, max_lines=0).refutation_count == 0


def test_the_shipped_repaired_policy_wins_where_the_pretrained_one_lost() -> None:
    # the two repair points of the shipped network at K=1: below each, every Chaos line of the
    # class (the border move already spent at the second) now ends in a five
    first_point = State.from_string(".......OXOO..XO.X..O......X.X.......")
    assert exploit("pretrained", first_point, 1, max_lines=0).refutation_count > 0
    assert exploit("repaired", first_point, 1, max_lines=0).refutation_count == 0
    assert exploit("pretrained", MISTAKE, 0, max_lines=0).refutation_count == 610
    assert exploit("repaired", MISTAKE, 0, max_lines=0).refutation_count == 0
    meta, shipped = read_meta(repaired_dir()), read_meta(pretrained_dir())
    assert meta["repair"]["from_order_sha256"] == shipped["files"]["order.safetensors"]
    repaired_nets, pretrained_nets = load_policy_dir(repaired_dir())[0], load_policy_dir(pretrained_dir())[0]
    for name, tensor in pretrained_nets["chaos"].state_dict().items():
        assert np.array_equal(tensor.numpy(), repaired_nets["chaos"].state_dict()[name].numpy())


@pytest.mark.parametrize("error, message", [
    (RuntimeError("3 targets are still not the network's move after 4000 steps; allow more steps"), "allow more steps"),
    (OSError(28, "No space left on device"), "No space left on device"),
])
def test_the_command_reports_a_failed_repair_in_one_line(error: Exception, message: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    import orderchaos.train.repair as repair_module

    def fails(*args, **kwargs):
        raise error

    monkeypatch.setattr(repair_module, "repair", fails)
    assert main(["repair", "--agent", "pretrained", "--out", str(tmp_path / "out"),
                 "--work-dir", str(tmp_path / "work")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "work" in err[0]


def test_a_repair_against_the_search_finds_a_refutation_trains_it_away_and_walks_again(tmp_path: Path) -> None:
    """From the position before Chaos's border move f4 O (Chaos to move), K=1: the exact K=0
    walk finds nothing, the searches find the f4 O family, the repair gives b3 X at the
    mistake, and the round's K=0 walk and searches find nothing; the exact K=1 walk of the
    result (3,801 positions for the original) confirms it. The same call again resumes from
    the files (no search, no fine-tune), and the plot is drawn."""
    from orderchaos.train.repair import plot_rounds

    start = board_after(LINE_TO_MISTAKE[:-1])
    assert exploit("pretrained", start, 1, max_lines=0).refutation_count == 610
    report = repair("pretrained", tmp_path / "out", tmp_path / "work", 1, SMALL_SETTINGS, start=start, search=16)
    exact, searched = report.original_walks
    assert (exact["border_moves"], exact["refutations"]) == (0, 0) and "positions" in exact
    assert searched["search"] == 16 and searched["refutations"] > 1 and searched["searches"] > 3
    first = report.rounds[0]
    assert [(p["position"], p["played"], p["given"]) for p in first.repair_points] == [
        (MISTAKE.to_string(), "e3 X", "b3 X")]
    assert [w["refutations"] for w in first.walks] == [0, 0] and first.walks[-1]["search"] == 16
    assert report.repaired and report.stopped is None
    assert exploit(str(tmp_path / "out"), start, 1, max_lines=0).refutation_count == 0
    again = repair("pretrained", None, tmp_path / "work", 1, SMALL_SETTINGS, start=start, search=16)
    assert again.as_json() == {**report.as_json(), "policy": again.policy}
    plot_rounds(report, tmp_path / "rounds.svg")
    assert (tmp_path / "rounds.svg").read_text().lstrip().startswith("<?xml")


def test_search_options_are_refused_where_they_do_not_belong(tmp_path: Path, capsys) -> None:
    for argv, message in ((["--border-moves", "0", "--search", "10"], "K=0 is walked exactly"),
                          (["--exact-up-to", "1"], "go with --search"),
                          (["--search-lines", "8"], "go with --search"),
                          (["--search", "10", "--plot", str(tmp_path / "p.txt")], "give a .svg or .png file")):
        assert main(["repair", "--agent", "pretrained", "--out", str(tmp_path / "o"), "--work-dir",
                     str(tmp_path / "w"), *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err, err


def test_rounds_stop_helping_when_the_last_ones_find_no_fewer_than_the_fewest_before() -> None:
    from orderchaos.train.repair import RoundReport, _no_progress

    def report(original: int, *rounds: int) -> RepairReport:
        made = RepairReport(2, original_walks=[{"refutations": original}])
        made.rounds = [RoundReport(walks=[{"refutations": n}]) for n in rounds]
        return made

    assert not _no_progress(report(10, 8), 2)  # too few rounds to judge
    assert not _no_progress(report(10, 8, 9), 2)  # 8 is a new low
    assert _no_progress(report(10, 8, 9, 8), 2)  # 9 and 8: none below the 8 before them
    assert not _no_progress(report(10, 8, 9, 7), 2)
    assert _no_progress(report(10, 12), 1)


def test_the_subtree_below_a_repair_point_is_walked_with_at_most_the_border_moves_asked(tmp_path: Path) -> None:
    """K=2 from before f4 O: at the mistake Chaos has one border move left, and
    ``subtree_border_moves=0`` walks its K=0 subtree (31 positions) instead of its K=1 one
    (633); the bound is part of the work folder's question."""
    from dataclasses import replace

    start = board_after(LINE_TO_MISTAKE[:-1])
    report = repair("pretrained", None, tmp_path / "work", 2, replace(SMALL_SETTINGS, rounds=1), start=start,
                    search=16, subtree_border_moves=0)
    first = report.rounds[0]
    assert [p["position"] for p in first.repair_points] == [MISTAKE.to_string()]
    evaluator = NetworkEvaluator(load_policy_dir(pretrained_dir())[0])
    narrow = subtree_targets(evaluator, MISTAKE, 0, tmp_path / "narrow")[0].shape[0]
    wide = subtree_targets(evaluator, MISTAKE, 1, tmp_path / "wide")[0].shape[0]
    assert (first.targets, narrow, wide) == (31, 31, 633)
    assert json.loads((tmp_path / "work" / "repair.json").read_text())["subtree_border_moves"] == 0
    with pytest.raises(WorkDirError, match="subtree_border_moves"):
        repair("pretrained", None, tmp_path / "work", 2, replace(SMALL_SETTINGS, rounds=1), start=start, search=16)


def test_only_the_overridden_positions_stay_targets_and_a_seeded_sample_of_the_rest_are_anchors(tmp_path: Path) -> None:
    """Below the mistake with one border move left the repaired player's 633 targets hold
    one override (b3 X at the mistake). With a bound, ``split_targets`` keeps the boards of
    ``repairs`` as the targets; of the others, those whose move the original plays join the
    anchors (10 drawn, the same 10 for the same seed) and one given a move the original does
    not play (as an earlier fine-tune's drift would) is let go; without a bound all 633 stay
    targets."""
    from orderchaos.train.repair import split_targets

    nets = load_policy_dir(pretrained_dir())[0]
    targets = subtree_targets(NetworkEvaluator(nets), MISTAKE, 1, tmp_path / "subtree")
    played = greedy_moves(nets["order"], targets[0], targets[1])
    changed = played != targets[2]
    assert (targets[0].shape[0], int(changed.sum())) == (633, 1)
    repairs = (targets[0][changed], targets[1][changed])
    drifted = int(np.flatnonzero(~changed)[7])
    legal = [int(a) for a in np.flatnonzero(bitboard_masks(targets[0][drifted:drifted + 1], targets[1][drifted:drifted + 1])[0])]
    moves = targets[2].copy()
    moves[drifted] = next(a for a in legal if a != played[drifted])
    given = (targets[0], targets[1], moves)
    (tx, to, tmoves), (ax, ao) = split_targets(nets["order"], given, repairs, 10, np.random.default_rng(3))
    assert (tx.tolist(), to.tolist(), tmoves.tolist()) == ([MISTAKE.x], [MISTAKE.o], [parse_action("b3 X")])
    _, again = split_targets(nets["order"], given, repairs, 10, np.random.default_rng(3))
    assert ax.shape[0] == 10 and np.array_equal(ax, again[0]) and np.array_equal(ao, again[1])
    _, (every_x, every_o) = split_targets(nets["order"], given, repairs, 1000, np.random.default_rng(3))
    anchored = set(zip(every_x.tolist(), every_o.tolist()))
    assert len(anchored) == 631 and (MISTAKE.x, MISTAKE.o) not in anchored
    assert (int(targets[0][drifted]), int(targets[1][drifted])) not in anchored
    assert anchored <= set(zip(targets[0].tolist(), targets[1].tolist()))
    nothing = split_targets(nets["order"], given, (repairs[0][:0], repairs[1][:0]), 1000, np.random.default_rng(3))[0]
    assert nothing[0].shape[0] == 0
    whole, none = split_targets(nets["order"], given, repairs, None, np.random.default_rng(3))
    assert all(np.array_equal(a, b) for a, b in zip(whole, given)) and none[0].shape[0] == 0


def test_a_settling_fine_tune_keeps_the_network_of_the_check_with_the_fewest_anchors_lost(tmp_path: Path) -> None:
    """Once the target is played the fine-tune goes on for ``settle_checks`` more checks and
    keeps the network of the one with the fewest anchors lost (momentum first pushes more of
    them off their move); the network returned is that check's, and it plays the target."""
    import re

    shipped = load_policy_dir(pretrained_dir())[0]["order"]
    exploit("pretrained", MISTAKE, 0, max_lines=0, work_dir=tmp_path / "walk")
    anchors = sample_anchors(tmp_path / "walk", 300, np.random.default_rng(0))
    target = (np.array([MISTAKE.x], np.uint64), np.array([MISTAKE.o], np.uint64), np.array([parse_action("a4 X")]))
    kept: dict[int, float] = {}
    for settle in (0, 26):
        settings = RepairSettings(anchor_batch=64, target_batch=8, check_every=2, max_steps=200, settle_checks=settle)
        net, lines = copy.deepcopy(shipped), []
        steps, kept[settle] = fine_tune(net, shipped, anchors, target, settings, lines.append)
        checks = [(int(m[1]), int(m[2].replace(",", ""))) for m in
                  (re.search(r"step (\d+): targets not played 0, anchors lost ([\d,]+)", line) for line in lines) if m]
        assert len(checks) == settle + 1
        fewest = min(checks, key=lambda check: check[1])
        lost = int(np.sum(greedy_moves(net, *anchors) != greedy_moves(shipped, *anchors)))
        assert (steps, lost) == fewest and kept[settle] == 1 - lost / anchors[0].shape[0]
        assert greedy_moves(net, target[0], target[1]).tolist() == [parse_action("a4 X")]
    assert kept[26] > kept[0]


def test_the_top_levels_of_the_walk_keep_the_original_move_through_a_repair(tmp_path: Path) -> None:
    """``held_levels=2``: the start and every position after Order's move and a Chaos
    answer in the original's K=0 walk are targets with the original's move (none of them is
    a repair point here), and the repaired network plays that move at each of them."""
    from dataclasses import replace

    from orderchaos.proof.exploit import walked_positions
    from orderchaos.train.repair import top_of_walk

    start = board_after(LINE_TO_MISTAKE[:-1])
    report = repair("pretrained", None, tmp_path / "work", 2, replace(SMALL_SETTINGS, rounds=1, held_levels=2),
                    start=start, search=16, subtree_border_moves=0)
    walk = tmp_path / "work" / "original" / "walk_k0"
    levels = [set(zip(x.tolist(), o.tolist())) for x, o, _ in walked_positions(walk)]
    hx, ho = top_of_walk(walk, 2)
    assert set(zip(hx.tolist(), ho.tolist())) == levels[0] | levels[1] and len(levels[1]) > 1
    assert top_of_walk(walk, 0)[0].shape == (0,)
    assert report.rounds[0].targets_held == hx.shape[0]
    original = load_policy_dir(pretrained_dir())[0]["order"]
    tuned = load_policy_dir(tmp_path / "work" / "round_1" / "policy")[0]["order"]
    assert np.array_equal(greedy_moves(tuned, hx, ho), greedy_moves(original, hx, ho))


def test_a_round_with_kept_targets_tunes_its_overrides_and_anchors_the_rest_of_its_subtree(tmp_path: Path) -> None:
    """From before f4 O at K=1 with ``kept_targets``: the round's one override (b3 X at the
    mistake, where the network it walked with plays e3 X) is the one target tuned, the rest of
    the subtree (30 positions whose move the original plays) joins the anchors, and the
    repaired network plays b3 X there. ``search_lines=2``: each of the 9 searches keeps at
    most 2 of its lines (6 in all here, against 52 at the default 64), and the bound is part
    of the work folder's question."""
    from dataclasses import replace

    start = board_after(LINE_TO_MISTAKE[:-1])
    report = repair("pretrained", None, tmp_path / "work", 1, replace(SMALL_SETTINGS, rounds=1, kept_targets=100),
                    start=start, search=16, search_lines=2)
    assert (report.original_walks[-1]["refutations"], report.original_walks[-1]["searches"]) == (6, 9)
    assert json.loads((tmp_path / "work" / "repair.json").read_text())["search"]["lines"] == 2
    first = report.rounds[0]
    assert (first.targets, first.targets_tuned, first.targets_anchored) == (31, 1, 30)
    tuned = load_policy_dir(tmp_path / "work" / "round_1" / "policy")[0]["order"]
    x, o = np.array([MISTAKE.x], np.uint64), np.array([MISTAKE.o], np.uint64)
    assert greedy_moves(tuned, x, o).tolist() == [parse_action("b3 X")]


def test_a_repair_point_among_the_held_levels_gets_its_repaired_move_not_the_original_one(tmp_path: Path) -> None:
    """From before f4 O at K=1 with ``held_levels=1``: the first level of the original's walk
    (the positions after each Chaos answer) holds the repair point itself, the mistake. The
    round's override (b3 X) is the one move tuned there; the level's other positions keep the
    original's move, and the repaired network plays both."""
    from dataclasses import replace

    from orderchaos.train.repair import top_of_walk

    start = board_after(LINE_TO_MISTAKE[:-1])
    report = repair("pretrained", None, tmp_path / "work", 1,
                    replace(SMALL_SETTINGS, rounds=1, kept_targets=100, held_levels=1), start=start)
    hx, ho = top_of_walk(tmp_path / "work" / "original" / "walk_k1", 1)
    at_mistake = (hx == MISTAKE.x) & (ho == MISTAKE.o)
    assert at_mistake.sum() == 1 and hx.shape[0] > 1
    first = report.rounds[0]
    assert (first.targets_tuned, first.targets_held) == (1, hx.shape[0] - 1)
    original = load_policy_dir(pretrained_dir())[0]["order"]
    tuned = load_policy_dir(tmp_path / "work" / "round_1" / "policy")[0]["order"]
    others = ~at_mistake
    assert np.array_equal(greedy_moves(tuned, hx[others], ho[others]), greedy_moves(original, hx[others], ho[others]))
    x, o = np.array([MISTAKE.x], np.uint64), np.array([MISTAKE.o], np.uint64)
    assert greedy_moves(original, x, o).tolist() == [parse_action("e3 X")]
    assert greedy_moves(tuned, x, o).tolist() == [parse_action("b3 X")]


def test_the_kept_k2_candidate_wins_below_a_repair_point_where_repaired_loses() -> None:
    """``agents/data/candidates/repair-k2`` (the K=2 repair chain's result, docs/evaluation.md):
    at a 10-stone repair point of its wide rounds (c2 X there given c4 X), every Chaos line
    with one more border move ends in a five against it, where `repaired` has 765 losing ones;
    its Chaos network is the shipped one and its meta says it was repaired at K=2."""
    from helpers import REPO

    candidate = REPO / "agents" / "data" / "candidates" / "repair-k2"
    point = State.from_string(".......O..X..OX.X..O..X...X.O..X....")
    assert exploit("repaired", point, 1, max_lines=0).refutation_count == 765
    assert exploit(str(candidate), point, 1, max_lines=0).refutation_count == 0
    assert read_meta(candidate)["repair"]["border_moves"] == 2
    kept_nets, repaired_nets = load_policy_dir(candidate)[0], load_policy_dir(repaired_dir())[0]
    for name, tensor in repaired_nets["chaos"].state_dict().items():
        assert np.array_equal(tensor.numpy(), kept_nets["chaos"].state_dict()[name].numpy())
