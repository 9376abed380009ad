"""Train an Order network's refutations away and keep the rest of its play.

:func:`orderchaos.proof.exploit.exploit` finds every Chaos line, within a class, that beats
a deterministic Order player. :func:`repair` fine-tunes the Order network of a policy until
the walk finds none, changing its greedy move only where it must:

1. **Repair points.** On each refutation line, the last Order-to-move position that the
   central-pairing strategy covers (:func:`orderchaos.agents.strategy.covers`). Every Chaos
   move from a covered position leads to a covered one, so at that position the player left
   the strategy's proof with its move and never came back: the line is lost from there.
2. **Targets.** At a repair point, the move the network ranks highest among those that win
   there: each move it prefers to its best strategy-keeping move
   (:func:`orderchaos.agents.strategy.keeps_win`) is tried before that one. Below it,
   every Order-to-move position of the subtree the class allows, walked with the *repaired
   player* (:func:`subtree_targets`): the network's own move, overridden only where a walk
   of the subtree still finds a refutation, at that line's repair point, in the same way. So
   the repaired player wins the subtree against every Chaos in the class and differs from
   the network only where the network would lose.
3. **Anchors.** Positions sampled from the walk of the original player, with the original
   network's greedy move, policy and value. The fine-tune keeps the greedy move there (a
   hinge on the margin between it and the runner-up), the policy (KL) and the value (squared
   error), so that the walk outside the repaired subtrees stays the walk it was.
4. **Fine-tune** the Order network in eval mode (batch-norm statistics stay as they are) until
   every target is its greedy move (at most ``max_steps`` steps). Then the
   whole class is walked again with the new network; refutations left (or new ones) give the
   next round its repair points. A round that finds none ends the repair.

The work folder keeps each walk and each round's targets and network, so a stopped repair
resumes where it was (:func:`repair` with the same arguments).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from orderchaos.agents import strategy
from orderchaos.agents.network import PolicyValueNet
from orderchaos.agents.network_agent import NetworkEvaluator
from orderchaos.agents.policy_files import find_policy_dir, load_policy_dir, pretrained_dir, repaired_dir, save_policy_dir
from orderchaos.proof.exploit import (
    CENTRAL,
    MoveChooser,
    WorkDirError,
    exploit,
    find_refutations,
    move_chooser,
    network_chooser,
    order_priors,
    walked_positions,
)
from orderchaos.envs.encoding import bitboard_masks, encode_bitboards
from orderchaos.envs.rules import ORDER, State, action_name
from orderchaos.files import git_commit

TARGETS_FILE = "targets.npz"
POLICY_FOLDER = "policy"


@dataclass(frozen=True)
class RepairSettings:
    """How a repair fine-tunes: ``anchors`` positions sampled from the original walk
    (``seed`` picks them and the batches), SGD with momentum at ``lr``, batches of ``anchor_batch`` anchors
    and ``target_batch`` targets, at most ``max_steps`` steps a round, agreement checked every
    ``check_every`` steps; ``margin``: the logit lead a target's new move must reach (see
    :func:`required_margins`); ``rounds``: fine-tune and walk at most this many times;
    ``lines``: refutation lines rebuilt per walk at most (the repair points of the others,
    when they differ, are found by the next round's walk); ``kept_targets``: only the
    positions a round's subtree walk overrode stay targets, and of the others whose move
    the original network plays at most this many, sampled, join the anchors (None: all stay
    targets; see :func:`split_targets`);
    ``settle_checks``: once every target is played, go on for this many more checks and keep
    the network of the check with every target played and the fewest anchors lost;
    ``held_levels``: the Order positions of the first this many levels of the original's walk
    keep the original's move as targets (see :func:`top_of_walk`)."""

    anchors: int = 500_000
    seed: int = 0
    lr: float = 1e-3
    anchor_batch: int = 1536
    target_batch: int = 512
    max_steps: int = 4000
    check_every: int = 50
    margin: float = 0.1
    rounds: int = 4
    lines: int = 100_000
    kept_targets: int | None = None
    settle_checks: int = 0
    held_levels: int = 0


@dataclass
class RoundReport:
    """One round: the repair points found in the walk before it (as board strings with the
    move the network played and the one it was given), the targets in all (and how many
    differed from the network's move), the steps taken, the share of anchors that kept
    their move, and the walks of the new network (:func:`walk_classes`)."""

    repair_points: list[dict[str, str]] = field(default_factory=list)
    targets: int = 0
    targets_changed: int = 0
    targets_tuned: int = 0
    targets_anchored: int = 0
    targets_held: int = 0
    steps: int = 0
    anchors_kept: float = 0.0
    walks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def refutations(self) -> int:
        """Refutations found by the round's last walk."""
        return self.walks[-1]["refutations"] if self.walks else 0


@dataclass
class RepairReport:
    """What :func:`repair` did: the original network's walks (every class of
    :func:`walk_classes`), each round, and whether the last round's walks found no
    refutation (then ``policy`` is the repaired policy's folder in the work folder)."""

    border_moves: int | None
    original_walks: list[dict[str, Any]] = field(default_factory=list)
    rounds: list[RoundReport] = field(default_factory=list)
    repaired: bool = False
    policy: str | None = None
    stopped: str | None = None

    @property
    def original_refutations(self) -> int:
        """Refutations of the original network in the class repaired."""
        return self.original_walks[-1]["refutations"] if self.original_walks else 0

    def as_json(self) -> dict[str, Any]:
        """The report as plain JSON types, with the original's and each round's refutations."""
        out = asdict(self)
        out["original_refutations"] = self.original_refutations
        for written, kept in zip(out["rounds"], self.rounds):
            written["refutations"] = kept.refutations
        return out


def repair_point(line: Sequence[int], start: State = State()) -> tuple[State, int] | None:
    """The last Order-to-move position of ``line`` (actions from ``start``) that the strategy
    covers, and the border moves Chaos had played there while the centre was open; None when
    the line passes no covered Order-to-move position."""
    state, used, found = start, 0, None
    for action in line:
        if state.to_play == ORDER and strategy.covers(state):
            found = (state, used)
        centre_open = (state.x | state.o) & CENTRAL != CENTRAL
        if state.to_play != ORDER and centre_open and not (CENTRAL >> (action >> 1)) & 1:
            used += 1
        state = state.apply(action)
    return found


def best_keeping_move(state: State, priors: np.ndarray) -> int:
    """Of the moves that keep the strategy's win in ``state`` (covered, Order to move), the
    one ``priors`` ranks highest (the lowest action on ties)."""
    keeping = strategy.keeping_moves(state)
    if not keeping:
        raise ValueError(f"no move keeps the strategy's win in {state.to_string()}")
    return max(keeping, key=lambda a: (priors[a], -a))


def overriding_chooser(evaluator, overrides: dict[tuple[int, int], int]) -> MoveChooser:
    """The network's greedy move, except on the boards in ``overrides`` ((X, O) -> move)."""
    greedy = network_chooser(evaluator)

    def choose(x: np.ndarray, o: np.ndarray) -> np.ndarray:
        moves = greedy(x, o)
        if overrides:
            for i, board in enumerate(zip(x.tolist(), o.tolist())):
                moves[i] = overrides.get(board, moves[i])
        return moves

    return choose


SUBTREE_LINES = 200
"""Refutation lines rebuilt per walk of a subtree (the rest are found by the next walk)."""


def _priors_at(evaluator, state: State) -> np.ndarray:
    return order_priors(evaluator, np.array([state.x], np.uint64), np.array([state.o], np.uint64))[0]


def _repaired_walk(evaluator, point: State, first_move: int, border_moves_left: int | None, work_dir: Path,
                   max_walks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The repaired player's subtree below ``point`` when it plays ``first_move`` there (see
    :func:`subtree_targets`), or None when a refutation below it passes no covered position
    after ``point`` that could be repaired."""
    overrides = {(point.x, point.o): first_move}
    choose = overriding_chooser(evaluator, overrides)
    for attempt in range(max_walks):
        folder = _fresh(work_dir / f"walk_{attempt}")
        walk = exploit(choose, point, border_moves_left, max_lines=SUBTREE_LINES, work_dir=folder)
        if not walk.refutation_count:
            x, o, _ = (np.concatenate(column) for column in zip(*walked_positions(folder)))
            return x, o, choose(x, o)
        before = set(overrides)
        for line in walk.refutations:
            found = repair_point(line, point)
            if found is None or (found[0].x, found[0].o) in before:
                return None
            state = found[0]
            overrides[(state.x, state.o)] = best_keeping_move(state, _priors_at(evaluator, state))
    return None


def subtree_targets(evaluator, point: State, border_moves_left: int | None, work_dir: Path,
                    max_walks: int = 50) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X and O bitboards and moves for the repair point ``point`` and every Order-to-move
    position below it that Chaos can reach with ``border_moves_left`` more border moves while
    the centre is open, played by the *repaired player*.

    At ``point`` the repaired player plays the move the network ranks highest among those
    that it can make win: first each move the network prefers to the best strategy-keeping
    move (:func:`best_keeping_move`), its own losing move aside, then that keeping move. Below
    it the network plays, overridden wherever a walk of the subtree still finds a refutation,
    at the line's repair point (:func:`repair_point`), with the keeping move it ranks highest.
    A move is given up when a refutation below it passes no covered position after ``point``.
    A keeping move leads only to covered positions, so its walks' repair points lie deeper
    than the overrides before them and it always succeeds; ``max_walks`` walks per move bound
    the rest. The walks are kept in ``work_dir``. The move the network prefers needs the
    smallest change of its policy, and a smaller change moves fewer other positions."""
    priors = _priors_at(evaluator, point)
    keeping = best_keeping_move(point, priors)
    played = int(np.argmax(priors))
    preferred = [int(a) for a in np.argsort(-priors, kind="stable")
                 if priors[a] > priors[keeping] and int(a) != played]
    for i, move in enumerate([*preferred, keeping]):
        found = _repaired_walk(evaluator, point, move, border_moves_left, work_dir / f"move_{i}", max_walks)
        if found is not None:
            return found
    raise RuntimeError(f"the subtree below {point.to_string()} still has refutations after {max_walks} walks")


def sample_anchors(work_dir: Path, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """About ``count`` Order-to-move positions of the finished walk in ``work_dir``, each
    level sampled in proportion to its size (levels smaller than their share whole),
    deduplicated over the border moves used."""
    sizes = [x.shape[0] for x, _, _ in walked_positions(work_dir)]  # one level in memory at a time
    total = sum(sizes)
    xs, os_ = [], []
    for x, o, _ in walked_positions(work_dir):
        take = min(x.shape[0], max(1, round(count * x.shape[0] / max(total, 1))))
        rows = np.sort(rng.choice(x.shape[0], take, replace=False))
        xs.append(x[rows])
        os_.append(o[rows])
    boards = np.unique(np.stack([np.concatenate(xs), np.concatenate(os_)], axis=1), axis=0)
    return boards[:, 0].copy(), boards[:, 1].copy()


def _encode(x: np.ndarray, o: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    return (torch.from_numpy(encode_bitboards(x, o)).float(),
            torch.from_numpy(bitboard_masks(x, o)).bool())


def _masked_logits(net: PolicyValueNet, planes: torch.Tensor, masks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    logits, value = net(planes)
    return logits.masked_fill(~masks, -1e9), value


def _margins(logits: torch.Tensor, moves: torch.Tensor) -> torch.Tensor:
    """How far each row's ``moves`` logit leads the best other legal logit (masked logits)."""
    chosen = logits.gather(1, moves[:, None]).squeeze(1)
    others = logits.scatter(1, moves[:, None], -1e9).max(1).values
    return chosen - others


def greedy_moves(net: PolicyValueNet, x: np.ndarray, o: np.ndarray) -> np.ndarray:
    """The Order network's greedy moves for arrays of X and O bitboards (Order to move), as
    :func:`orderchaos.proof.exploit.network_chooser` plays them."""
    return network_chooser(NetworkEvaluator({"order": net, "chaos": net}))(x, o)


def required_margins(net: PolicyValueNet, x: np.ndarray, o: np.ndarray, moves: np.ndarray,
                     settings: RepairSettings, batch: int = 8192) -> np.ndarray:
    """The logit margin each position's move must keep over the runner-up during a fine-tune:
    a move the network already plays keeps half its present lead (at most half of
    ``settings.margin``), so that near-ties are held without being pulled apart; any other
    move must lead by ``settings.margin``."""
    out = np.empty(x.shape[0], np.float32)
    with torch.no_grad():
        for start in range(0, x.shape[0], batch):
            planes, masks = _encode(x[start:start + batch], o[start:start + batch])
            logits, _ = _masked_logits(net, planes, masks)
            wanted = torch.from_numpy(moves[start:start + batch].astype(np.int64))
            lead = _margins(logits, wanted)
            played = logits.argmax(1) == wanted
            out[start:start + batch] = torch.where(played, 0.5 * lead.clamp(max=settings.margin),
                                                   torch.full_like(lead, settings.margin)).numpy()
    return out


def fine_tune(net: PolicyValueNet, original: PolicyValueNet, anchors: tuple[np.ndarray, np.ndarray],
              targets: tuple[np.ndarray, np.ndarray, np.ndarray], settings: RepairSettings,
              log: Callable[[str], None] = lambda line: None) -> tuple[int, float]:
    """Fine-tune ``net`` in place (eval mode, batch-norm statistics frozen; SGD with momentum,
    whose steps vanish with the gradients, unlike Adam's) towards the ``targets`` (X, O, move)
    while keeping ``original``'s greedy move, policy and value on the ``anchors`` (X, O).

    The loss: on anchors, KL from the original policy, squared error to the original value,
    and a hinge that keeps each greedy move ahead (:func:`required_margins`); on targets, the
    same hinge, which for a move the network does not play yet asks a lead of
    ``settings.margin``. A quarter of each batch at most is drawn from the targets not yet
    played and the anchors whose move was lost at the last check. Stops at the first check
    where every target is ``net``'s greedy move (the anchors are a proxy for the walk, and
    the walk after the fine-tune is the test; holding every anchor would take the steps of a
    plateau), and raises RuntimeError when that has not come after ``settings.max_steps``
    steps. Returns the steps taken and the share of anchors that kept their move."""
    ax, ao = anchors
    tx, to, tmoves = targets
    anchor_moves = greedy_moves(original, ax, ao)
    original.eval()
    net.eval()
    anchor_need = torch.from_numpy(required_margins(original, ax, ao, anchor_moves, settings))
    target_need = torch.from_numpy(required_margins(net, tx, to, tmoves, settings))
    generator = torch.Generator().manual_seed(settings.seed)
    optimiser = torch.optim.SGD(net.parameters(), lr=settings.lr, momentum=0.9)
    target_moves = torch.from_numpy(tmoves.astype(np.int64))
    anchor_moves_t = torch.from_numpy(anchor_moves.astype(np.int64))

    def missed() -> tuple[torch.Tensor, torch.Tensor]:
        """The targets not played yet and the anchors whose move is lost, as row indices."""
        return (torch.from_numpy(np.flatnonzero(greedy_moves(net, tx, to) != tmoves)),
                torch.from_numpy(np.flatnonzero(greedy_moves(net, ax, ao) != anchor_moves)))

    def rows(count: int, batch: int, hard: torch.Tensor) -> torch.Tensor:
        """A batch of row indices: the hard rows first (a quarter of the batch at most, drawn
        when there are more), the rest drawn from all rows."""
        room = batch // 4
        if hard.numel() > room:
            hard = hard[torch.randint(hard.numel(), (room,), generator=generator)]
        return torch.cat([hard, torch.randint(count, (batch - hard.numel(),), generator=generator)])

    step = 0
    hard_targets, hard_anchors = missed()
    log(f"  step 0: targets not played {hard_targets.numel():,}, anchors lost {hard_anchors.numel():,}")
    best: tuple[int, int, dict[str, torch.Tensor]] | None = None  # anchors lost, step, weights
    settling = 0
    while step < settings.max_steps:
        if not hard_targets.numel():
            if best is None or hard_anchors.numel() < best[0]:
                best = (hard_anchors.numel(), step, copy.deepcopy(net.state_dict()))
            if settling == settings.settle_checks:
                break
            settling += 1
        for _ in range(settings.check_every):
            a = rows(ax.shape[0], settings.anchor_batch, hard_anchors)
            t = rows(tx.shape[0], settings.target_batch, hard_targets)
            a_planes, a_masks = _encode(ax[a.numpy()], ao[a.numpy()])
            t_planes, t_masks = _encode(tx[t.numpy()], to[t.numpy()])
            with torch.no_grad():
                old_logits, old_value = _masked_logits(original, a_planes, a_masks)
            new_logits, new_value = _masked_logits(net, a_planes, a_masks)
            keep = (F.kl_div(F.log_softmax(new_logits, 1), F.log_softmax(old_logits, 1),
                             log_target=True, reduction="batchmean")
                    + F.relu(anchor_need[a] - _margins(new_logits, anchor_moves_t[a])).mean()
                    + F.mse_loss(new_value, old_value))
            fix_logits, _ = _masked_logits(net, t_planes, t_masks)
            fix = F.relu(target_need[t] - _margins(fix_logits, target_moves[t])).mean()
            optimiser.zero_grad()
            (keep + fix).backward()
            optimiser.step()
            step += 1
        hard_targets, hard_anchors = missed()
        log(f"  step {step}: targets not played {hard_targets.numel():,}, anchors lost {hard_anchors.numel():,}")
    if best is not None:
        lost, step, weights = best
        net.load_state_dict(weights)
        return step, 1.0 - lost / max(1, ax.shape[0])
    if hard_targets.numel():
        raise RuntimeError(f"{hard_targets.numel()} targets are still not the network's move after {step} steps; "
                           "allow more steps (--max-steps)")
    return step, 1.0 - hard_anchors.numel() / max(1, ax.shape[0])


def top_of_walk(work_dir: Path, levels: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct Order-to-move positions (X, O) of the first ``levels`` levels of the
    finished walk in ``work_dir``: the start, the positions after each Chaos answer, and so
    on. A near-tie there (the network's first moves lead their symmetric twins by a few
    hundredths) is one anchor among hundreds of thousands, yet when it tips, the whole walk
    below it is another tree, with other refutations."""
    parts = [(x, o) for (x, o, _), _ in zip(walked_positions(work_dir), range(levels))]
    if not parts:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64)
    boards = np.unique(np.stack([np.concatenate([x for x, _ in parts]), np.concatenate([o for _, o in parts])], 1),
                       axis=0)
    return boards[:, 0].copy(), boards[:, 1].copy()


def split_targets(original: PolicyValueNet, targets: tuple[np.ndarray, np.ndarray, np.ndarray],
                  repairs: tuple[np.ndarray, np.ndarray], most_kept: int | None,
                  rng: np.random.Generator) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The targets (X, O, move) a fine-tune must make the network's greedy moves, and the
    positions that join its anchors (X, O). With ``most_kept`` None every target stays a
    target and no anchor is added. Otherwise the targets are the boards in ``repairs`` (X,
    O): the positions where a round's subtree walk overrode the network it walked with, of
    every round so far. Of the rest, those whose move ``original`` plays may join the anchors
    (at most ``most_kept``, drawn by ``rng``), and those it does not play (a move an earlier
    fine-tune drifted to, which the subtree walk found winning) are let go. A subtree below
    an early repair point holds hundreds of thousands of positions, many of them near-ties;
    holding each as a target makes the fine-tune chase them one by one (a round that made
    1,854 drifted positions targets again fought its anchors for over a thousand steps),
    while the next round's exact walks and searches see whatever moved."""
    tx, to, tmoves = targets
    if most_kept is None:
        return targets, (tx[:0], to[:0])
    must = _on_boards(tx, to, *repairs)
    rest = np.flatnonzero(~must & (greedy_moves(original, tx, to) == tmoves))
    if rest.size > most_kept:
        rest = np.sort(rng.choice(rest, most_kept, replace=False))
    return (tx[must], to[must], tmoves[must]), (tx[rest], to[rest])


def policy_spec_dir(spec: str) -> Path:
    """The policy folder of ``pretrained``, ``repaired`` or of a policy or run folder."""
    shipped = {"pretrained": pretrained_dir, "repaired": repaired_dir}
    return shipped[spec]() if spec in shipped else find_policy_dir(spec)


def walk_classes(border_moves: int | None) -> list[int | None]:
    """The classes a repair walks, cheapest first: K=0 (Chaos in the centre while it is
    open), then ``border_moves`` itself."""
    return [0] if border_moves == 0 else [0, border_moves]


def _walk(spec: str, start: State, folder: Path, border_moves: int | None, workers: int, every_class: bool,
          max_lines: int, log: Callable[[str], None], label: str) -> tuple[list[dict[str, Any]], list[list[int]]]:
    """Walk ``spec`` in the classes of :func:`walk_classes`, each in its own folder under
    ``folder``, stopping at the first with refutations unless ``every_class``; returns one
    record per walk and the refutation lines of the first class that has them."""
    records: list[dict[str, Any]] = []
    lines: list[list[int]] = []
    for k in walk_classes(border_moves):
        name = "all" if k is None else k
        walk = exploit(spec, start, k, max_lines=max_lines, work_dir=folder / f"walk_k{name}", workers=workers)
        records.append({"border_moves": name, "positions": walk.positions, "refutations": walk.refutation_count,
                        "seconds": round(walk.seconds, 3)})
        log(f"{label}: K={name}: {walk.positions:,} positions, {walk.refutation_count:,} refutations, {walk.seconds:.0f} s")
        if walk.refutation_count and not lines:
            lines = walk.refutations
            if not every_class:
                break
    return records, lines


SEARCH_FILE = "search.json"
SEARCH_LINES = 64
"""Refutation lines each beam search of a repair keeps at most (``--search-lines``)."""


def _search_walk(spec: str, start: State, folder: Path, border_moves: int | None, search: int, exact_up_to: int,
                 workers: int, max_lines: int, log: Callable[[str], None],
                 label: str, search_lines: int = SEARCH_LINES) -> tuple[list[dict[str, Any]], list[list[int]]]:
    """The classes K=0 .. ``exact_up_to`` (below ``border_moves``) walked exactly, each in
    its own folder under ``folder``, stopping at the first with refutations (their lines);
    when all are clean, the beam searches of :func:`find_refutations` (width ``search``) in
    the class ``border_moves`` itself, their lines kept in ``folder/search.json`` so that a
    resumed repair does not search again. One record per walk or search."""
    records: list[dict[str, Any]] = []
    for k in range(exact_up_to + 1):
        if border_moves is not None and k >= border_moves:
            break
        walk = exploit(spec, start, k, max_lines=max_lines, work_dir=folder / f"walk_k{k}", workers=workers)
        records.append({"border_moves": k, "positions": walk.positions, "refutations": walk.refutation_count,
                        "seconds": round(walk.seconds, 3)})
        log(f"{label}: K={k}: {walk.positions:,} positions, {walk.refutation_count:,} refutations, {walk.seconds:.0f} s")
        if walk.refutation_count:
            return records, walk.refutations
    path = folder / SEARCH_FILE
    if path.exists():
        saved = json.loads(path.read_text())
    else:
        import time

        began = time.process_time()
        lines, searches = find_refutations(move_chooser(spec), start, border_moves, search, most=search_lines)
        name = "all" if border_moves is None else border_moves
        saved = {"record": {"border_moves": name, "search": search, "refutations": len(lines), "searches": searches,
                            "cpu_seconds": round(time.process_time() - began, 1)}, "lines": lines}
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(saved))
        os.replace(partial, path)
    record = saved["record"]
    log(f"{label}: K={record['border_moves']}: {record['refutations']} refutations found by {record['searches']} "
        f"searches of width {search:,}, {record['cpu_seconds']} CPU s")
    return [*records, record], saved["lines"]


def subtree_left(border_moves: int | None, used: int, most: int | None) -> int | None:
    """The border moves Chaos has left below a repair point where it used ``used`` of the
    class's ``border_moves`` (None: all), at most ``most`` (None: no bound)."""
    left = None if border_moves is None else border_moves - used
    if most is None:
        return left
    return most if left is None else min(left, most)


def _no_progress(report: RepairReport, patience: int) -> bool:
    """The last ``patience`` rounds found no fewer refutations than the fewest before them."""
    counts = [report.original_refutations, *(r.refutations for r in report.rounds)]
    return len(counts) > patience and min(counts[-patience:]) >= min(counts[:-patience])


def repair(spec: str, out: str | Path | None, work_dir: str | Path, border_moves: int | None = 1,
           settings: RepairSettings = RepairSettings(), workers: int = 1, start: State = State(),
           log: Callable[[str], None] = lambda line: None, search: int | None = None, exact_up_to: int = 0,
           patience: int = 2, subtree_border_moves: int | None = None,
           search_lines: int = SEARCH_LINES) -> RepairReport:
    """Repair the Order network of the policy ``spec`` (``pretrained``, or a policy or run
    folder) against Chaos with at most ``border_moves`` border moves while the centre is
    open, as the module docstring describes; write the repaired policy (the Chaos network
    unchanged) to ``out`` (None: leave it in the work folder, ``report.policy``) when a round's
    walks find no refutation. Each round walks K=0 first and the class itself only when K=0 is
    clean (:func:`walk_classes`). ``work_dir`` keeps the walks, targets and networks of each
    round, and ``repair.json`` the question; the same call (``rounds`` may grow) resumes a
    stopped repair. ``workers``: processes for the whole-class walks; ``start``: where the
    walks start (the empty board; tests start late, where the tree is small). Raises
    ValueError when ``out`` is a file or a folder that is not empty, WorkDirError when
    ``work_dir`` holds a repair of another question (both before any work), and RuntimeError
    when no refutation line passes a position the strategy covers.

    ``search`` N: the class ``border_moves`` is too large to walk, so its refutations come
    from beam searches of width N (:func:`find_refutations`: several widths, restarts from the
    lines' positions), and the classes K=0 .. ``exact_up_to`` below it are walked exactly
    each round first (:func:`_search_walk`). The repair ends when a round's walks and searches
    find nothing (which proves nothing about the class beyond the exact walks), or, with
    ``report.stopped`` saying so, when ``patience`` rounds in a row found no fewer
    refutations than the fewest before them. ``search_lines``: lines each search keeps at
    most (more lines can pass more repair points).

    ``subtree_border_moves`` J: the subtree below a repair point is walked with at most J
    more border moves (fewer when the class leaves fewer): with K=2, a point after one border
    move and J=0 is walked in its K=0 subtree, not its K=1 one, which can hold millions of
    positions. The targets then cover less, and the next round's searches find what they
    left (default: every border move the class leaves)."""
    work_dir = Path(work_dir)
    if search is not None and border_moves == 0:
        raise ValueError("--search is for a class too large to walk; K=0 is walked exactly (drop --search)")
    if out is not None:
        check_new_folder(Path(out))
    source = policy_spec_dir(spec)
    nets, meta = load_policy_dir(source)
    original = nets["order"]
    original_sha256 = meta.get("files", {}).get("order.safetensors")
    question = {"agent": spec, "order_sha256": original_sha256,
                "border_moves": "all" if border_moves is None else border_moves,
                "start": start.to_string(),
                "settings": {k: v for k, v in asdict(settings).items() if k != "rounds"}}
    if search is not None:
        question["search"] = {"width": search, "exact_up_to": exact_up_to}
        if search_lines != SEARCH_LINES:
            question["search"]["lines"] = search_lines
    if subtree_border_moves is not None:
        question["subtree_border_moves"] = subtree_border_moves
    _check_question(work_dir, question)

    def walks(policy_spec: str, folder: Path, label: str, every_class: bool) -> tuple[list[dict[str, Any]], list[list[int]]]:
        if search is not None:
            return _search_walk(policy_spec, start, folder, border_moves, search, exact_up_to, workers,
                                settings.lines, log, label, search_lines)
        return _walk(policy_spec, start, folder, border_moves, workers, every_class, settings.lines, log, label)

    report = RepairReport(border_moves)
    report.original_walks, lines = walks(spec, work_dir / "original", "original", True)
    if not lines:
        return report
    largest = "all" if border_moves is None else border_moves
    anchored = next(r["border_moves"] for r in reversed(report.original_walks) if "positions" in r)  # an exact walk
    anchors = sample_anchors(work_dir / "original" / f"walk_k{anchored}", settings.anchors,
                             np.random.default_rng(settings.seed))
    held_x, held_o = top_of_walk(work_dir / "original" / f"walk_k{anchored}", settings.held_levels)
    held = (held_x, held_o, greedy_moves(original, held_x, held_o))
    net = copy.deepcopy(original)
    targets: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    repairs: list[tuple[np.ndarray, np.ndarray]] = []
    for number in range(1, settings.rounds + 1):
        folder = work_dir / f"round_{number}"
        round_report = RoundReport()
        evaluator = NetworkEvaluator({"order": net, "chaos": nets["chaos"]})
        points: dict[tuple[int, int], tuple[State, int]] = {}
        for line in lines:
            found = repair_point(line, start)
            key = None if found is None else (found[0].x, found[0].o)
            if found is not None and (key not in points or found[1] < points[key][1]):
                points[key] = found  # the fewest border moves spent: the largest subtree
        if not points:
            raise RuntimeError("no refutation line passes an Order position that the strategy covers, "
                               "so there is no move the strategy proves to give; start at such a position")
        if (folder / TARGETS_FILE).exists():
            saved = np.load(folder / TARGETS_FILE)
            new = (saved["x"], saved["o"], saved["moves"])
        else:
            parts = [subtree_targets(evaluator, state, subtree_left(border_moves, used, subtree_border_moves),
                                     folder / f"subtree_{i}")
                     for i, (state, used) in enumerate(points.values())]
            new = tuple(np.concatenate(column) for column in zip(*parts))
            _save_targets(folder / TARGETS_FILE, new)
        targets.append(new)
        overridden = greedy_moves(net, new[0], new[1]) != new[2]  # ``net``: the network the subtrees were walked with
        repairs.append((new[0][overridden], new[1][overridden]))
        given = {(int(x), int(o)): int(m) for x, o, m in zip(*new)}
        played = greedy_moves(net, np.array([s.x for s, _ in points.values()], np.uint64),
                              np.array([s.o for s, _ in points.values()], np.uint64))
        for (state, _), move in zip(points.values(), played):
            round_report.repair_points.append({"position": state.to_string(), "played": action_name(int(move)),
                                               "given": action_name(given[(state.x, state.o)])})
        tx, to, tmoves = _distinct_targets(targets)
        round_report.targets = int(tx.shape[0])
        round_report.targets_changed = int(np.sum(greedy_moves(net, tx, to) != tmoves))
        log(f"round {number}: {len(points)} repair points, {tx.shape[0]:,} targets, "
            f"{round_report.targets_changed:,} of them not the network's move")
        policy = folder / POLICY_FOLDER
        if (policy / "meta.json").exists():
            saved_nets, saved_meta = load_policy_dir(policy)
            net = saved_nets["order"]
            round_report.steps = int(saved_meta["repair"]["steps"])
            round_report.anchors_kept = float(saved_meta["repair"]["anchors_kept"])
            round_report.targets_tuned = int(saved_meta["repair"].get("targets_tuned", round_report.targets))
            round_report.targets_anchored = int(saved_meta["repair"].get("targets_anchored", 0))
            round_report.targets_held = int(saved_meta["repair"].get("targets_held", 0))
        else:
            repaired_boards = tuple(np.concatenate(column) for column in zip(*repairs))
            tuned, extra = split_targets(original, (tx, to, tmoves), repaired_boards, settings.kept_targets,
                                         np.random.default_rng([settings.seed, number]))
            top = _not_targets(held, tuned[0], tuned[1])  # a repair point's move wins over the original's
            round_report.targets_held = int(top[0].shape[0])
            tuned = tuple(np.concatenate([a, b]) for a, b in zip(tuned, top))
            keep = _not_targets(anchors, np.concatenate([tx, top[0]]), np.concatenate([to, top[1]]))
            keep = (np.concatenate([keep[0], extra[0]]), np.concatenate([keep[1], extra[1]]))
            round_report.targets_tuned = int(tuned[0].shape[0]) - round_report.targets_held
            round_report.targets_anchored = int(extra[0].shape[0])
            if settings.kept_targets is not None:
                log(f"  {round_report.targets_tuned:,} targets to play, {round_report.targets_anchored:,} more "
                    f"positions of the subtrees among the anchors")
            if settings.held_levels:
                log(f"  {round_report.targets_held:,} positions of the walk's first {settings.held_levels} levels "
                    f"keep their move as targets")
            round_report.steps, round_report.anchors_kept = fine_tune(net, original, keep, tuned, settings, log)
            repaired_meta = {k: v for k, v in meta.items() if k not in ("files", "format", "obs_version", "network")}
            repaired_meta["repair"] = {"from": spec, "git_commit": git_commit(), "from_order_sha256": original_sha256,
                                       "border_moves": largest, "round": number, "targets": round_report.targets,
                                       "targets_tuned": round_report.targets_tuned,
                                       "targets_anchored": round_report.targets_anchored,
                                       "targets_held": round_report.targets_held,
                                       "anchors": int(keep[0].shape[0]), "steps": round_report.steps,
                                       "anchors_kept": round_report.anchors_kept, "settings": asdict(settings)}
            save_policy_dir(policy, {"order": net, "chaos": nets["chaos"]}, repaired_meta)
        round_report.walks, lines = walks(str(policy), folder, f"round {number}", False)
        report.rounds.append(round_report)
        if not lines:
            report.repaired, report.policy = True, str(policy)
            if out is not None:
                publish(policy, Path(out))
            return report
        if search is not None and _no_progress(report, patience):
            report.stopped = (f"the last {patience} rounds found no fewer refutations than the fewest before them "
                              f"({', '.join(str(r.refutations) for r in report.rounds[-patience:])})")
            return report
    return report


def _save_targets(path: Path, targets: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    """Write a round's targets whole or not at all (a stopped write leaves no file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as handle:
        np.savez(handle, x=targets[0], o=targets[1], moves=targets[2])
    os.replace(partial, path)


def check_new_folder(out: Path) -> None:
    """Raise ValueError unless ``out`` is a new or empty folder (for the repaired policy)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} is not a new or empty folder; the repaired policy needs one")


def _check_question(work_dir: Path, question: dict[str, Any]) -> None:
    """Record what a repair answers in ``work_dir`` (``repair.json``), or refuse a work
    folder that holds a repair of another question."""
    path = work_dir / "repair.json"
    if path.exists():
        try:
            held = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise WorkDirError(f"{path}: not a readable repair question ({exc})") from None
        if held != question:
            differ = sorted(k for k in {*question, *held} if held.get(k) != question.get(k))
            raise WorkDirError(f"{work_dir} holds a repair with another {', '.join(differ)}; "
                               "use a new work folder, or the same agent, class, start and settings")
        return
    work_dir.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(question, indent=2))
    os.replace(partial, path)


def publish(policy: Path, out: Path) -> None:
    """Copy the policy folder ``policy`` to ``out`` (new or empty) whole or not at all: into
    a sibling first, then renamed, so that a stopped copy leaves ``out`` as it was."""
    out = out.resolve()
    partial = out.with_name(out.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    shutil.copytree(policy, partial)
    if out.exists():
        out.rmdir()
    os.replace(partial, out)


def _fresh(folder: Path) -> Path:
    """``folder`` for a walk: one stopped before its first checkpoint (no manifest) is
    removed so that it starts again; one with a manifest is resumed by :func:`exploit`."""
    if folder.exists() and not (folder / "manifest.json").exists():
        shutil.rmtree(folder)
    return folder


def _distinct_targets(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All targets, one per board, the latest round's move where rounds disagree."""
    x = np.concatenate([p[0] for p in parts[::-1]])
    o = np.concatenate([p[1] for p in parts[::-1]])
    moves = np.concatenate([p[2] for p in parts[::-1]])
    _, first = np.unique(np.stack([x, o], axis=1), axis=0, return_index=True)
    return x[first], o[first], moves[first]


def _not_targets(rows: tuple[np.ndarray, ...], tx: np.ndarray, to: np.ndarray) -> tuple[np.ndarray, ...]:
    """The rows (X, O, and any columns beside them: anchors, or held positions with their
    moves) whose board is not a target."""
    keep = ~_on_boards(rows[0], rows[1], tx, to)
    return tuple(column[keep] for column in rows)


def _on_boards(x: np.ndarray, o: np.ndarray, boards_x: np.ndarray, boards_o: np.ndarray) -> np.ndarray:
    """Which of the positions (``x``, ``o``) are among the boards (``boards_x``, ``boards_o``)."""
    boards = set(zip(boards_x.tolist(), boards_o.tolist()))
    return np.array([board in boards for board in zip(x.tolist(), o.tolist())], dtype=bool)


def write_report(report: RepairReport, path: Path) -> None:
    """The report as JSON in ``path``."""
    path.write_text(json.dumps(report.as_json(), indent=2))


def plot_rounds(report: RepairReport, path: Path) -> None:
    """Draw the refutations each round found (the original first) as bars, the exact walks'
    refutations beside the searches', in ``path`` (.svg or .png, by matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    walks = [report.original_walks, *(r.walks for r in report.rounds)]
    labels = ["original", *(f"round {i}" for i in range(1, len(report.rounds) + 1))]
    found = [w[-1]["refutations"] if w else 0 for w in walks]
    searched = ["search" in w[-1] if w else False for w in walks]
    figure, axes = plt.subplots(figsize=(6, 3.5))
    bars = axes.bar(labels, found, color=["tab:orange" if s else "tab:blue" for s in searched])
    axes.bar_label(bars)
    k = "all" if report.border_moves is None else report.border_moves
    axes.set_ylabel("refutations found")
    axes.set_title(f"Refutations per round, K={k} (orange: found by the searches, blue: exact walk)", fontsize=9)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
