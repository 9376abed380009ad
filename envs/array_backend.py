"""The array shim of the batch engine: the few calls whose spelling differs between numpy and torch.

:mod:`orderchaos.envs.batch` runs the same code on numpy arrays and torch tensors; the
calls spelled differently in the two libraries (creating arrays, casting, copying, masked
zeroing, converting back to numpy) go through :class:`ArrayBackend`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

BACKENDS = ("numpy", "torch")
"""The array libraries :class:`ArrayBackend` speaks."""


class ArrayBackend:
    """The few array calls whose spelling differs between numpy and torch.

    ``ArrayBackend("numpy")`` or ``ArrayBackend("torch", "cuda")``. Torch is imported
    only when asked for, so ``import envs`` stays light.
    """

    def __init__(self, backend: str = "numpy", device: str = "cpu") -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.name = backend
        if backend == "numpy":
            if str(device) != "cpu":
                raise ValueError(
                    f"the numpy backend runs on the CPU only, got device={device!r}; "
                    "use backend='torch' for other devices"
                )
            self.lib: Any = np
            self.device = "cpu"
            self.int8, self.int16, self.int32, self.int64 = np.int8, np.int16, np.int32, np.int64
            self.bool_, self.float32, self.complex128 = np.bool_, np.float32, np.complex128
        else:
            import torch

            self.lib = torch
            try:
                self.device = torch.device(device)
            except RuntimeError as exc:
                raise ValueError(f"bad torch device {device!r}: {exc}") from None
            self.int8, self.int16, self.int32 = torch.int8, torch.int16, torch.int32
            self.int64 = torch.int64
            self.bool_, self.float32, self.complex128 = torch.bool, torch.float32, torch.complex128

    def asarray(self, data: Any, dtype: Any = None) -> Any:
        """``data`` as an array of this backend (no copy when it already is one)."""
        if self.name == "numpy":
            if hasattr(data, "detach"):  # a torch tensor handed to the numpy backend
                data = data.detach().cpu().numpy()
            return np.asarray(data, dtype=dtype)
        if isinstance(data, np.ndarray) and not data.flags.writeable:
            data = data.copy()  # torch warns on read-only numpy buffers
        return self.lib.as_tensor(data, dtype=dtype, device=self.device)

    def zeros(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """A zero-filled array."""
        if self.name == "numpy":
            return np.zeros(shape, dtype=dtype)
        return self.lib.zeros(shape, dtype=dtype, device=self.device)

    def full(self, shape: tuple[int, ...], value: Any, dtype: Any) -> Any:
        """An array filled with ``value``."""
        if self.name == "numpy":
            return np.full(shape, value, dtype=dtype)
        return self.lib.full(shape, value, dtype=dtype, device=self.device)

    def arange(self, n: int) -> Any:
        """``0..n-1`` as int64."""
        if self.name == "numpy":
            return np.arange(n, dtype=np.int64)
        return self.lib.arange(n, dtype=self.lib.int64, device=self.device)

    def astype(self, array: Any, dtype: Any) -> Any:
        """``array`` cast to ``dtype`` (a new array)."""
        if self.name == "numpy":
            return array.astype(dtype)
        return array.to(dtype)

    def copy(self, array: Any) -> Any:
        """A contiguous copy that later engine updates never touch."""
        if self.name == "numpy":
            return np.array(array, copy=True, order="C")
        return array.clone(memory_format=self.lib.contiguous_format)

    def nonzero(self, flags: Any) -> Any:
        """Indices (int64, 1-D) where the boolean vector ``flags`` is true."""
        if self.name == "numpy":
            return flags.nonzero()[0]  # about twice as fast as np.flatnonzero
        return self.lib.nonzero(flags).reshape(-1)

    def any_outside(self, values: Any, stop: int) -> bool:
        """Whether some entry of the int64 vector ``values`` lies outside ``0..stop-1``."""
        if self.name == "numpy":
            return bool(values.view(np.uint64).max() >= stop)  # negatives wrap to huge
        return bool(((values < 0) | (values >= stop)).any())

    def take(self, table: Any, index: Any) -> Any:
        """``table[index]`` for an integer index vector of any integer dtype (negative
        entries count from the end)."""
        if self.name == "numpy":
            return table[index.astype(np.intp)]  # faster than indexing with small ints
        return table[index.to(self.lib.int64)]

    def zero_rows(self, array: Any, rows: Any) -> None:
        """Set ``array[i] = 0`` in place wherever the boolean vector ``rows`` is true
        (without a host sync on torch)."""
        if self.name == "numpy":
            if rows.any():  # boolean-mask assignment is much slower than an index
                array[rows.nonzero()[0]] = 0
        else:
            array.masked_fill_(rows.reshape(-1, *([1] * (array.ndim - 1))), 0)

    def to_numpy(self, array: Any) -> np.ndarray:
        """A numpy view or copy of ``array``."""
        if self.name == "numpy":
            return np.asarray(array)
        return array.detach().cpu().numpy()
