"""The ``orderchaos`` command: one module per subcommand in ``commands/``, plus the
terminal game. Commands parse arguments, call library functions and print."""
