"""The training configuration's schema: one documented dataclass per section.

Every field carries its help text in ``field(metadata={"help": ...})`` and, where it has
one, its accepted range (``min``, ``max``, ``exclusive``), ``choices`` or ``pattern``.
:mod:`orderchaos.train.config` loads, checks and describes configurations of this schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def _field(default: Any, help: str, **rules: Any) -> Any:
    """A dataclass field with its help text and validation rules in the metadata."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"help": help, **rules})
    return field(default=default, metadata={"help": help, **rules})


# Fixed parts of the recipe. Every shipped configuration used these values and no run
# tuned them, so they are constants rather than config keys; a config that still sets
# one is refused by name (orderchaos.train.config.RETIRED_KEYS).
SELFPLAY_TEMPERATURE = 1.0
"""Sampling temperature over search visits for the first ``selfplay.temperature_moves`` plies."""
WARMUP_OPENINGS = 4
"""Random opening plies of each warm-up and imitation game."""
SOLVER_POLICY = True
"""Where the solver proves the mover wins, the policy target keeps only the proven winning moves."""
VALUE_WEIGHT = 1.0
"""Weight of the value loss against the policy loss."""
AUGMENT = True
"""Train on a random one of the 16 symmetric images of each position."""
EVAL_OPENINGS = 2
"""Random opening plies per evaluation game, so that greedy players differ between games."""
C_PUCT = 1.5
"""PUCT exploration constant of the self-play search."""
DIRICHLET_ALPHA = 0.3
"""Dirichlet noise concentration at the self-play search's root."""
DIRICHLET_FRACTION = 0.25
"""Share of the Dirichlet noise in the self-play search's root priors."""
MISTAKE_OPENINGS = 2
"""Random opening plies of each mistake-hunting game (not searched for mistakes)."""
RAY_DASHBOARD = False
"""A local Ray instance runs without its dashboard."""
PPO_CLIP = 0.2
"""PPO ratio clip."""
PPO_ENTROPY_COEF = 0.01
"""PPO entropy bonus weight."""
PPO_VALUE_COEF = 0.5
"""PPO value loss weight."""
PPO_GAE_LAMBDA = 0.95
"""PPO GAE lambda."""
PPO_GAMMA = 1.0
"""PPO discount over the learner's own moves."""
PPO_LATEST_FRACTION = 0.5
"""PPO: probability of facing the current opposing network instead of a pool snapshot."""
COMPILED_INFERENCE = True
"""Self-play runs the networks compiled for inference on CPU (agents.network.InferenceForward):
the same outputs as the torch modules to float rounding, 1.35x the self-play games/s of the
shipped config in a measured run."""
RAY_INFLIGHT = 2
"""Ray backend with ``run.sync`` false: game batches queued per actor (the cap on unread
batches is ``run.actors`` times this, so memory stays bounded)."""
GUMBEL_CONSIDERED = 16
"""With ``mcts.gumbel``: root moves considered (Gumbel-Top-k) by the self-play search."""
WINDOW_FEATURES = True
"""The trained networks also see the per-cell counts of live five-cell windows
(agents.network.WindowFeatures); policies saved without them still load."""
EVAL_POSITIONS = True
"""Evaluations measure optimal-move accuracy on the solver-labelled position sets."""
MISTAKE_OPPONENTS = ("heuristic",)
"""Agent specs the networks play in the mistake hunt's greedy games."""
MISTAKE_NODE_LIMIT = 300_000
"""Solver node budget per position when walking a lost game back to its losing move."""
MISTAKE_CANDIDATES = 10
"""Where listing every winning move exceeds the budget, the hunt tries this many of the
network's favourite moves and keeps the first proven to win."""
MISTAKE_CAPACITY = 4096
"""Mistake positions kept per role (oldest dropped first)."""
MISTAKE_FRACTION = 0.1
"""Share of each training batch drawn from the role's mistake positions."""
MISTAKE_MIN_ROWS = 32
"""Mistake positions a role needs before they join its batches."""

