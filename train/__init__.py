"""Training: configs, the AlphaZero and PPO self-play trainers, replay buffers, checkpoints."""
