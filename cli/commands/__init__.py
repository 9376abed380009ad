"""One module per ``orderchaos`` subcommand: ``configure(parser)`` and ``run(args)``."""
