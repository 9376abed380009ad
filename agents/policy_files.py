"""Everything this project knows about policy files and run directories on disk.

A *policy directory* holds ``order.safetensors``, ``chaos.safetensors`` and ``meta.json``
(format, observation-encoding version, network shape, step, config, git commit, and the
SHA-256 of every other file in the directory under ``files``). A *run directory* (one
training run) holds::

    config.yaml                          the resolved config
    checkpoints/step_0000040/            one checkpoint: a policy directory plus trainer state
        order.safetensors chaos.safetensors trainer_state.pt meta.json
    checkpoints/latest -> step_0000040   symlink to the newest complete checkpoint

Every file is written atomically (temp file, fsync, ``os.replace``); a checkpoint is
assembled in a hidden temp directory and renamed into place in one step, and only then is
``latest`` repointed, so a crash at any moment leaves the previous checkpoint intact.
``meta.json`` is written last and carries the checksums, so a file damaged later (a bad
disk, a hand edit, a truncated copy) is refused with a :class:`CheckpointError` naming it,
and :func:`load_latest_good_checkpoint` falls back to the newest checkpoint that verifies.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors_bytes
from safetensors.torch import save as save_safetensors_bytes

from orderchaos.agents.network import PolicyValueNet
from orderchaos.envs.encoding import OBS_VERSION
from orderchaos.envs.rules import AGENTS
from orderchaos.files import atomic_write_bytes, fsync_directory, git_commit, loads_bounded, sha256_hex

POLICY_FORMAT = "orderchaos-policy"
META_FILE = "meta.json"
WEIGHT_FILES = tuple(f"{role}.safetensors" for role in AGENTS)
TRAINER_STATE = "trainer_state.pt"
CHECKPOINTS_DIR = "checkpoints"
LATEST = "latest"
STEP_PREFIX = "step_"


class CheckpointError(ValueError):
    """A policy directory or checkpoint that cannot be loaded: missing or damaged files, a
    different observation encoding, or weights that do not fit the declared network shape."""


# ---------------------------------------------------------------------------------------
# Policy directories.
# ---------------------------------------------------------------------------------------


def net_to_bytes(net: PolicyValueNet) -> bytes:
    """The network's weights (and BatchNorm statistics) as safetensors bytes."""
    tensors = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    meta = {k: str(v) for k, v in net.architecture().items()}
    return save_safetensors_bytes(tensors, metadata={"format": POLICY_FORMAT, **meta})


def net_from_bytes(data: bytes, architecture: dict[str, int], where: str) -> PolicyValueNet:
    """Rebuild a network of ``architecture`` from safetensors bytes; CheckpointError if the
    bytes are not a safetensors file or the weights do not fit."""
    net = PolicyValueNet(**architecture)
    try:
        tensors = load_safetensors_bytes(data)
    except (SafetensorError, ValueError, OSError) as exc:
        raise CheckpointError(f"{where} is damaged: not a readable safetensors file ({exc})") from None
    try:
        net.load_state_dict(tensors)
    except (RuntimeError, KeyError) as exc:
        raise CheckpointError(f"weights in {where} do not fit network {architecture}: {exc}") from None
    net.eval()
    return net


def save_policy_dir(
    path: str | Path,
    nets: dict[str, PolicyValueNet],
    meta: dict[str, Any] | None = None,
    extra_files: dict[str, bytes] | None = None,
) -> None:
    """Write ``order.safetensors``, ``chaos.safetensors``, any ``extra_files`` and, last,
    ``meta.json`` into ``path``.

    ``nets`` maps ``"order"`` and ``"chaos"`` to their networks. ``meta`` is merged into the
    written metadata, which always records the format, ``obs_version``, the network shape
    and the SHA-256 of each file written (``files``).
    """
    path = Path(path)
    missing = [r for r in AGENTS if r not in nets]
    if missing:
        raise ValueError(f"save_policy_dir needs networks for {AGENTS}, missing {missing}")
    contents = {f"{role}.safetensors": net_to_bytes(nets[role]) for role in AGENTS}
    contents.update(extra_files or {})
    for name, data in contents.items():
        atomic_write_bytes(path / name, data)
    full_meta = {
        "format": POLICY_FORMAT,
        "obs_version": OBS_VERSION,
        "network": nets["order"].architecture(),
        **(meta or {}),
        "files": {name: sha256_hex(data) for name, data in contents.items()},
    }
    atomic_write_bytes(path / META_FILE, json.dumps(full_meta, indent=2, default=str).encode())


