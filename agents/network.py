"""The policy-value network and the on-disk policy directory (safetensors + meta.json).

``PolicyValueNet`` is a small residual CNN over the ``(3, 6, 6)`` planes of observation
encoding v1 (``envs.encoding``), optionally widened by fixed *window features*
(:class:`WindowFeatures`: per cell, how many live five-cell windows through it hold k
identical stones), which the game is all about and a small CNN otherwise has to learn to
count. Its policy head is a 1x1 convolution to two planes (X and
O on each cell), laid out so that logit ``2 * cell + symbol`` is action ``a``, plus a
learned per-action bias; its value head is a tanh scalar from the view of the player to move.

A *policy directory* holds ``order.safetensors``, ``chaos.safetensors`` and ``meta.json``
(network shape, observation-encoding version, step, config, git commit). Every file is
written atomically (temp file in the same directory, fsync, ``os.replace``).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from safetensors.torch import load as load_safetensors_bytes
from safetensors.torch import save as save_safetensors_bytes
from torch import nn

from envs.encoding import OBS_SHAPE, OBS_VERSION
from envs.rules import ACTIONS, AGENTS, CELLS, SIZE, WINDOW_CELLS

POLICY_FORMAT = "orderchaos-policy"
META_FILE = "meta.json"


class CheckpointError(ValueError):
    """A policy directory that cannot be loaded: missing files, a different observation
    encoding, or weights that do not fit the declared network shape."""


class ResidualBlock(nn.Module):
    """conv-bn-relu-conv-bn plus the input, then relu."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the block."""
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(y)))


class WindowFeatures(nn.Module):
    """Fixed (parameter-free) window features: planes ``(B, 3, 6, 6)`` -> ``(B, 9, 6, 6)``.

    For each of the 32 windows it counts the X and the O stones; a window is live for X
    when it holds no O (and the other way round). Feature ``k - 1`` (k = 1..4) of a cell is
    the number of windows through the cell that are live for X and hold k X stones,
    feature ``3 + k`` the same for O, and feature 8 the number of empty windows through it;
    each is divided by 4 to keep the inputs near unit scale. Swapping X and O swaps the
    first two groups, and board symmetries map the features with the board.
    """

    FEATURES = 9

    def __init__(self) -> None:
        super().__init__()
        incidence = torch.zeros(len(WINDOW_CELLS), CELLS)
        for i, cells in enumerate(WINDOW_CELLS):
            incidence[i, list(cells)] = 1.0
        self.register_buffer("incidence", incidence, persistent=False)

    def forward(self, planes: torch.Tensor) -> torch.Tensor:
        """The ``(B, 9, 6, 6)`` feature planes of ``planes`` (float)."""
        stones = planes[:, :2].flatten(2)  # (B, 2, 36)
        counts = stones @ self.incidence.T  # (B, 2, 32) X and O stones per window
        x_count, o_count = counts[:, 0], counts[:, 1]
        ks = torch.arange(1, 5, device=planes.device, dtype=counts.dtype).view(1, 4, 1)
        live_x = ((o_count == 0).unsqueeze(1) & (x_count.unsqueeze(1) == ks)).to(counts.dtype)
        live_o = ((x_count == 0).unsqueeze(1) & (o_count.unsqueeze(1) == ks)).to(counts.dtype)
        empty = ((x_count == 0) & (o_count == 0)).to(counts.dtype).unsqueeze(1)
        per_window = torch.cat([live_x, live_o, empty], dim=1)  # (B, 9, 32)
        per_cell = per_window @ self.incidence * 0.25  # (B, 9, 36)
        return per_cell.view(-1, self.FEATURES, SIZE, SIZE)


