"""orderchaos export: the latest policy of a run copied to a policy directory."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file

from helpers import self_play_moves, train_smoke


def test_export_copies_the_latest_policy(tmp_path: Path) -> None:
    from orderchaos.cli.main import main as cli_main

    def export_main(argv: list[str]) -> int:
        return cli_main(["export", *argv])

    weights = train_smoke(tmp_path / "run")
    dest = tmp_path / "pretrained"
    assert export_main([str(tmp_path / "run"), "--dest", str(dest)]) == 0
    assert sorted(p.name for p in dest.iterdir()) == ["chaos.safetensors", "meta.json", "order.safetensors"]
    exported = load_file(str(dest / "order.safetensors"))
    assert all(torch.equal(exported[k], weights["order"][k]) for k in exported)
    assert self_play_moves(str(dest)) == self_play_moves(str(tmp_path / "run"))
    assert export_main([str(tmp_path / "nothing-here"), "--dest", str(dest)]) == 2