def read_meta(path: str | Path) -> dict[str, Any]:
    """Read and check ``meta.json`` of a policy directory (format and OBS_VERSION)."""
    meta_path = Path(path) / META_FILE
    if not meta_path.is_file():
        raise CheckpointError(f"{str(path)!r} is not a policy directory: {META_FILE} is missing")
    try:
        meta = loads_bounded(meta_path.read_text())
    except ValueError as exc:  # bad JSON, text or a number beyond its bounds
        raise CheckpointError(f"{meta_path} is damaged: not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise CheckpointError(f"{meta_path} is damaged: expected a JSON object")
    version = meta.get("obs_version")
    if version != OBS_VERSION:
        raise CheckpointError(
            f"policy in {str(path)!r} was trained on observation encoding version {version!r}, "
            f"but this code uses version {OBS_VERSION}; it cannot be loaded"
        )
    if not isinstance(meta.get("network"), dict):
        raise CheckpointError(f"{meta_path} does not record the network shape ('network')")
    return meta


def read_checked(directory: Path, name: str, meta: dict[str, Any]) -> bytes:
    """The bytes of ``directory/name``, checked against the SHA-256 in ``meta['files']``
    when the metadata records one (policies written before checksums have none)."""
    file = directory / name
    if not file.is_file():
        raise CheckpointError(f"{str(directory)!r} lacks {name}")
    data = file.read_bytes()
    expected = (meta.get("files") or {}).get(name)
    if expected is not None and sha256_hex(data) != expected:
        raise CheckpointError(f"{file} is damaged: its SHA-256 does not match {META_FILE}")
    return data


def load_policy_dir(
    path: str | Path, device: str | torch.device = "cpu"
) -> tuple[dict[str, PolicyValueNet], dict[str, Any]]:
    """Load both roles' networks (in eval mode, on ``device``) and the metadata.

    Raises CheckpointError for a missing or damaged file, a different OBS_VERSION or
    mismatched weights; the message names the file.
    """
    path = Path(path)
    meta = read_meta(path)
    nets: dict[str, PolicyValueNet] = {}
    for role in AGENTS:
        name = f"{role}.safetensors"
        data = read_checked(path, name, meta)
        nets[role] = net_from_bytes(data, meta["network"], str(path / name)).to(device)
    return nets, meta


def find_policy_dir(path: str | Path) -> Path:
    """The policy directory behind ``path``: ``path`` itself when it holds ``meta.json``,
    else the run's latest checkpoint (``checkpoints/latest`` or, if that link is missing,
    the newest complete ``checkpoints/step_*``)."""
    path = Path(path)
    if (path / META_FILE).is_file():
        return path
    ckpt = path / CHECKPOINTS_DIR
    latest = ckpt / LATEST
    if (latest / META_FILE).is_file():
        return latest.resolve()
    steps = checkpoints_newest_first(path)
    for bad in incomplete_newer_checkpoints(path, steps[0] if steps else None):
        warnings.warn(
            f"skipping checkpoint {bad.name} of {str(path)!r}: its {META_FILE} is missing"
            + (f"; using {steps[0].name}" if steps else ""),
            stacklevel=2,
        )
    if steps:
        return steps[0]
    raise CheckpointError(
        f"{str(path)!r} holds no policy: expected {META_FILE} + order/chaos.safetensors there, "
        f"or a run directory with {CHECKPOINTS_DIR}/{LATEST}"
    )


def pretrained_dir() -> Path:
    """Where the shipped pretrained policy lives (``agents/data/pretrained``)."""
    return Path(str(resources.files("orderchaos.agents") / "data" / "pretrained"))


def repaired_dir() -> Path:
    """Where the shipped repaired policy lives (``agents/data/repaired``): the pretrained
    policy after ``orderchaos repair --border-moves 1``."""
    return Path(str(resources.files("orderchaos.agents") / "data" / "repaired"))


def export_policy(run_dir: str | Path, dest: str | Path | None = None) -> Path:
    """Copy the policy files of ``run_dir``'s latest checkpoint (or of a policy directory)
    into ``dest`` (default: the package's pretrained directory), without the trainer state,
    after checking that they load and verify. Returns ``dest``."""
    source = find_policy_dir(run_dir)
    load_policy_dir(source)  # refuses damaged files or another OBS_VERSION
    meta = read_meta(source)
    target = Path(dest) if dest is not None else pretrained_dir()
    contents = {name: read_checked(source, name, meta) for name in WEIGHT_FILES}
    for name, data in contents.items():
        atomic_write_bytes(target / name, data)
    meta["files"] = {name: sha256_hex(data) for name, data in contents.items()}
    atomic_write_bytes(target / META_FILE, json.dumps(meta, indent=2, default=str).encode())
    return target


# ---------------------------------------------------------------------------------------
# Run directories and checkpoints.
# ---------------------------------------------------------------------------------------


def step_dir_name(step: int) -> str:
    """The directory name of the checkpoint at ``step``."""
    return f"{STEP_PREFIX}{step:07d}"


def checkpoints_newest_first(run_dir: str | Path) -> list[Path]:
    """Every complete checkpoint directory of a run (one with ``meta.json``), newest first."""
    root = Path(run_dir) / CHECKPOINTS_DIR
    if not root.is_dir():
        return []
    steps = [p for p in root.glob(f"{STEP_PREFIX}*") if p.is_dir() and (p / META_FILE).is_file()]
    return sorted(steps, reverse=True)


def incomplete_newer_checkpoints(run_dir: str | Path, than: Path | None) -> list[Path]:
    """The checkpoint directories of a run without ``meta.json`` that are newer than the
    complete checkpoint ``than`` (all of them when None), newest first: damage to report,
    since a save writes ``meta.json`` before the directory gets its ``step_*`` name."""
    root = Path(run_dir) / CHECKPOINTS_DIR
    if not root.is_dir():
        return []
    return sorted(
        (p for p in root.glob(f"{STEP_PREFIX}*")
         if p.is_dir() and not (p / META_FILE).is_file() and (than is None or p.name > than.name)),
        reverse=True,
    )


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

    ``meta`` gets ``step``, ``obs_version``, ``git_commit`` and the files' checksums added.
    """
    root = Path(run_dir) / CHECKPOINTS_DIR
    root.mkdir(parents=True, exist_ok=True)
    final = root / step_dir_name(step)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{final.name}."))
    try:
        extra: dict[str, bytes] = {}
        if trainer_state is not None:
            buffer = io.BytesIO()
            # Protocol 4 writes numpy arrays' bytes as they are (protocol 2, torch's default,
            # re-encodes them, a third larger for the solver tables' keys).
            torch.save(trainer_state, buffer, pickle_protocol=4)
            extra[TRAINER_STATE] = buffer.getvalue()
        full_meta = {**meta, "step": step, "git_commit": git_commit()}
        save_policy_dir(tmp, nets, full_meta, extra)
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
    # What a save killed midway leaves: the hidden directory it assembled the checkpoint in,
    # the old copy of a step it was saving again, or its temporary ``latest`` link.
    for leftover in [*root.glob(f".{STEP_PREFIX}*"), *root.glob(f".stale.{STEP_PREFIX}*"),
                     *root.glob(f".{LATEST}.*.tmp")]:
        if leftover.is_symlink():
            leftover.unlink()
        elif leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The newest complete checkpoint directory of a run, or None when there is none."""
    try:
        return find_policy_dir(Path(run_dir)) if (Path(run_dir) / CHECKPOINTS_DIR).is_dir() else None
    except CheckpointError:
        return None


def load_checkpoint(
    checkpoint: str | Path, device: str | torch.device = "cpu"
) -> tuple[dict[str, PolicyValueNet], dict[str, Any], dict[str, Any] | None]:
    """Load a checkpoint directory: networks, meta, and the trainer state (None if absent).
    Every file is verified against the checksums in ``meta.json``; CheckpointError names a
    damaged one."""
    checkpoint = Path(checkpoint)
    nets, meta = load_policy_dir(checkpoint, device=device)
    if not (checkpoint / TRAINER_STATE).is_file():
        return nets, meta, None
    data = read_checked(checkpoint, TRAINER_STATE, meta)
    try:
        state = torch.load(io.BytesIO(data), map_location=device, weights_only=False)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError) as exc:
        raise CheckpointError(f"{checkpoint / TRAINER_STATE} is damaged: {exc}") from None
    return nets, meta, state