RETIRED_KEYS: dict[str, Any] = {
    "selfplay.temperature": SELFPLAY_TEMPERATURE,
    "selfplay.warmup_openings": WARMUP_OPENINGS,
    "selfplay.solver_policy": SOLVER_POLICY,
    "optim.value_weight": VALUE_WEIGHT,
    "replay.augment": AUGMENT,
    "eval.openings": EVAL_OPENINGS,
    "mcts.c_puct": C_PUCT,
    "mcts.dirichlet_alpha": DIRICHLET_ALPHA,
    "mcts.dirichlet_fraction": DIRICHLET_FRACTION,
    "mistakes.openings": MISTAKE_OPENINGS,
    "run.dashboard": RAY_DASHBOARD,
    "ppo.clip": PPO_CLIP,
    "ppo.entropy_coef": PPO_ENTROPY_COEF,
    "ppo.value_coef": PPO_VALUE_COEF,
    "ppo.gae_lambda": PPO_GAE_LAMBDA,
    "ppo.gamma": PPO_GAMMA,
    "ppo.latest_fraction": PPO_LATEST_FRACTION,
    "run.compiled_inference": COMPILED_INFERENCE,
    "run.inflight": RAY_INFLIGHT,
    "mcts.max_considered": GUMBEL_CONSIDERED,
    "network.window_features": WINDOW_FEATURES,
    "eval.positions": EVAL_POSITIONS,
    "mistakes.opponents": list(MISTAKE_OPPONENTS),
    "mistakes.roles": ["order", "chaos"],
    "mistakes.node_limit": MISTAKE_NODE_LIMIT,
    "mistakes.workers": 1,
    "mistakes.candidates": MISTAKE_CANDIDATES,
    "mistakes.capacity": MISTAKE_CAPACITY,
    "mistakes.fraction": MISTAKE_FRACTION,
    "mistakes.min_rows": MISTAKE_MIN_ROWS,
}
"""Former config keys that are now fixed, with the value each is fixed at."""


@dataclass
class RunConfig:
    """How long the run lasts, how often it checkpoints, and how it reports."""

    iterations: int = _field(
        100, "training iterations; each plays a batch of self-play games then trains", min=1
    )
    time_limit_minutes: float = _field(
        0.0,
        "stop after this many minutes of training (0: no limit); a final checkpoint and "
        "evaluation are still written",
        min=0,
        max=60 * 24 * 365,
    )
    evaluation_budget: int = _field(
        0,
        "stop once self-play has spent this many network evaluations (leaf positions "
        "evaluated by the networks; 0: no limit): a compute budget that is the same on every "
        "machine, for comparing recipes at equal compute (alphazero, local backend); the "
        "learning-rate schedule follows it like the time limit",
        min=0,
    )
    checkpoint_interval: int = _field(
        5, "iterations between checkpoints (a killed run loses at most this many)", min=1
    )
    keep_checkpoints: int = _field(2, "how many checkpoint directories to keep on disk", min=1, max=1000)
    threads: int = _field(0, "torch CPU threads (0: leave torch's default)", min=0, max=1024)
    inference_precision: str = _field(
        "float32",
        "the precision self-play evaluates the networks in: 'bfloat16' gave 1.05-1.54x the "
        "self-play games/s of the shipped recipe with both mcts options, at equal strength, "
        "on a CPU with AVX512-BF16 (slower on CPUs without bfloat16 units); not the same "
        "games, as bfloat16 rounds (docs/experiments.md has the A/B); training is float32 "
        "either way",
        choices=["float32", "bfloat16"],
    )
    progress: bool = _field(True, "show a live tqdm progress bar")
    backend: str = _field(
        "local",
        "where self-play runs (alphazero): 'local' plays in the training process (solver "
        "targets in local worker processes); 'ray' plays on `actors` Ray actors, with solver "
        "targets and the mistake hunt on Ray workers too (needs pip install 'orderchaos[ray]'; "
        "see docs/ray.md)",
        choices=["local", "ray"],
    )
    actors: int = _field(
        2, "self-play actors (backend ray); each plays its share of selfplay.games", min=1, max=1024
    )
    ray_address: str | None = _field(
        None,
        "the Ray cluster to join (backend ray): null starts a local instance sized to this "
        "machine (bound to 127.0.0.1), 'auto' joins the one running here, HOST:PORT joins "
        "that head node",
        pattern=r"auto|[^\s:]+:[0-9]{1,5}",
        shape="null, auto or HOST:PORT",
    )
    sync: bool = _field(
        True,
        "backend ray: the learner waits for each iteration's games, all played with its "
        "latest weights, so a run with fixed `actors` is reproducible from its seed; false: "
        "each actor keeps 2 game batches queued (weights up to 2 iterations old) and plays on "
        "while the learner trains: faster, not reproducible",
    )
    object_store_mb: int = _field(
        512, "backend ray: object store size of a local Ray instance, MiB", min=80
    )


