"""Damaged files in a run directory: one clear line from the CLI, and resume falls back to
the newest checkpoint whose files all verify against the checksums in meta.json."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from orderchaos.agents.policy_files import (
    META_FILE,
    TRAINER_STATE,
    WEIGHT_FILES,
    CheckpointError,
    checkpoints_newest_first,
    load_latest_good_checkpoint,
    load_policy_dir,
)
from orderchaos.cli.main import main
from orderchaos.train.config import load_config
from orderchaos.train.factory import make_trainer

SMOKE = Path(__file__).resolve().parents[2] / "configs" / "smoke.yaml"
CHECKPOINT_FILES = (*WEIGHT_FILES, TRAINER_STATE, META_FILE)


def _run_with_two_checkpoints(run_dir: Path) -> list[Path]:
    config = load_config(SMOKE, ["run.iterations=2", "eval.enabled=false"])
    make_trainer(config, run_dir).fit()
    checkpoints = checkpoints_newest_first(run_dir)
    assert [p.name for p in checkpoints] == ["step_0000002", "step_0000001"]
    return checkpoints


def _damage(file: Path) -> None:
    data = bytearray(file.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 8] = bytes(b ^ 0xFF for b in data[middle:middle + 8])
    file.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def pristine_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("run")
    _run_with_two_checkpoints(run_dir)
    return run_dir


@pytest.mark.parametrize("name", CHECKPOINT_FILES)
def test_resume_skips_a_checkpoint_with_any_damaged_file(
    pristine_run: Path, tmp_path: Path, name: str
) -> None:
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(pristine_run, run_dir, symlinks=True)
    newest, older = checkpoints_newest_first(run_dir)
    _damage(newest / name)

    loaded = load_latest_good_checkpoint(run_dir)
    assert loaded is not None and loaded.path == older
    assert [p for p, _ in loaded.skipped] == [newest]
    reason = loaded.skipped[0][1]
    why = "not valid JSON (" if name == META_FILE else "its SHA-256 does not match meta.json"
    assert reason.startswith(f"{newest / name} is damaged: {why}"), reason

    config = load_config(SMOKE, ["run.iterations=3", "eval.enabled=false"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = make_trainer(config, run_dir, resume=True)
    assert trainer.iteration == 1  # restarted from step 1, not step 2 and not from scratch
    said = " ".join(str(w.message) for w in caught)
    assert "step_0000002" in said and "resuming from step_0000001" in said


def test_damaged_weights_give_one_line_naming_the_file(
    pristine_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(pristine_run, run_dir, symlinks=True)
    newest = checkpoints_newest_first(run_dir)[0]
    _damage(newest / "order.safetensors")
    with pytest.raises(CheckpointError, match="order.safetensors is damaged"):
        load_policy_dir(newest)
    status = main(["eval", "--order", str(run_dir), "--chaos", "random", "--games", "1"])
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert len(err.splitlines()) == 1 and "order.safetensors is damaged" in err


def test_a_truncated_weight_file_without_checksums_is_still_refused_cleanly(
    pristine_run: Path, tmp_path: Path
) -> None:
    import shutil

    policy = tmp_path / "policy"
    shutil.copytree(checkpoints_newest_first(pristine_run)[0], policy)
    meta = json.loads((policy / META_FILE).read_text())
    del meta["files"]  # as in policies written before checksums existed
    (policy / META_FILE).write_text(json.dumps(meta))
    weights = policy / "chaos.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(CheckpointError, match="chaos.safetensors is damaged: not a readable safetensors"):
        load_policy_dir(policy)


def test_no_checkpoint_that_loads_is_one_clear_error(pristine_run: Path, tmp_path: Path) -> None:
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(pristine_run, run_dir, symlinks=True)
    for checkpoint in checkpoints_newest_first(run_dir):
        _damage(checkpoint / "chaos.safetensors")
    with pytest.raises(CheckpointError, match="no checkpoint of .* loads"):
        load_latest_good_checkpoint(run_dir)
    status = main(["train", str(SMOKE), "--resume", str(run_dir)])
    assert status == 2


def test_a_newest_checkpoint_without_meta_json_is_reported_not_skipped_silently(
    pristine_run: Path, tmp_path: Path
) -> None:
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(pristine_run, run_dir, symlinks=True)
    newest, older = checkpoints_newest_first(run_dir)
    (newest / META_FILE).unlink()

    loaded = load_latest_good_checkpoint(run_dir)
    assert loaded is not None and loaded.path == older
    assert loaded.skipped == [(newest, f"{newest / META_FILE} is missing")]

    with pytest.warns(UserWarning, match="skipping checkpoint step_0000002 .*meta.json is missing; "
                                         "using step_0000001"):
        status = main(["eval", "--order", str(run_dir), "--chaos", "random", "--games", "1"])
    assert status == 0

    config = load_config(SMOKE, ["run.iterations=3", "eval.enabled=false"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = make_trainer(config, run_dir, resume=True)
    assert trainer.iteration == 1
    said = " ".join(str(w.message) for w in caught)
    assert "step_0000002" in said and "meta.json is missing" in said
