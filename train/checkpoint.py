"""Checkpoints of a training run: atomic, resumable, and loadable as an agent.

Layout inside a run directory::

    config.yaml                       the resolved config
    checkpoints/step_0000040/         one checkpoint (a policy directory plus trainer state)
        order.safetensors chaos.safetensors meta.json trainer_state.pt
    checkpoints/latest -> step_0000040   symlink to the newest complete checkpoint

A checkpoint is assembled in a hidden temp directory, every file fsynced, and then renamed
into place in one step; only afterwards is ``latest`` repointed (atomically, ``os.replace`` of
a fresh symlink). A crash at any moment leaves the previous checkpoint intact.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from agents.network import (
    PolicyValueNet,
    atomic_write_bytes,
    fsync_directory,
    git_commit,
    load_policy_dir,
    save_policy_dir,
)
from agents.neural import CHECKPOINTS_DIR, LATEST, find_policy_dir
from envs.encoding import OBS_VERSION

TRAINER_STATE = "trainer_state.pt"
STEP_PREFIX = "step_"


def step_dir_name(step: int) -> str:
    """The directory name of the checkpoint at ``step``."""
    return f"{STEP_PREFIX}{step:07d}"


def save_checkpoint(
    run_dir: str | Path,
    step: int,
    nets: dict[str, PolicyValueNet],
    meta: dict[str, Any],
    trainer_state: dict[str, Any] | None = None,
    keep: int = 2,
) -> Path:
    """Write the checkpoint of ``step`` atomically, point ``latest`` at it, and delete all
    but the newest ``keep`` checkpoints. Returns the checkpoint directory.

    ``meta`` gets ``step``, ``obs_version`` and ``git_commit`` added.
    """
    root = Path(run_dir) / CHECKPOINTS_DIR
    root.mkdir(parents=True, exist_ok=True)
    final = root / step_dir_name(step)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{final.name}."))
    try:
        full_meta = {**meta, "step": step, "obs_version": OBS_VERSION, "git_commit": git_commit()}
        save_policy_dir(tmp, nets, full_meta)
        if trainer_state is not None:
            buffer = io.BytesIO()
            torch.save(trainer_state, buffer)
            atomic_write_bytes(tmp / TRAINER_STATE, buffer.getvalue())
        fsync_directory(tmp)
        if final.exists():  # re-saving a step (after a resume): move the old one aside first
            stale = Path(tempfile.mkdtemp(dir=root, prefix=f".stale.{final.name}."))
            os.replace(final, stale / final.name)
            shutil.rmtree(stale)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _point_latest(root, final.name)
    fsync_directory(root)
    _prune(root, keep)
    return final


def _point_latest(root: Path, target_name: str) -> None:
    link = root / LATEST
    tmp_link = root / f".{LATEST}.{os.getpid()}.tmp"
    if tmp_link.is_symlink() or tmp_link.exists():
        tmp_link.unlink()
    os.symlink(target_name, tmp_link)
    os.replace(tmp_link, link)


def _prune(root: Path, keep: int) -> None:
    steps = sorted(p for p in root.glob(f"{STEP_PREFIX}*") if p.is_dir())
    current = (root / LATEST).resolve()
    for old in steps[:-keep]:
        if old.resolve() != current:
            shutil.rmtree(old, ignore_errors=True)
    for leftover in root.glob(".*.tmp*"):  # temp dirs of a crashed save
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The newest complete checkpoint directory of a run, or None when there is none."""
    try:
        return find_policy_dir(Path(run_dir)) if (Path(run_dir) / CHECKPOINTS_DIR).is_dir() else None
    except ValueError:
        return None


def load_checkpoint(
    checkpoint: str | Path, device: str | torch.device = "cpu"
) -> tuple[dict[str, PolicyValueNet], dict[str, Any], dict[str, Any] | None]:
    """Load a checkpoint directory: networks, meta, and the trainer state (None if absent)."""
    checkpoint = Path(checkpoint)
    nets, meta = load_policy_dir(checkpoint, device=device)
    state_file = checkpoint / TRAINER_STATE
    state = None
    if state_file.is_file():
        state = torch.load(state_file, map_location=device, weights_only=False)
    return nets, meta, state
