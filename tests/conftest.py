"""Fixtures and settings for every test. Shared strategies, generators and brute-force
oracles live in tests/helpers.py (imported as ``helpers``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import helpers


def pytest_configure(config: pytest.Config) -> None:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return
    torch.set_num_threads(1)  # the test machine is shared; more threads only contend


@pytest.fixture(scope="session")
def repo() -> Path:
    """The repository root."""
    return helpers.REPO


@pytest.fixture(scope="session")
def smoke_config() -> Path:
    """configs/smoke.yaml: the tiny training config."""
    return helpers.SMOKE