class PolicyValueNet(nn.Module):
    """Residual policy-value network: planes ``(B, 3, 6, 6)`` -> logits ``(B, 72)``, value ``(B,)``.

    Logits are unmasked; use :func:`masked_log_softmax` with the legal-action mask. With
    ``window_features`` the stem also sees the :class:`WindowFeatures` planes.
    """

    def __init__(
        self, channels: int = 32, blocks: int = 4, value_hidden: int = 64, window_features: bool = False
    ) -> None:
        super().__init__()
        for name, v, lo in (("channels", channels, 1), ("blocks", blocks, 0), ("value_hidden", value_hidden, 1)):
            if not isinstance(v, int) or isinstance(v, bool) or v < lo:
                raise ValueError(f"PolicyValueNet {name} must be an int >= {lo}, got {v!r}")
        if not isinstance(window_features, bool):
            raise ValueError(f"PolicyValueNet window_features must be a bool, got {window_features!r}")
        self.channels, self.blocks, self.value_hidden = channels, blocks, value_hidden
        self.window_features = WindowFeatures() if window_features else None
        in_planes = OBS_SHAPE[0] + (WindowFeatures.FEATURES if window_features else 0)
        self.stem = nn.Sequential(
            nn.Conv2d(in_planes, channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
        )
        self.trunk = nn.Sequential(*(ResidualBlock(channels) for _ in range(blocks)))
        self.policy_conv = nn.Conv2d(channels, 2, 1)
        self.policy_bias = nn.Parameter(torch.zeros(ACTIONS))
        self.value_conv = nn.Sequential(nn.Conv2d(channels, 2, 1, bias=False), nn.BatchNorm2d(2), nn.ReLU())
        self.value_fc = nn.Sequential(
            nn.Linear(2 * CELLS, value_hidden), nn.ReLU(), nn.Linear(value_hidden, 1)
        )

    def architecture(self) -> dict[str, int | bool]:
        """The constructor arguments, as stored in ``meta.json`` (``window_features`` only
        when set, so that older policy directories keep their exact metadata)."""
        arch: dict[str, int | bool] = {
            "channels": self.channels, "blocks": self.blocks, "value_hidden": self.value_hidden
        }
        if self.window_features is not None:
            arch["window_features"] = True
        return arch

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(B, 72)`` (index ``2 * cell + symbol``) and values ``(B,)`` in [-1, 1]."""
        planes = planes.float()
        if self.window_features is not None:
            planes = torch.cat([planes, self.window_features(planes)], dim=1)
        h = self.trunk(self.stem(planes))
        p = self.policy_conv(h).flatten(2)  # (B, 2 symbols, 36 cells)
        logits = p.transpose(1, 2).reshape(-1, ACTIONS) + self.policy_bias
        v = self.value_fc(self.value_conv(h).flatten(1))
        return logits, torch.tanh(v.squeeze(1))


def masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Log-probabilities over legal actions; illegal entries are ``-inf``.

    A row with no legal action gets all ``-inf`` (its softmax is all zeros, not NaN).
    """
    legal = mask.bool()
    masked = logits.masked_fill(~legal, float("-inf"))
    empty = ~legal.any(dim=1, keepdim=True)
    safe = masked.masked_fill(empty, 0.0)
    return torch.log_softmax(safe, dim=1).masked_fill(~legal, float("-inf"))


def masked_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Probabilities over legal actions: exactly zero on illegal ones, rows sum to 1
    (rows without any legal action are all zeros)."""
    return masked_log_softmax(logits, mask).exp()


# ---------------------------------------------------------------------------------------
# Files.
# ---------------------------------------------------------------------------------------


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old or the new file:
    a temp file in the same directory, fsync, then ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o644)  # mkstemp creates 0600; these are ordinary files
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def fsync_directory(path: str | Path) -> None:
    """Flush a directory entry (after renames) where the platform allows it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def git_commit(cwd: str | Path | None = None) -> str | None:
    """The current git commit of the checkout containing ``cwd`` (default: this package),
    or None when it is not a git checkout or git is missing."""
    where = Path(cwd) if cwd is not None else Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def net_to_bytes(net: PolicyValueNet) -> bytes:
    """The network's weights (and BatchNorm statistics) as safetensors bytes."""
    tensors = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    meta = {k: str(v) for k, v in net.architecture().items()}
    return save_safetensors_bytes(tensors, metadata={"format": POLICY_FORMAT, **meta})


def net_from_bytes(data: bytes, architecture: dict[str, int], where: str) -> PolicyValueNet:
    """Rebuild a network of ``architecture`` from safetensors bytes; CheckpointError if the
    weights do not fit."""
    net = PolicyValueNet(**architecture)
    try:
        net.load_state_dict(load_safetensors_bytes(data))
    except (RuntimeError, KeyError) as exc:
        raise CheckpointError(f"weights in {where} do not fit network {architecture}: {exc}") from None
    net.eval()
    return net


def save_policy_dir(
    path: str | Path, nets: dict[str, PolicyValueNet], meta: dict[str, Any] | None = None
) -> None:
    """Write ``order.safetensors``, ``chaos.safetensors`` and ``meta.json`` into ``path``.

    ``nets`` maps ``"order"`` and ``"chaos"`` to their networks. ``meta`` is merged into the
    written metadata, which always records the format, ``obs_version`` and the network shape.
    """
    path = Path(path)
    missing = [r for r in AGENTS if r not in nets]
    if missing:
        raise ValueError(f"save_policy_dir needs networks for {AGENTS}, missing {missing}")
    for role in AGENTS:
        atomic_write_bytes(path / f"{role}.safetensors", net_to_bytes(nets[role]))
    full_meta = {
        "format": POLICY_FORMAT,
        "obs_version": OBS_VERSION,
        "network": nets["order"].architecture(),
        **(meta or {}),
    }
    atomic_write_bytes(path / META_FILE, json.dumps(full_meta, indent=2, default=str).encode())


def read_meta(path: str | Path) -> dict[str, Any]:
    """Read and check ``meta.json`` of a policy directory (format and OBS_VERSION)."""
    meta_path = Path(path) / META_FILE
    if not meta_path.is_file():
        raise CheckpointError(f"{str(path)!r} is not a policy directory: {META_FILE} is missing")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"{meta_path} is not valid JSON: {exc}") from None
    version = meta.get("obs_version")
    if version != OBS_VERSION:
        raise CheckpointError(
            f"policy in {str(path)!r} was trained on observation encoding version {version!r}, "
            f"but this code uses version {OBS_VERSION}; it cannot be loaded"
        )
    if not isinstance(meta.get("network"), dict):
        raise CheckpointError(f"{meta_path} does not record the network shape ('network')")
    return meta


def load_policy_dir(
    path: str | Path, device: str | torch.device = "cpu"
) -> tuple[dict[str, PolicyValueNet], dict[str, Any]]:
    """Load both roles' networks (in eval mode, on ``device``) and the metadata.

    Raises CheckpointError for a missing file, a different OBS_VERSION or mismatched weights.
    """
    path = Path(path)
    meta = read_meta(path)
    nets: dict[str, PolicyValueNet] = {}
    for role in AGENTS:
        file = path / f"{role}.safetensors"
        if not file.is_file():
            raise CheckpointError(f"policy directory {str(path)!r} lacks {file.name}")
        nets[role] = net_from_bytes(file.read_bytes(), meta["network"], str(file)).to(device)
    return nets, meta


def resolve_device(device: str) -> torch.device:
    """``auto`` -> cuda when available else cpu; ``cuda`` without a GPU is refused."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' requested but torch sees no CUDA device; use auto or cpu")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, got {device!r}")
    return torch.device(device)