@dataclass
class NetworkConfig:
    """The residual policy-value network (one per role, same shape)."""

    channels: int = _field(32, "convolution channels of the residual trunk", min=1, max=4096)
    blocks: int = _field(4, "residual blocks in the trunk", min=0, max=256)
    value_hidden: int = _field(64, "hidden units of the value head", min=1, max=65536)
    init_from: str = _field(
        "",
        "start both networks from this policy: a policy directory, a run directory (its latest "
        "checkpoint) or 'pretrained'; its network shape must match this section, except that "
        "`blocks` may be larger: the added residual blocks start as the identity "
        "(orderchaos.agents.network.deepened), so the run starts from the policy's play (empty: "
        "a fresh random initialisation). A resumed run continues from its own checkpoint instead",
    )


@dataclass
class SelfPlayConfig:
    """How the self-play games are generated (alphazero)."""

    games: int = _field(128, "games played in parallel per iteration", min=1, max=1_000_000)
    temperature_moves: int = _field(
        8, "opening plies whose move is sampled in proportion to search visits; later plies take the most visited move", min=0
    )
    heuristic_fraction: float = _field(
        0.0,
        "fraction of games in which one side (alternating) is the heuristic agent; only the "
        "network's positions are trained on",
        min=0,
        max=1,
    )
    on_policy_fraction: float = _field(
        0.0,
        "fraction of the games against the heuristic agent in which the network, after the "
        "temperature plies, plays its own most probable move instead of the search's, while "
        "its positions keep the search's (and solver's) targets: DAgger-style, so training "
        "sees and corrects the positions the network alone reaches",
        min=0,
        max=1,
    )
    solver_depth: int = _field(
        0,
        "positions with at most this many empty cells get exact solver values as value "
        "targets (0: off)",
        min=0,
        max=36,
    )
    solver_node_limit: int = _field(
        20000, "node budget of each solver call; unknown results keep the game outcome", min=1
    )
    solver_end_depth: int = _field(
        0,
        "end a self-play game as soon as it has at most this many empty cells and the solver "
        "proves its winner within solver_node_limit (tried each ply until it does): earlier "
        "positions get the proven winner as their outcome, the last one is a value-only row "
        "(solver_depth >= this also gives it the winning moves as policy), and the network's "
        "evaluations go to the opening and middle game (0: games are played out)",
        min=0,
        max=36,
    )
    solver_end_fraction: float = _field(
        1.0,
        "with solver_end_depth: the share of each batch's games that may end at a solver "
        "proof; the rest are played out, so that the networks, which play alone without the "
        "solver, still learn the endgame (with every game ended at 20 empty cells, the Order "
        "network alone forgot how to finish: docs/experiments.md)",
        min=0.0,
        max=1.0,
    )
    length_weight: float = _field(
        0.0,
        "grade the game outcome by its length: an Order win at L stones is worth "
        "1 - length_weight * (L - 9) / 27 to Order (and minus that to Chaos), a Chaos win -1; "
        "so Chaos, lost in theory in most self-play games, still learns to make them long, and "
        "Order to win fast (0: plain +/-1 outcomes)",
        min=0,
        max=0.95,
    )
    warmup_games: int = _field(
        0,
        "before self-play, games of the heuristic agent against itself (after a short random "
        "opening) whose moves fill the replay buffers as one-hot policy targets (0: off)",
        min=0,
    )
    warmup_updates: int = _field(
        0, "gradient steps per role on the warm-up positions before self-play starts", min=0
    )
    warmup_solver_depth: int = _field(
        -1,
        "solver_depth for the warm-up positions (-1: the same as solver_depth); the warm-up "
        "holds many positions, so a smaller depth keeps it short",
        min=-1,
        max=36,
    )
    imitation_games: int = _field(
        0,
        "heuristic self-games added to the replay buffers every iteration, like the warm-up "
        "games, to keep anchoring the policies (0: off)",
        min=0,
    )
    solver_process: bool = _field(
        True,
        "run the solver in a separate worker process, so that a crash in it costs one "
        "batch of solver targets instead of the run; it solves one batch while the next "
        "is played and trained on (those rows join the replay buffers one iteration later)",
    )
    solver_workers: int = _field(
        1,
        "solver worker processes (with solver_process); one per spare CPU core",
        min=1,
        max=1024,
    )
    solver_candidates: int = _field(
        0,
        "when listing every winning move of a won position exceeds the solver's budget "
        "(common with many empty cells), try this many of the moves the game's policy target "
        "favours most, and train on the first one proven to win as a one-hot target (0: off)",
        min=0,
        max=72,
    )
    solver_policy_weights: str = _field(
        "uniform",
        "how a solver policy target spreads over the proven winning moves: 'uniform', or "
        "'search': in proportion to the target the game gave them (search visits, or the "
        "heuristic's move), uniform if that gave them nothing. 'search' keeps the mass on "
        "a few winning moves, which a greedy network alone plays more reliably",
        choices=["uniform", "search"],
    )


