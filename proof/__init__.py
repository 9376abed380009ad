"""The proof that Order wins: the proof-number prover and its book's side files, the
central-pairing certificate and its independent checker, the first-move table, and the
exact exploitability walk and refutation search of a learned Order player."""
