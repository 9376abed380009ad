"""Training, evaluation and the command line for Order and Chaos."""
