"""Placeholder for `orderchaos solve` (being built)."""

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of this command."""


def run(args: argparse.Namespace) -> int:
    """Run the command."""
    print("orderchaos solve: not built yet")
    return 2