@dataclass
class MCTSConfig:
    """PUCT search used during self-play (alphazero)."""

    simulations: int = _field(64, "simulations per move", min=1, max=1_000_000)
    gumbel: bool = _field(
        False,
        "Gumbel root search (orderchaos.agents.gumbel): sample 16 root moves "
        "without replacement, share the simulations among them by sequential halving, and "
        "train on the completed-Q improved policy; moves are the search's Gumbel-sampled "
        "choice (no Dirichlet noise, no temperature)",
    )
    evaluation_cache: bool = _field(
        False,
        "remember the network's answer for each board during an iteration's self-play "
        "(orderchaos.agents.evaluation_cache), so that a position the searches reach again "
        "(the tree below the move played, transpositions, openings shared by games) is "
        "evaluated once: the same games up to float rounding, with 13-20% fewer "
        "network evaluations in the shipped recipe. Off there only because the shipped "
        "weights were made without it: run.evaluation_budget counts the network's real "
        "evaluations, so with the cache a run plays more iterations on the same budget",
    )
    prefetch: bool = _field(
        False,
        "with gumbel: evaluate in one batch, for all games, the root children that each "
        "search's first round of sequential halving visits, instead of one small batch per "
        "simulation (orderchaos.agents.gumbel.GumbelSearch prefetch): the same games, a "
        "cheaper network call per position. Off in the shipped config only because its "
        "weights were made without it (batches of another size round the outputs a little "
        "differently)",
    )


@dataclass
class OptimConfig:
    """The optimiser (AdamW) shared by both roles' networks."""

    lr: float = _field(2e-3, "learning rate", min=0, exclusive=True)
    weight_decay: float = _field(1e-4, "AdamW weight decay", min=0)
    batch_size: int = _field(256, "positions per gradient step (per role)", min=1, max=1_000_000)
    updates_per_iteration: int = _field(
        32, "gradient steps per role after each self-play batch (alphazero)", min=1
    )
    grad_clip: float = _field(5.0, "gradient norm clip (0: no clipping)", min=0)
    lr_schedule: str = _field(
        "constant", "learning-rate schedule over the iterations", choices=["constant", "cosine"]
    )
    bf16: bool = _field(
        False, "bf16 autocast of the learner's forward pass on CUDA (alphazero; ignored on CPU)"
    )


@dataclass
class ReplayConfig:
    """The replay buffer of self-play positions (alphazero), one per role."""

    capacity: int = _field(100000, "positions kept per role (oldest dropped first)", min=1, max=100_000_000)
    min_positions: int = _field(
        512, "positions a role needs before its network trains", min=1
    )


