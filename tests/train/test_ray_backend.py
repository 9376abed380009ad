"""The Ray backend (run.backend=ray): training, resume, reproducibility in sync mode, a
killed actor, joining a cluster by address, bad input, and that nothing else imports ray.

One local Ray instance (2 CPUs, no dashboard) serves the module; the cluster test starts
its own head node in a temporary directory and stops only the processes it started.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import REPO, SMOKE, run_weights
from orderchaos.cli.main import main
from orderchaos.train.alphazero import AlphaZeroTrainer, MistakeSettings
from orderchaos.train.config import load_config
from orderchaos.train.factory import make_trainer

ray = pytest.importorskip("ray")

FAST = ["eval.enabled=false", "run.backend=ray", "run.actors=2"]


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance for the module's tests (the trainers use it and leave it up)."""
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=100 * 2**20,
        _node_ip_address="127.0.0.1",
        logging_level=logging.WARNING,
    )
    yield
    ray.shutdown()


def scalars(run_dir: Path) -> dict[str, dict[int, float]]:
    """Every scalar tag of a run: step -> value (read from the event files directly, since
    TensorBoard's reader drops a resumed run's steps before its purge step)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    out: dict[str, dict[int, float]] = {}
    for path in sorted(run_dir.glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    out.setdefault(value.tag, {})[event.step] = value.simple_value
                elif value.HasField("tensor"):
                    out.setdefault(value.tag, {})[event.step] = float(value.tensor.float_val[0]) if value.tensor.float_val else float("nan")
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sync_runs_are_reproducible_and_resume(local_ray, tmp_path: Path, monkeypatch) -> None:
    """Three iterations straight, and two plus a resumed third, give the same weights and
    metrics: sync mode is reproducible from the seed, checkpoints and resume work."""
    hunt = ["mistakes.games=2", "mistakes.interval=2"]  # on its actor, rows joining at the checkpoint
    monkeypatch.setattr(AlphaZeroTrainer, "mistake_settings",
                        MistakeSettings(opponents=("random",), node_limit=5000, min_rows=1))
    straight = tmp_path / "straight"
    make_trainer(load_config(SMOKE, [*FAST, *hunt, "run.iterations=3"]), straight).fit()
    halves = tmp_path / "halves"
    make_trainer(load_config(SMOKE, [*FAST, *hunt, "run.iterations=2"]), halves).fit()
    resumed = make_trainer(load_config(SMOKE, [*FAST, *hunt, "run.iterations=3"]), halves, resume=True)
    assert resumed.iteration == 2 and resumed.games_played == 8
    resumed.fit()
    a, b = run_weights(straight), run_weights(halves)
    for role in a:
        for key in a[role]:
            assert torch.equal(a[role][key], b[role][key]), (role, key)
    sa, sb = scalars(straight), scalars(halves)
    for tag in ("charts/games_played", "charts/selfplay_order_winrate", "order/losses/policy", "chaos/losses/value"):
        assert sa[tag] == sb[tag], tag
    assert sa["charts/games_played"] == {1: 4.0, 2: 8.0, 3: 12.0}
    assert set(sa["charts/weights_lag"].values()) == {0.0}  # sync: every game with the newest weights
    rates = [*sa["charts/actor_games_per_sec"].values(), *sa["charts/learner_updates_per_sec"].values()]
    assert rates and all(v > 0 for v in rates)
    assert sa["charts/solver_positions"]  # solver targets went through the Ray tasks
    assert "order/mistakes/lost_rate" in sa and "charts/mistake_seconds" in sa


def test_a_killed_actor_is_replaced_and_the_run_finishes(local_ray, tmp_path: Path) -> None:
    """SIGKILL an actor while its batch is out: Ray restarts it and replays the batch, a
    warning says so, and the run finishes with every game."""
    config = load_config(SMOKE, [*FAST, "run.iterations=3"])
    trainer = make_trainer(config, tmp_path / "run")
    submitted, killed = [], []
    submit = trainer._submit

    def submit_and_kill(k: int, games: int, imitation: int):
        submitted.append(k)
        if k == 0 and len(submitted) > 2 and not killed:  # actor 0's second-iteration batch
            pid = ray.get(trainer.actors[0].pid.remote())  # asked while the actor is idle
            ref = submit(k, games, imitation)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            return ref
        return submit(k, games, imitation)

    trainer._submit = submit_and_kill
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit()
    assert killed and trainer.iteration == 3
    restarted = [w for w in caught if "self-play actor 0 was restarted" in str(w.message)]
    assert len(restarted) == 1, [str(w.message) for w in caught]
    assert trainer.restarts == 1 and trainer.lost_batches == 0
    assert trainer.games_played == 3 * 4
    metrics = scalars(tmp_path / "run")
    assert metrics["charts/actor_restarts"][3] == 1.0


def test_async_mode_plays_ahead_with_older_weights(local_ray, tmp_path: Path) -> None:
    config = load_config(SMOKE, [*FAST, "run.iterations=3", "run.sync=false",
                                 "selfplay.solver_depth=0"])
    trainer = make_trainer(config, tmp_path / "run")
    trainer.fit()
    assert trainer.games_played == 3 * 4 and not trainer._inflight  # queued batches dropped at the end
    lag = scalars(tmp_path / "run")["charts/weights_lag"]
    # Later batches were queued before training: some of their games used older weights (the
    # lag is a mean over the batch's chunks, so on a loaded machine it can be 0.5, not 1).
    assert lag[1] == 0.0 and max(lag.values()) > 0.0


def test_bench_table_measures_both_backends(local_ray) -> None:
    from orderchaos.bench.train import backend_table

    rows = backend_table(quick=True, actors=(1,), iterations=1)
    assert [r["backend"] for r in rows] == ["local", "ray x1"]
    assert all(r["selfplay_games_per_sec"] > 0 and r["updates_per_sec"] > 0 for r in rows)


def test_bad_input_gives_one_line_and_status_2(local_ray, tmp_path: Path, capsys) -> None:
    for override, expected in [
        ("run.backend=spark", "run.backend"),
        ("run.actors=0", "run.actors"),
        (f"run.ray_address=127.0.0.1:{free_port()}", "cannot reach a Ray cluster"),
        ("run.ray_address=nohost", "run.ray_address"),
        ("run.evaluation_budget=1000", "run.evaluation_budget"),
    ]:
        started = time.perf_counter()
        code = main(["train", SMOKE, "run.backend=ray", override, "--run-dir", str(tmp_path / "bad")])
        err = capsys.readouterr().err.strip()
        assert code == 2 and expected in err and len(err.splitlines()) == 1, (override, err)
        assert time.perf_counter() - started < 15
    assert not (tmp_path / "bad").exists()


@pytest.mark.slow  # a second Ray head and a CLI process: about a minute on 2 cores
@pytest.mark.timeout(900)
def test_train_joins_a_cluster_by_address(tmp_path: Path) -> None:
    """A head node of our own (loopback, no dashboard, one CPU, its own temp dir, token
    authentication); the CLI, not told of the token, is refused with a hint, then trains the
    smoke config on it; then only that node's processes are stopped."""
    port = free_port()
    temp = Path(f"/tmp/oc-ray-{os.getpid()}-{port}")  # short: Ray's socket paths are limited
    bin_dir = Path(sys.executable).parent
    # Token authentication on both sides, with a token of the test's own: Ray turns it on for
    # a head by itself when ~/.ray/auth_token exists, and a joiner must then be told.
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    head = subprocess.Popen(
        [str(bin_dir / "ray"), "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}",
         "--include-dashboard=false", "--num-cpus=1", f"--temp-dir={temp}", "--disable-usage-stats"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env,
    )
    try:
        deadline = time.time() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert head.poll() is None and time.time() < deadline, "ray head did not start"
                time.sleep(0.5)
        run_dir = tmp_path / "run"
        command = [sys.executable, "-m", "orderchaos", "train", SMOKE, *FAST, "run.actors=1", "run.iterations=1",
                   f"run.ray_address=127.0.0.1:{port}", "--run-dir", str(run_dir)]
        no_auth = {k: v for k, v in env.items() if not k.startswith("RAY_AUTH")}
        refused = subprocess.run(command, check=False, capture_output=True, text=True, timeout=240, cwd=REPO, env=no_auth)
        assert refused.returncode == 2 and "RAY_AUTH_MODE=token" in refused.stderr.splitlines()[-1]
        out = subprocess.run(
            command, check=False, capture_output=True, text=True, timeout=240, cwd=REPO, env=env,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        assert "iterations: 1  games: 4" in out.stdout
        assert (run_dir / "checkpoints").is_dir()
    finally:
        _stop(head, temp)


def _stop(head: subprocess.Popen, temp: Path) -> None:
    """Stop the head started above and every process that carries its temp dir."""
    try:
        os.killpg(head.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        head.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(head.pid, signal.SIGKILL)
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if str(temp).encode() in cmdline:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass


def _descendants(root: int) -> list[int]:
    """The processes started by ``root``, and by those, and so on (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _alive(pids: list[int]) -> list[str]:
    """The command lines of those of ``pids`` still running (zombies count as gone)."""
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(f"{pid} {state} {_cmdline(pid)[:60].strip()}")
    return out


def _listening_addresses(pids: list[int]) -> list[tuple[int, str, int]]:
    """(pid, address, port) of every listening TCP socket those processes hold, read from
    /proc/net/tcp{,6} and each process's open files."""
    listening: dict[str, tuple[str, int]] = {}
    for table in ("tcp", "tcp6"):
        try:
            rows = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == "0A":  # LISTEN
                address, port = fields[1].split(":")
                listening[fields[9]] = (address, int(port, 16))
    found = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in listening:
                found.append((pid, *listening[link[8:-1]]))
    return found


LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}
"""127.0.0.1, ::ffff:127.0.0.1 and ::1 as /proc/net/tcp{,6} write them."""


def _start_run(tmp_path: Path, backend: str) -> tuple[subprocess.Popen, list[int]]:
    """A long training run in its own process; returns it once its workers are up (for Ray:
    once an actor process runs), with its processes at that moment."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.Popen(
        [sys.executable, "-m", "orderchaos", "train", SMOKE, "eval.enabled=false", f"run.backend={backend}",
         "run.actors=1", "run.iterations=100000", "--run-dir", str(tmp_path / backend)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.time() + 180
    while time.time() < deadline and run.poll() is None:
        pids = _descendants(run.pid)
        ready = (any(_cmdline(p).startswith("ray::SelfPlayActor") for p in pids) if backend == "ray"
                 else (tmp_path / backend / "config.yaml").exists())
        if ready:
            time.sleep(2)
            return run, _descendants(run.pid)
        time.sleep(0.5)
    run.kill()
    pytest.fail(f"the {backend} run did not start: {run.communicate()[1][-2000:]}")


@pytest.mark.slow  # two Ray starts and a local run: about a minute on 2 cores
@pytest.mark.timeout(900)
def test_a_local_instance_listens_on_loopback_and_sigterm_ends_it_like_the_local_backend(tmp_path: Path) -> None:
    """Every listening socket of the run's processes is on loopback, no dashboard process
    runs, SIGTERM ends the run with the local backend's status, and nothing is left."""
    run, pids = _start_run(tmp_path, "ray")
    try:
        sockets = _listening_addresses([run.pid, *pids])
        assert len(sockets) >= 3  # at least the GCS, the raylet and the driver
        exposed = [(pid, _cmdline(pid)[:60], address, port) for pid, address, port in sockets
                   if address not in LOOPBACK]
        assert exposed == []
        assert not [p for p in pids if "dashboard/dashboard.py" in _cmdline(p)]
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    local, _ = _start_run(tmp_path, "local")
    local.send_signal(signal.SIGTERM)
    local.communicate(timeout=60)
    assert run.returncode == local.returncode == -signal.SIGTERM  # 143 in a shell
    assert "Traceback" not in err and "core dumped" not in err
    deadline = time.time() + 30
    while _alive(pids) and time.time() < deadline:
        time.sleep(0.5)
    assert _alive(pids) == []


@pytest.mark.slow  # a Ray start: about 30 s on 2 cores
@pytest.mark.timeout(600)
def test_no_process_outlives_a_killed_ray_run(tmp_path: Path) -> None:
    run, pids = _start_run(tmp_path, "ray")
    assert len(pids) >= 5  # watchdog, GCS, raylet, agents, the actor
    run.kill()
    run.communicate(timeout=30)
    deadline = time.time() + 20
    while _alive(pids) and time.time() < deadline:
        time.sleep(0.5)
    assert _alive(pids) == []


def test_a_listener_that_is_not_ray_is_one_line_and_quick(monkeypatch: pytest.MonkeyPatch, capfd) -> None:
    """Something on the port that does not speak gRPC: refused before ray.init (which would
    retry for minutes, printing warnings). Only loopback is contacted."""
    import orderchaos.ray_setup as ray_setup

    monkeypatch.setattr(ray_setup, "CONNECT_TIMEOUT_S", 1.0)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)  # accepts connections in the backlog, never answers
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        started = time.perf_counter()
        with pytest.raises(ray_setup.RayBackendError, match="does not answer as a Ray head node"):
            ray_setup.connect_ray(address, object_store_mb=64, setting="run.ray_address")
        assert time.perf_counter() - started < 10
    assert capfd.readouterr().err == ""


def test_only_the_ray_backend_imports_ray() -> None:
    """Ray is loaded only by the training backend and when a Ray run starts (the prover's
    --backend ray, :mod:`orderchaos.ray_setup`'s functions), never on import."""
    code = (
        "import sys, orderchaos, orderchaos.envs, orderchaos.agents.registry, orderchaos.train.factory, "
        "orderchaos.train.alphazero, orderchaos.cli.main, orderchaos.bench.train, orderchaos.ray_setup, "
        "orderchaos.proof.prove, orderchaos.cli.commands.prove\n"
        "assert 'ray' not in sys.modules, sorted(m for m in sys.modules if m.startswith('ray'))"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_records_round_trip() -> None:
    from orderchaos.train.selfplay import play_heuristic_games
    from orderchaos.train.ray_backend import pack_games, unpack_rows

    logs = play_heuristic_games(3, 2, np.random.default_rng(0))
    record = pack_games(logs[:2], logs[2:])
    assert all(isinstance(v, np.ndarray) for v in record.values())
    rows = unpack_rows([record])
    assert rows.states == [s for log in logs for s in log.states]
    assert np.array_equal(rows.planes, np.stack([p for log in logs for p in log.planes]))
    assert list(record["lengths"]) == [log.length for log in logs[:2]]
