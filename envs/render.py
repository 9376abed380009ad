"""Board pictures drawn with numpy only: an RGB image of a position for ``rgb_array``
rendering (X as a cross, O as a ring; the last move and any winning line highlighted).
Text rendering is :func:`orderchaos.envs.rules.render_ascii`."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import numpy as np

from orderchaos.envs.rules import SIZE, State

BACKGROUND = np.array([238, 221, 187], dtype=np.uint8)
GRID = np.array([90, 70, 50], dtype=np.uint8)
X_COLOR = np.array([200, 40, 40], dtype=np.uint8)
O_COLOR = np.array([30, 70, 190], dtype=np.uint8)
LAST_MOVE = np.array([255, 236, 120], dtype=np.uint8)
WINNING = np.array([140, 220, 140], dtype=np.uint8)
DEFAULT_CELL_PIXELS = 48
GRID_PIXELS = 2


@lru_cache(maxsize=8)
def _sprites(cell_px: int) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks ``(cell_px, cell_px)`` of a cross and of a ring, for one cell."""
    centre = (cell_px - 1) / 2.0
    yy, xx = np.mgrid[0:cell_px, 0:cell_px].astype(np.float64) - centre
    half_width = max(1.0, cell_px / 16.0)
    reach = cell_px * 0.32
    inside = (np.abs(xx) <= reach) & (np.abs(yy) <= reach)
    cross = inside & (
        (np.abs(xx - yy) <= half_width * np.sqrt(2)) | (np.abs(xx + yy) <= half_width * np.sqrt(2))
    )
    radius = np.hypot(xx, yy)
    ring = np.abs(radius - reach) <= half_width
    cross.setflags(write=False)
    ring.setflags(write=False)
    return cross, ring


def render_rgb(
    state: State,
    last_action: int | None = None,
    winning_line: Iterable[int] | None = None,
    cell_px: int = DEFAULT_CELL_PIXELS,
) -> np.ndarray:
    """An RGB picture ``(H, W, 3)`` uint8 of ``state``.

    The cell of ``last_action`` gets a yellow background, the cells of ``winning_line``
    (default: ``state.winning_line``) a green one. ``cell_px`` is the size of a cell in
    pixels (at least 8).
    """
    if isinstance(cell_px, bool) or not isinstance(cell_px, int) or cell_px < 8:
        raise ValueError(f"cell_px must be an int >= 8, got {cell_px!r}")
    line = set(state.winning_line if winning_line is None else winning_line)
    last_cell = None if last_action is None else int(last_action) >> 1
    pitch = cell_px + GRID_PIXELS
    side = SIZE * pitch + GRID_PIXELS
    image = np.empty((side, side, 3), dtype=np.uint8)
    image[:] = GRID
    cross, ring = _sprites(cell_px)
    for cell in range(SIZE * SIZE):
        row, col = divmod(cell, SIZE)
        top, left = GRID_PIXELS + row * pitch, GRID_PIXELS + col * pitch
        patch = image[top : top + cell_px, left : left + cell_px]
        if cell in line:
            patch[:] = WINNING
        elif cell == last_cell:
            patch[:] = LAST_MOVE
        else:
            patch[:] = BACKGROUND
        symbol = state.cell(cell)
        if symbol == "X":
            patch[cross] = X_COLOR
        elif symbol == "O":
            patch[ring] = O_COLOR
    return image
