"""The arena: matches between players, saved game files, tournaments and ratings
(Bradley-Terry and Glicko-2), solver-labelled position sets, the moves that lost a game, and
what a position says to a player (hints, verdicts, board facts)."""
