"""Learning to play: puzzles proven by the exact solver (mining, checking, selecting, the
puzzle file) and the lesson "how Order always wins"."""
