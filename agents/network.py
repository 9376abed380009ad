"""The policy-value network (its files on disk are :mod:`orderchaos.agents.policy_files`).

``PolicyValueNet`` is a small residual CNN over the ``(3, 6, 6)`` planes of observation
encoding v1 (``orderchaos.envs.encoding``), optionally widened by fixed *window features*
(:class:`WindowFeatures`: per cell, how many live five-cell windows through it hold k
identical stones), which the game is all about and a small CNN otherwise has to learn to
count. Its policy head is a 1x1 convolution to two planes (X and
O on each cell), laid out so that logit ``2 * cell + symbol`` is action ``a``, plus a
learned per-action bias; its value head is a tanh scalar from the view of the player to move.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from orderchaos.envs.encoding import OBS_SHAPE
from orderchaos.envs.rules import ACTIONS, CELLS, SIZE, WINDOW_CELLS


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
        """Logits ``(B, 72)`` (index ``2 * cell + symbol``) and values ``(B,)`` in [-1, 1],
        computed in the dtype of the network's weights (float32 unless converted)."""
        planes = planes.to(self.policy_bias.dtype)
        if self.window_features is not None:
            planes = torch.cat([planes, self.window_features(planes)], dim=1)
        h = self.trunk(self.stem(planes))
        p = self.policy_conv(h).flatten(2)  # (B, 2 symbols, 36 cells)
        logits = p.transpose(1, 2).reshape(-1, ACTIONS) + self.policy_bias
        v = self.value_fc(self.value_conv(h).flatten(1))
        return logits, torch.tanh(v.squeeze(1))


def deepened(source: PolicyValueNet, blocks: int) -> PolicyValueNet:
    """A copy of ``source`` with ``blocks`` residual blocks that computes the same function.

    The source's blocks come first; each added block ends in a batch norm whose scale is
    zero, so it passes its (non-negative, post-relu) input through unchanged until training
    moves that scale. Lets a run continue trained weights with a deeper trunk.
    """
    if blocks < source.blocks:
        raise ValueError(f"deepened: {blocks} blocks is fewer than the source's {source.blocks}")
    arch = source.architecture()
    arch["blocks"] = blocks
    deeper = PolicyValueNet(**arch).to(source.policy_bias.device, source.policy_bias.dtype)
    deeper.load_state_dict(source.state_dict(), strict=False)
    for block in list(deeper.trunk)[source.blocks:]:
        nn.init.zeros_(block.bn2.weight)
        nn.init.zeros_(block.bn2.bias)
    return deeper


def trace_for_inference(net: nn.Module, example: torch.Tensor) -> torch.jit.ScriptModule | None:
    """``net``'s eval-mode forward traced on ``example`` (TorchScript), sharing ``net``'s
    parameters and buffers; None where tracing fails (or a future torch drops it).

    TorchScript is deprecated in recent torch, but it is still the fastest CPU inference
    path for networks this small that needs no compiler toolchain.
    """
    was_training = net.training
    net.eval()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the deprecation notices of torch.jit
            return torch.jit.trace(net, example, check_trace=False)
    except (AttributeError, RuntimeError):
        return None
    finally:
        net.train(was_training)


def freeze_for_inference(traced: torch.jit.ScriptModule, optimize: bool = True) -> Callable[[torch.Tensor], tuple]:
    """A traced network frozen with its current weights (constants folded), and with
    ``optimize`` also optimised for inference (batch norm folded into the convolutions,
    oneDNN kernels on CPU: faster from two positions a batch up, slower for one)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frozen = torch.jit.freeze(traced)
        return torch.jit.optimize_for_inference(frozen) if optimize else frozen


INFERENCE_PRECISIONS = ("float32", "bfloat16")
"""The precisions :class:`InferenceForward` runs a network in."""


class InferenceForward:
    """``net``'s forward for inference: traced once (:func:`trace_for_inference`, about
    0.1 s), then frozen (:func:`freeze_for_inference`, about 0.03 s) on first use and again
    whenever its weights have changed since; a single position runs through the frozen
    module, a batch through the one also optimised for inference. Call it in
    ``torch.inference_mode()`` with the network in eval mode; its outputs match
    ``net(planes)`` to float rounding.

    With ``precision="bfloat16"`` the compiled modules run a bfloat16, channels-last copy of
    the network, which takes the new weights in place whenever they change: on a CPU with
    AVX512-BF16 1.3-1.8x cheaper a position at batches of 64 to 960 (measured,
    docs/experiments.md), slower for a single position and on CPUs without bfloat16 units, at
    the cost of bfloat16 rounding (logits moved by up to about 0.12, values by up to about
    0.07 on the shipped networks). The outputs are float32 either way.

    A change is seen through the in-place version counter of each parameter and buffer
    (optimiser steps, ``load_state_dict`` and batch-norm statistics all bump it), which the
    traced module shares with ``net``. The tensors are listed once, as walking the modules
    on every call would cost a sixth of the forward pass; a network whose parameter objects
    are replaced needs a new instance.
    """

    def __init__(self, net: nn.Module, precision: str = "float32") -> None:
        if precision not in INFERENCE_PRECISIONS:
            raise ValueError(f"precision must be one of {INFERENCE_PRECISIONS}, got {precision!r}")
        self.net = net
        self.precision = precision
        self._tensors = [*net.parameters(), *net.buffers()]
        self._version: tuple[int, ...] | None = None
        self._traced: torch.jit.ScriptModule | None = None
        self._low: nn.Module | None = None  # the bfloat16 copy
        self._single: Callable[[torch.Tensor], tuple] = net
        self._batch: Callable[[torch.Tensor], tuple] = net
        self.compilations = 0

    def __call__(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits and values, as :meth:`PolicyValueNet.forward`."""
        version = tuple(t._version for t in self._tensors)
        if version != self._version:
            self._compile(planes)
            self._version = version
            self.compilations += 1
        logits, values = (self._single if planes.shape[0] == 1 else self._batch)(planes)
        return logits.float(), values.float()

    def _compile(self, example: torch.Tensor) -> None:
        # Traced once: the traced module shares the tensors of the module it traced, so new
        # weights only need freezing again. In bfloat16 that module is a copy of the network
        # in the new dtype and layout, whose tensors take the new weights in place.
        if self.precision == "float32":
            source = self.net
        elif self._low is None:
            source = self._low = copy.deepcopy(self.net).to(torch.bfloat16).to(memory_format=torch.channels_last)
        else:
            source = self._low
            with torch.inference_mode():
                for low, weights in zip([*source.parameters(), *source.buffers()], self._tensors):
                    low.copy_(weights)
        if self._traced is None:
            self._traced = trace_for_inference(source, example)
        if self._traced is None:  # tracing failed: run the module itself
            self._single = self._batch = source
        else:
            self._single = freeze_for_inference(self._traced, optimize=False)
            self._batch = freeze_for_inference(self._traced)


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


def resolve_device(device: str) -> torch.device:
    """``auto`` -> cuda when available else cpu; ``cuda`` without a GPU is refused."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' requested but torch sees no CUDA device; use auto or cpu")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, got {device!r}")
    return torch.device(device)
