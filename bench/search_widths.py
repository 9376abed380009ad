"""How wide must a refutation search be? ``python -m orderchaos.bench.search_widths``.

For each player and class, the beam search (:func:`orderchaos.proof.exploit.beam_refutations`,
every losing line of the first level where the beam reaches a full board, up to ``--most``)
at widths 256, 1,024, ... ``--max-width``: the distinct refutations (board before Chaos's last
move, that move) it finds, how many of them no narrower width found, and whether each
narrower width's refutations are among the wider one's. Every line it returns is a real
refutation (each Order move the player's asked alone, the board full without a five), so the
question is what a width misses, not whether it is right. One JSON line per search.
"""

from __future__ import annotations

import argparse
import json
import time

from orderchaos.envs.rules import State
from orderchaos.proof.exploit import beam_refutations, move_chooser


def pair(line: list[int]) -> tuple[int, int, int]:
    """(X, O before the last move, the last move) of a line from the empty board."""
    state = State()
    for action in line[:-1]:
        state = state.apply(action)
    return state.x, state.o, line[-1]


def border_class(text: str) -> int | None:
    """``all`` (None: no limit) or a number of border moves."""
    if text == "all":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of border moves or all") from None


def main(argv: list[str] | None = None) -> None:
    """Run the searches and print one JSON object per search."""
    parser = argparse.ArgumentParser(prog="python -m orderchaos.bench.search_widths")
    parser.add_argument("--agent", nargs="+", default=["pretrained", "repaired"])
    parser.add_argument("--border-moves", nargs="+", type=border_class, default=[1, 2])
    parser.add_argument("--min-width", type=int, default=256)
    parser.add_argument("--max-width", type=int, default=16384)
    parser.add_argument("--most", type=int, default=100_000)
    args = parser.parse_args(argv)
    for agent in args.agent:
        chooser = move_chooser(agent)
        for k in args.border_moves:
            seen: set[tuple[int, int, int]] = set()
            width = args.min_width
            while width <= args.max_width:
                began = time.process_time()
                found = {pair(line) for line in beam_refutations(chooser, State(), k, width, args.most)}
                print(json.dumps({"agent": agent, "border_moves": "all" if k is None else k, "width": width, "found": len(found),
                                  "new": len(found - seen), "narrower_confirmed": len(seen & found),
                                  "narrower_total": len(seen), "cpu_seconds": round(time.process_time() - began, 1)}),
                      flush=True)
                seen |= found
                width *= 4


if __name__ == "__main__":
    main()
