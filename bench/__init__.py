"""Benchmarks that print figures side by side with peers measured in the same run:
``envs`` (env steps/s), ``search`` (MCTS simulations/s), ``solver`` (exact-solver times and
ablations), ``train`` (network and self-play throughput)."""
