"""``python -m orderchaos COMMAND ...`` is the ``orderchaos`` command."""

import sys

from orderchaos.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
