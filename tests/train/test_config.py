"""Training config: YAML loading, dotted overrides, and clear refusals naming the key."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.train.config import (
    RETIRED_KEYS,
    ConfigError,
    TrainConfig,
    config_from_dict,
    config_to_dict,
    help_text,
    load_config,
    parse_overrides,
    read_yaml,
    reference_table,
    save_config,
)

from helpers import REPO

CONFIGS = sorted((REPO / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_shipped_configs_load(path: Path) -> None:
    config = load_config(path)
    assert config.algorithm == ("ppo" if path.stem == "ppo" else "alphazero")  # as each file says


def test_shipped_configs_exist() -> None:
    names = {p.name for p in CONFIGS}
    assert {"smoke.yaml", "alphazero.yaml", "alphazero_gpu.yaml", "ppo.yaml"} <= names


RECIPE_ARMS = {
    "alphazero_selfplay_small.yaml": {("network", "channels"): 16},
    "alphazero_selfplay_fast.yaml": {
        ("mcts", "prefetch"): True,
        ("mcts", "evaluation_cache"): True,
        ("run", "inference_precision"): "bfloat16",
    },
}
"""The A/B arms of the shipped recipe in configs/ (docs/training.md) and what each changes."""


@pytest.mark.parametrize("arm, changes", RECIPE_ARMS.items())
def test_recipe_arm_configs_change_only_their_own_keys(arm: str, changes: dict[tuple[str, str], object]) -> None:
    """Each arm must stay the shipped recipe with only its own keys changed, or its A/B no
    longer measures what docs/experiments.md says it does."""
    shipped = config_to_dict(load_config(REPO / "configs" / "alphazero_selfplay.yaml"))
    changed = config_to_dict(load_config(REPO / "configs" / arm))
    for (section, key), value in changes.items():
        assert changed[section][key] == value != shipped[section][key]
        changed[section][key] = shipped[section][key]
    assert changed == shipped


def test_inference_precisions_are_those_the_network_runs_in() -> None:
    """The config lists the precisions itself (it does not import torch); they must stay
    those InferenceForward accepts."""
    from orderchaos.agents.network import INFERENCE_PRECISIONS
    from orderchaos.train.config import RunConfig

    (precision,) = [f for f in dataclasses.fields(RunConfig) if f.name == "inference_precision"]
    assert tuple(precision.metadata["choices"]) == INFERENCE_PRECISIONS
    assert precision.default == INFERENCE_PRECISIONS[0]


def test_defaults_and_yaml_round_trip(tmp_path: Path) -> None:
    config = load_config(None, ["optim.lr=0.01", "--selfplay.games", "7", "--eval.opponents=[random, heuristic]"])
    assert config.optim.lr == 0.01 and config.selfplay.games == 7
    assert config.eval.opponents == ["random", "heuristic"]
    save_config(config, tmp_path / "config.yaml")
    again = load_config(tmp_path / "config.yaml")
    assert again == config


def test_int_is_accepted_for_float_and_section_may_be_empty() -> None:
    config = config_from_dict({"optim": {"lr": 1}, "ppo": None})
    assert config.optim.lr == 1.0 and isinstance(config.optim.lr, float)
    assert config.ppo == TrainConfig().ppo


@pytest.mark.parametrize(
    "override, key, hint",
    [
        ("optim.lrr=1e-3", "optim.lrr", "optim.lr"),
        ("selfplay.gamez=3", "selfplay.gamez", "selfplay.games"),
        ("nosuchsection.x=1", "nosuchsection", "accepted keys"),
    ],
)
def test_unknown_key_is_named_with_a_close_match(override: str, key: str, hint: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(None, [override])
    assert key in str(err.value) and hint in str(err.value)


@pytest.mark.parametrize("override", ["ppo.clip=0.3", "selfplay.temperature=0.5", "replay.augment=false",
                                      "eval.openings=2.5", "selfplay.solver_policy=1",
                                      "mcts.c_puct=2", "run.dashboard=true", "run.compiled_inference=false",
                                      "run.inflight=1", "mcts.max_considered=8", "network.window_features=false",
                                      "eval.positions=false", "mistakes.roles=[chaos]", "mistakes.opponents=[random]",
                                      "mistakes.fraction=0.05", "mistakes.workers=2", "mistakes.capacity=100"])
def test_a_retired_key_asking_for_another_value_is_refused_in_one_line(override: str) -> None:
    key = override.split("=")[0]
    with pytest.raises(ConfigError) as err:
        load_config(None, [override])
    message = str(err.value)
    assert "\n" not in message and repr(key) in message and "fixed at" in message


def test_a_retired_key_at_its_fixed_value_loads_as_if_absent() -> None:
    """Configs saved by older runs (and the shipped policies' config.yaml) still hold the
    retired keys at their fixed values: they load, to the same config."""
    old = ["selfplay.temperature=1.0", "selfplay.warmup_openings=4", "selfplay.solver_policy=true",
           "optim.value_weight=1.0", "replay.augment=true", "eval.openings=2", "ppo.clip=0.2",
           "ppo.entropy_coef=0.01", "ppo.value_coef=0.5", "ppo.gae_lambda=0.95", "ppo.gamma=1",
           "ppo.latest_fraction=0.5", "mcts.c_puct=1.5", "mcts.dirichlet_alpha=0.3",
           "mcts.dirichlet_fraction=0.25", "mistakes.openings=2", "run.dashboard=false",
           "run.compiled_inference=true", "run.inflight=2", "mcts.max_considered=16", "network.window_features=true",
           "eval.positions=true", "mistakes.opponents=[heuristic]", "mistakes.roles=[order, chaos]",
           "mistakes.node_limit=300000", "mistakes.workers=1", "mistakes.candidates=10", "mistakes.capacity=4096",
           "mistakes.fraction=0.1", "mistakes.min_rows=32"]
    assert {o.split("=")[0] for o in old} == set(RETIRED_KEYS)
    assert load_config(None, old) == load_config(None, [])


@pytest.mark.parametrize(
    "override, key",
    [
        ("optim.batch_size=abc", "optim.batch_size"),
        ("optim.batch_size=2.5", "optim.batch_size"),
        ("run.progress=3", "run.progress"),
        ("mcts.simulations=true", "mcts.simulations"),
        ("optim=3", "optim"),
        ("eval.opponents=5", "eval.opponents"),
    ],
)
def test_wrong_type_names_the_key(override: str, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(None, [override])
    assert repr(key) in str(err.value) and " must be " in str(err.value)


@pytest.mark.parametrize(
    "override, key",
    [
        ("mcts.simulations=-5", "mcts.simulations"),
        ("mcts.simulations=0", "mcts.simulations"),
        ("optim.lr=0", "optim.lr"),
        ("optim.lr=-1e-3", "optim.lr"),
        ("selfplay.heuristic_fraction=1.5", "selfplay.heuristic_fraction"),
        ("algorithm=dqn", "algorithm"),
        ("device=tpu", "device"),
        ("run.inference_precision=float16", "run.inference_precision"),
    ],
)
def test_impossible_value_names_the_key(override: str, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(None, [override])
    assert key in str(err.value)


@pytest.mark.parametrize(
    "items, message",
    [
        (["optim.lr"], "malformed override 'optim.lr': use key=value or --key value with a dotted key, "
                       "e.g. optim.lr=1e-3"),
        (["--optim.lr"], "override --optim.lr needs a value: --optim.lr VALUE"),
        (["=3"], "malformed override '=3': empty key"),
        (["optim..lr=3"], "malformed override 'optim..lr=3': empty key"),
    ],
)
def test_malformed_override_is_refused(items: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_overrides(items)
    assert str(err.value) == message


def test_bad_yaml_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="mapping"):
        read_yaml(tmp_path / "list.yaml")
    with pytest.raises(ConfigError, match="does not exist"):
        read_yaml(tmp_path / "missing.yaml")
    (tmp_path / "broken.yaml").write_text("optim: [1,\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        read_yaml(tmp_path / "broken.yaml")


def _leaf_keys(cls: type = TrainConfig, prefix: str = "") -> list[str]:
    out: list[str] = []
    for name, kind in typing.get_type_hints(cls).items():
        if dataclasses.is_dataclass(kind):
            out.extend(_leaf_keys(kind, f"{prefix}{name}."))
        else:
            out.append(f"{prefix}{name}")
    return out


def test_every_field_has_help_and_appears_in_help_text() -> None:
    text = help_text()
    keys = _leaf_keys()
    assert len(keys) > 30
    for key in keys:
        assert f"  {key}:" in text, key
    for f in dataclasses.fields(TrainConfig):
        sub = getattr(TrainConfig(), f.name)
        if dataclasses.is_dataclass(sub):
            for g in dataclasses.fields(sub):
                assert g.metadata.get("help"), f"{f.name}.{g.name} has no help"


@settings(max_examples=30, deadline=None)
@given(
    games=st.integers(1, 10_000),
    lr=st.floats(1e-6, 1.0, allow_nan=False),
    fraction=st.floats(0.0, 1.0, allow_nan=False),
    dashed=st.booleans(),
)
def test_valid_overrides_round_trip(games: int, lr: float, fraction: float, dashed: bool) -> None:
    pairs = {"selfplay.games": games, "optim.lr": lr, "selfplay.heuristic_fraction": fraction}
    items: list[str] = []
    for key, value in pairs.items():
        items += [f"--{key}", repr(value)] if dashed else [f"{key}={value!r}"]
    config = load_config(None, items)
    assert config.selfplay.games == games
    assert config.optim.lr == pytest.approx(lr)
    assert config.selfplay.heuristic_fraction == pytest.approx(fraction)
    assert config_from_dict(config_to_dict(config)) == config


def test_the_key_reference_in_the_training_guide_is_the_config_s_own() -> None:
    """docs/training.md lists every key from the dataclasses' help; a key added, renamed or
    re-documented without regenerating it fails here (regenerate with
    ``orderchaos.train.config.reference_table()``)."""
    text = (REPO / "docs" / "training.md").read_text()
    start, end = "<!-- config-keys:start -->\n", "<!-- config-keys:end -->"
    assert text[text.index(start) + len(start): text.index(end)] == reference_table()
    for section, values in config_to_dict(TrainConfig()).items():
        keys = [f"{section}.{k}" for k in values] if isinstance(values, dict) else [section]
        for key in keys:
            assert f"| `{key}` |" in text
