"""The arena: matches between players, saved game files, tournaments and ratings,
solver-labelled position sets, and finding the moves that lost a game."""