@dataclass
class LoadedCheckpoint:
    """The newest checkpoint of a run that loaded and verified, and the ones passed over."""

    path: Path
    nets: dict[str, PolicyValueNet]
    meta: dict[str, Any]
    trainer_state: dict[str, Any] | None
    skipped: list[tuple[Path, str]] = field(default_factory=list)


def load_latest_good_checkpoint(
    run_dir: str | Path, device: str | torch.device = "cpu"
) -> LoadedCheckpoint | None:
    """The newest checkpoint of ``run_dir`` whose files all load and verify, with the newer
    ones that did not (and why) in ``skipped``. None when the run has no checkpoint at all;
    CheckpointError when it has some but none loads."""
    candidates = checkpoints_newest_first(run_dir)
    skipped: list[tuple[Path, str]] = [
        (bad, f"{bad / META_FILE} is missing")
        for bad in incomplete_newer_checkpoints(run_dir, candidates[0] if candidates else None)
    ]
    for checkpoint in candidates:
        try:
            nets, meta, state = load_checkpoint(checkpoint, device=device)
        except CheckpointError as exc:
            skipped.append((checkpoint, str(exc)))
            continue
        return LoadedCheckpoint(checkpoint, nets, meta, state, skipped)
    if skipped:
        reasons = "; ".join(reason for _, reason in skipped)
        raise CheckpointError(f"no checkpoint of {str(run_dir)!r} loads: {reasons}")
    return None
