"""``python -m train CONFIG.yaml [overrides]`` is ``orderchaos train CONFIG.yaml [overrides]``;
``python -m train COMMAND ...`` runs any other ``orderchaos`` command."""

import sys

from train.cli import COMMANDS, main

if __name__ == "__main__":
    argv = sys.argv[1:]
    train_flags = ("--resume", "--run-dir", "--help-config")  # `python -m train --resume RUN`
    if not argv or argv[0] not in COMMANDS and (not argv[0].startswith("-") or argv[0].split("=")[0] in train_flags):
        argv = ["train", *argv]
    sys.exit(main(argv))