@dataclass
class MistakesConfig:
    """Learning from lost games (alphazero; ``orderchaos.arena.mistakes``): at intervals each network
    plays greedy games against the heuristic agent, the solver finds the move that lost each
    lost game, and those positions, with the proven winning moves as targets, are mixed
    into training batches (a tenth of each; the fixed settings are the ``MISTAKE_*``
    constants above)."""

    games: int = _field(
        0, "greedy games per role against the heuristic agent in each round (0: off)", min=0
    )
    interval: int = _field(4, "iterations between rounds", min=1)
    rollouts: int = _field(
        0,
        "where the solver places no losing move (most lost Chaos games: lost in theory from "
        "early on), look for a practical one: the latest position where another of the "
        "network's 10 favourite moves wins this many greedy play-outs of this many "
        "against the same opponent (0: off)",
        min=0,
    )
    positions: list[str] = _field(
        [],
        "solver-labelled positions files (`orderchaos positions --make`) whose positions join "
        "the mistake positions of the side to move when the run starts (uniform policy over "
        "the winning moves, value +1; at most 4096 per side); they need no hunt (`games` may be 0)",
    )


@dataclass
class EvalConfig:
    """Evaluation at intervals: matches against fixed opponents and solver accuracy."""

    interval: int = _field(10, "iterations between evaluations (0: only at the end)", min=0)
    games: int = _field(40, "games per opponent and seat", min=1, max=1_000_000)
    opponents: list[str] = _field(
        ["random", "heuristic"], "agent specs to play in both seats (see orderchaos.agents.registry)",
        agent_specs=True,
    )
    positions_limit: int = _field(
        0, "use only the first N labelled positions of each set (0: all)", min=0
    )
    enabled: bool = _field(
        True,
        "false: no evaluation at all, not even at the end (fit() then returns no scalars); for "
        "runs that time or test the training alone. The exploitability walks (exploit_interval) "
        "are apart from it",
    )
    exploit_interval: int = _field(
        0, "iterations between exact exploitability walks of the Order network (K=0, from the empty board), "
        "with one more at the end of the run (0: never)",
        min=0,
    )
    exploit_max_positions: int = _field(
        4_000_000, "the exploitability walk's budget in Order-to-move positions: a walk that asks more stops "
        "there and logs exploit/complete 0 with no refutation count, then a refutation search gives "
        "exploit/perfect 0 if it finds a line (0: no limit). A strong network's tree is about 1M "
        "positions; a weak one's can pass 20M",
        min=0,
    )


@dataclass
class PPOConfig:
    """Masked-action PPO self-play against a pool of past opponents (ppo)."""

    games: int = _field(64, "parallel games per role per iteration", min=1, max=1_000_000)
    epochs: int = _field(4, "optimisation passes over each rollout", min=1)
    minibatch: int = _field(256, "transitions per PPO minibatch", min=1, max=1_000_000)
    pool_size: int = _field(8, "past snapshots kept per role as opponents", min=1, max=10_000)
    snapshot_interval: int = _field(5, "iterations between opponent-pool snapshots", min=1)


@dataclass
class TrainConfig:
    """A complete training run: algorithm, seed, device and the sections above."""

    algorithm: str = _field(
        "alphazero", "training algorithm", choices=["alphazero", "ppo"]
    )
    seed: int = _field(0, "seed for every random choice of the run", min=0, max=2**63 - 1)
    device: str = _field(
        "auto", "where the networks run (auto: cuda when present)", choices=["auto", "cpu", "cuda"]
    )
    run: RunConfig = field(default_factory=RunConfig, metadata={"help": "run length and logging"})
    network: NetworkConfig = field(
        default_factory=NetworkConfig, metadata={"help": "network shape"}
    )
    selfplay: SelfPlayConfig = field(
        default_factory=SelfPlayConfig, metadata={"help": "self-play games"}
    )
    mcts: MCTSConfig = field(default_factory=MCTSConfig, metadata={"help": "self-play search"})
    optim: OptimConfig = field(default_factory=OptimConfig, metadata={"help": "optimiser"})
    replay: ReplayConfig = field(default_factory=ReplayConfig, metadata={"help": "replay buffer"})
    mistakes: MistakesConfig = field(
        default_factory=MistakesConfig, metadata={"help": "learning from lost games"}
    )
    eval: EvalConfig = field(default_factory=EvalConfig, metadata={"help": "evaluation"})
    ppo: PPOConfig = field(default_factory=PPOConfig, metadata={"help": "PPO settings"})
