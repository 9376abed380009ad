"""Tests of the proof book (format, symmetry, refusal of bad files) and the prover
(proof-number search against brute force, kill-and-resume, status, verify, the Ray backend)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import brute_force, random_board

from orderchaos.agents.solver import Solver
from orderchaos.envs.rules import CELLS, CHAOS, ORDER, State, parse_board
from orderchaos.envs.symmetry import NUM_SYMMETRIES, transform_action, transform_state
from orderchaos.agents.proof_book import HEADER_SIZE, RECORD_DTYPE, ProofBook, ProofBookError, canonical_form, key_state
from orderchaos.proof.proof_meta import BookMeta
from orderchaos.proof.proof_status import status
from orderchaos.proof.prove import ProveConfig, Prover, make_pool, parse_action, verify
from orderchaos.ray_setup import RayBackendError
from orderchaos.cli.main import main as cli_main

# A 6-stone position (Order to move) that the prover settles in a second or two with the small
# budgets of SMALL_ARGS, writing a book of some 180 entries.
MEDIUM = "..X.....O...O.X..........OX........."
INTERRUPTED = "..X.....O...O..X.........OX........."
"""An Order win whose proof lasts a few seconds (4.5 s of search on the 2026-12 development
machine, where MEDIUM's took 1.6 s and finished before the tests could interrupt it)."""
SMALL_ARGS = ["--budget", "2000", "--cap", "8000", "--tt-bits", "16"]
SMALL = ProveConfig(first_budget=2000, cap=8000, tt_bits=16, leaf_rule="strategy")  # no extended tables to build
TINY = ProveConfig(first_budget=1, growth=2, cap=1, tt_bits=14, leaf_rule="strategy")
"""Every leaf gets one 1-node try and is then expanded: exercises the PN tree itself."""


def prove_env() -> dict[str, str]:
    """Environment for prover subprocesses: this one, without a PYTHONPATH that could shadow
    the installed package."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


# -- the proof book --------------------------------------------------------------------------


def sample_book(n: int, seed: int) -> tuple[ProofBook, dict[State, tuple[str, int | None]]]:
    """A book of ``n`` random positions with arbitrary winners (and moves for mover wins)."""
    rng = np.random.default_rng(seed)
    book, truth = ProofBook(), {}
    for _ in range(n):
        s = random_board(int(rng.integers(1 << 30)), int(rng.integers(4, 30)))
        winner = ORDER if rng.integers(2) else CHAOS
        move = int(rng.choice(s.legal_actions())) if winner == s.to_play else None
        if book.lookup(s) is None:
            book.add(s, winner, move)
            truth[s] = (winner, move)
    return book, truth


def test_book_round_trip(tmp_path: Path) -> None:
    book, truth = sample_book(300, 1)
    path = tmp_path / "b.ocb"
    book.save(path)
    loaded = ProofBook.load(path)
    assert len(loaded) == len(truth) == len(book)
    for s, (winner, move) in truth.items():
        hit = loaded.lookup(s)
        assert hit is not None and hit.winner == winner
        if move is None:
            assert hit.move is None
        else:  # the same move up to a symmetry of the position
            assert canonical_form(*s.apply(hit.move))[0] == canonical_form(*s.apply(move))[0]
    assert all(s in loaded for s in truth) and State(1, 2) not in loaded
    assert not list(tmp_path.glob(".*tmp")), "atomic write left a temporary file"
    assert loaded.to_bytes() == path.read_bytes()


def test_book_add_and_merge() -> None:
    a, truth_a = sample_book(50, 2)
    b, truth_b = sample_book(50, 3)
    n = len(set(canonical_form(*s)[0] for s in list(truth_a) + list(truth_b)))
    a.merge(b)
    assert len(a) == n
    s, (winner, _) = next(iter(truth_b.items()))
    assert a.lookup(s).winner == winner
    other = CHAOS if winner == ORDER else ORDER
    with pytest.raises(ProofBookError, match="conflicting"):
        a.add(s, other)
    assert a.add(s, winner, truth_b[s][1]) is False


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 1 << 30), st.integers(1, 30), st.data())
def test_stored_move_on_all_16_images(seed: int, empties: int, data: st.DataObject) -> None:
    s = random_board(seed, empties)
    move = data.draw(st.sampled_from(s.legal_actions()))
    book = ProofBook()
    book.add(s, s.to_play, move)
    target = canonical_form(*s.apply(move))[0]
    for g in range(NUM_SYMMETRIES):
        image = transform_state(s, g)
        hit = book.lookup(image)
        assert hit is not None and hit.winner == s.to_play
        assert canonical_form(*image.apply(hit.move))[0] == target
        if len({transform_state(s, h) for h in range(NUM_SYMMETRIES)}) == NUM_SYMMETRIES:
            assert hit.move == transform_action(move, g)  # no self-symmetry: exactly g(move)
    # A book built from an image answers for the original too.
    g = data.draw(st.integers(0, NUM_SYMMETRIES - 1))
    book2 = ProofBook()
    book2.add(transform_state(s, g), s.to_play, transform_action(move, g))
    assert canonical_form(*s.apply(book2.lookup(s).move))[0] == target


def _rewrite(data: bytes, **fields: int) -> bytes:
    magic, version, rsize, count, crc = struct.unpack_from("<8sHHQI", data)
    vals = dict(version=version, rsize=rsize, count=count, crc=crc) | fields
    header = struct.pack("<8sHHQI", magic, vals["version"], vals["rsize"], vals["count"], vals["crc"])
    return header + data[HEADER_SIZE:]


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: d[:-3], "truncated"),
        (lambda d: d[:10], "truncated"),
        (lambda d: b"", "truncated"),
        (lambda d: d + b"\0", "trailing"),
        (lambda d: b"NOTABOOK" + d[8:], "not a proof book"),
        (lambda d: _rewrite(d, version=2), "version 2 is not supported"),
        (lambda d: _rewrite(d, rsize=12), "record size"),
        (lambda d: d[:HEADER_SIZE + 5] + bytes([d[HEADER_SIZE + 5] ^ 1]) + d[HEADER_SIZE + 6:], "checksum"),
    ],
)
def test_bad_files_refused(tmp_path: Path, damage: Callable[[bytes], bytes], message: str) -> None:
    book, _ = sample_book(20, 4)
    good = book.to_bytes()
    path = tmp_path / "bad.ocb"
    path.write_bytes(damage(good))
    with pytest.raises(ProofBookError, match=message) as err:
        ProofBook.load(path)
    assert str(path) in str(err.value)


def test_unsorted_or_invalid_payload_refused(tmp_path: Path) -> None:
    book, _ = sample_book(20, 5)
    data = bytearray(book.to_bytes())
    rec = np.frombuffer(bytes(data[HEADER_SIZE:]), dtype=RECORD_DTYPE).copy()
    for mutate, message in [(lambda r: r[::-1], "strictly increasing"),
                            (lambda r: _with_move(r, 100), "outside 0..71")]:
        payload = mutate(rec.copy()).tobytes()
        blob = _rewrite(bytes(data[:HEADER_SIZE]) + payload, crc=zlib.crc32(payload))
        with pytest.raises(ProofBookError, match=message):
            ProofBook.from_bytes(blob, "x.ocb")


def _with_move(rec: np.ndarray, move: int) -> np.ndarray:
    rec["v"][0] = (rec["v"][0] & 0x80) | move
    return rec


def test_cli_refuses_bad_file_without_traceback(tmp_path: Path) -> None:
    path = tmp_path / "bad.ocb"
    path.write_bytes(b"OCPBOOK\0garbage")
    r = subprocess.run([sys.executable, "-m", "orderchaos", "prove", "--book", str(path), "--status"],
                       capture_output=True, text=True, env=prove_env(), timeout=120)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and str(path) in r.stderr and "truncated" in r.stderr


def test_million_entry_book_loads_into_arrays(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    n = 1_000_000
    occ = rng.integers(0, 1 << CELLS, size=n, dtype=np.uint64)
    xmask = rng.integers(0, 1 << CELLS, size=n, dtype=np.uint64)
    x, o = occ & xmask, occ & ~xmask
    lo = x | (o << np.uint64(CELLS))
    hi = (o >> np.uint64(64 - CELLS)).astype(np.uint8)
    order = np.lexsort((lo, hi))
    lo, hi = lo[order], hi[order]
    keep = np.ones(n, dtype=bool)
    keep[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
    rec = np.zeros(int(keep.sum()), dtype=RECORD_DTYPE)
    rec["lo"], rec["hi"], rec["v"] = lo[keep], hi[keep], 127
    payload = rec.tobytes()
    path = tmp_path / "big.ocb"
    path.write_bytes(struct.pack("<8sHHQI", b"OCPBOOK\0", 1, 10, len(rec), zlib.crc32(payload)) + payload)
    book = ProofBook.load(path)
    assert len(book) == len(rec)
    # loaded as sorted arrays, one per field, not entry by entry into a dict (what made a
    # big book slow to open); the load time itself is a benchmark figure, not a test
    assert isinstance(book._lo, np.ndarray) and len(book._lo) == len(rec) and not book._new
    k = int(rec["lo"][12345]) | int(rec["hi"][12345]) << 64
    assert book.lookup_key(k) == (ORDER, None)


# -- the prover against brute force ----------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 1 << 30), st.integers(6, 9))
def test_pn_search_matches_brute_force(seed: int, empties: int) -> None:
    s = random_board(seed, empties)
    book = ProofBook()
    result = Prover(s, book, config=TINY).run()
    truth = brute_force(s)
    assert result.winner == truth == Solver(tt_bits=14).solve(s).winner
    assert book.lookup(s).winner == truth
    for key, winner, move in book.items():  # every entry, internal or leaf, is right
        pos = key_state(key)
        assert brute_force(pos) == winner
        if winner == pos.to_play:
            assert brute_force(pos.apply(move)) == winner
        else:
            assert move is None


def test_pn_search_builds_a_tree_on_harder_positions() -> None:
    """With 1-node leaf budgets the PN tree itself does the work (hundreds of nodes)."""
    for seed in range(40):
        s = random_board(seed, 9)
        book = ProofBook()
        prover = Prover(s, book, config=TINY)
        if prover.run().winner != brute_force(s):
            pytest.fail(f"wrong result on {s.to_string()}")
        if len(prover.nodes) > 50:
            return
    pytest.fail("no position needed a real PN tree")


def test_two_workers_agree(tmp_path: Path) -> None:
    s = parse_board(MEDIUM)
    book = ProofBook()
    r = Prover(s, book, config=dataclasses.replace(SMALL, workers=2), book_path=tmp_path / "w2.ocb").run(120)
    assert r.winner == ORDER  # the solver's verdict on this position (see the solver check below)
    assert ProofBook.load(tmp_path / "w2.ocb").lookup(s).winner == ORDER
    assert verify(tmp_path / "w2.ocb", node_limit=2_000_000, leaf_rule="strategy") == []


def test_fixed_first_move_and_status(tmp_path: Path) -> None:
    """A restricted root records Order's first move; status reports the reply classes."""
    book = ProofBook()
    after = State().apply(28)
    replies = {canonical_form(*after.apply(a))[0]: a for a in after.legal_actions()}
    for a in list(replies.values())[:5]:
        book.add(after.apply(a), ORDER)
    path = tmp_path / "s.ocb"
    book.save(path)
    meta = BookMeta(first=28)
    meta.seconds[canonical_form(*after.apply(list(replies.values())[0]))[0]] = 12.5
    meta.save(path)
    s = status(path)
    assert s["root"] is None and len(s["first_moves"]) == 6
    c3 = next(f for f in s["first_moves"] if f["move"] == "c3 X")
    assert (c3["replies"], c3["replies_proven"], c3["result"]) == (len(replies), 5, "open")
    assert s["focus"]["move"] == "c3 X" and len(s["focus"]["replies"]) == len(replies)
    assert s["focus"]["replies"][0]["seconds"] == 12.5
    assert parse_action("c3X") == parse_action("c3 X") == parse_action("28") == 28


# -- resumption --------------------------------------------------------------------------------


def _prove_cmd(book: Path, interval: float = 1.0) -> list[str]:
    return [sys.executable, "-m", "orderchaos", "prove", INTERRUPTED, "--leaf-rule", "strategy", "--book", str(book), "--interval", str(interval),
            "--progress", "0.2", "--json"] + SMALL_ARGS


def test_kill_and_resume(tmp_path: Path) -> None:
    full = tmp_path / "full.ocb"
    r = subprocess.run(_prove_cmd(full), capture_output=True, text=True, env=prove_env(), timeout=600)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1])["root"] == ORDER

    book = tmp_path / "killed.ocb"
    interval = 0.5
    proc = subprocess.Popen(_prove_cmd(book, interval), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=prove_env())
    lines = []
    for line in proc.stdout:  # wait until the search has made some progress
        lines.append(json.loads(line))
        if lines[-1].get("book", 0) >= 30:
            break
    time.sleep(0.7)
    proc.send_signal(signal.SIGKILL)
    killed_at = time.time()
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    # At most one interval (plus the duration of one in-process solve) was lost.
    age = killed_at - book.stat().st_mtime
    assert age < interval + 1.0, f"last checkpoint was {age:.1f}s before the kill"
    saved = ProofBook.load(book)
    assert len(saved) >= 30

    r = subprocess.run(_prove_cmd(book), capture_output=True, text=True, env=prove_env(), timeout=600)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1])["root"] == ORDER
    resumed, reference = ProofBook.load(book), ProofBook.load(full)
    # Nothing checkpointed is lost, and the two runs never disagree.
    kept = dict((k, w) for k, w, _ in resumed.items())
    assert all(kept.get(k) == w for k, w, _ in saved.items())
    common = [k for k, _, _ in reference.items() if k in kept]
    assert common and all(reference.lookup_key(k)[0] == kept[k] for k in common)
    assert resumed.lookup(parse_board(INTERRUPTED)).winner == reference.lookup(parse_board(INTERRUPTED)).winner
    assert BookMeta.load(book).runs == 2


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_saves_the_book_and_exits_128_plus_its_number(tmp_path: Path, signum: int) -> None:
    book = tmp_path / "t.ocb"
    proc = subprocess.Popen(_prove_cmd(book, interval=1000), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=prove_env())
    for line in proc.stdout:
        if json.loads(line).get("book", 0) >= 10:
            break
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, err  # 143 or 130, as a shell reports a killed command
    assert err.strip().splitlines()[-1] == f"orderchaos prove: stopped by {signal.Signals(signum).name}; the book is saved"
    assert json.loads(out.strip().splitlines()[-1])["interrupted"] is True
    assert len(ProofBook.load(book)) >= 10


# -- verification ------------------------------------------------------------------------------


def _small_proven_book(tmp_path: Path) -> tuple[Path, ProofBook]:
    book = ProofBook()
    for seed in range(6):
        Prover(random_board(100 + seed, 9), book, config=TINY).run()
    path = tmp_path / "v.ocb"
    book.save(path)
    return path, book


def test_verify_passes_and_catches_planted_errors(tmp_path: Path) -> None:
    path, book = _small_proven_book(tmp_path)
    assert len(book) > 10
    assert verify(path, leaf_rule="strategy") == []
    entries = list(book.items())
    # Plant a wrong winner on one entry (rebuilt book, valid file, consistent format).
    key, winner, move = next(e for e in entries if e[1] != key_state(e[0]).to_play)
    bad = ProofBook()
    for k, w, m in entries:
        if k == key:
            pos = key_state(k)
            w, m = (CHAOS if w == ORDER else ORDER), pos.legal_actions()[0]
        bad.add(key_state(k), w, m)
    bad_path = tmp_path / "planted.ocb"
    bad.save(bad_path)
    failures = verify(bad_path, leaf_rule="strategy")
    assert any(f.startswith(key_state(key).to_string()) for f in failures)
    # A truncated file is reported, not half-read.
    trunc = tmp_path / "trunc.ocb"
    trunc.write_bytes(path.read_bytes()[:-4])
    failures = verify(trunc, leaf_rule="strategy")
    assert len(failures) == 1 and "truncated" in failures[0] and str(trunc) in failures[0]
    assert cli_main(["prove", "--book", str(trunc), "--verify"]) == 1


def test_verify_catches_a_wrong_move(tmp_path: Path) -> None:
    """An Order-to-move Order win whose stored move actually loses is reported."""
    for seed in range(200):
        s = random_board(seed, 8)
        if s.to_play != ORDER or brute_force(s) != ORDER:
            continue
        losing = [a for a in s.legal_actions() if brute_force(s.apply(a)) == CHAOS]
        if losing:
            book = ProofBook()
            book.add(s, ORDER, losing[0])
            path = tmp_path / "m.ocb"
            book.save(path)
            failures = verify(path, leaf_rule="strategy")
            assert len(failures) == 1  # reported by its canonical image's board string
            assert canonical_form(*parse_board(failures[0][:CELLS]))[0] == canonical_form(*s)[0]
            return
    pytest.fail("no suitable position found")


# -- the Ray backend ---------------------------------------------------------------------------


def _entries(path: Path) -> dict[int, str]:
    return {k: w for k, w, _ in ProofBook.load(path).items()}


def test_ray_backend_matches_local(tmp_path: Path, in_process_ray) -> None:
    """On an in-process Ray instance (2 CPUs): one Ray actor writes byte for byte the book of
    one local worker (same tasks in the same order, one warm solver table), and the prover
    uses the process's Ray connection and leaves it open. (The pool's fault handling on Ray
    is tested in tests/agents/test_solver_pool.py.)"""
    s = parse_board(MEDIUM)
    books = {}
    for backend in ("local", "ray"):
        path = tmp_path / f"{backend}.ocb"
        r = Prover(s, ProofBook(), config=dataclasses.replace(SMALL, backend=backend), book_path=path).run(300)
        assert r.winner == ORDER and not r.interrupted
        books[backend] = path.read_bytes()
    assert books["ray"] == books["local"] and len(ProofBook.load(tmp_path / "ray.ocb")) > 100
    assert in_process_ray.is_initialized()  # the prover used this process's connection and left it open


def test_cli_ray_backend_with_two_workers_agrees_with_local(tmp_path: Path) -> None:
    """``--backend ray --workers 2`` (a local Ray instance of its own) proves the position
    with the book the local prover writes: two workers finish leaves in either order, so
    each book may hold a few positions the other does not, but every position in both has
    the same winner and the Ray book verifies on its own."""
    pytest.importorskip("ray")
    ray_book, local_book = tmp_path / "ray.ocb", tmp_path / "local.ocb"
    r = subprocess.run([sys.executable, "-m", "orderchaos", "prove", MEDIUM, "--leaf-rule", "strategy", "--book", str(ray_book),
                        "--backend", "ray", "--workers", "2", "--json", *SMALL_ARGS],
                       capture_output=True, text=True, env=prove_env(), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1])["root"] == ORDER
    assert "Traceback" not in r.stderr
    Prover(parse_board(MEDIUM), ProofBook(), config=SMALL, book_path=local_book).run()
    got, want = _entries(ray_book), _entries(local_book)
    root = canonical_form(*parse_board(MEDIUM))[0]
    assert got[root] == want[root] == ORDER
    common = got.keys() & want.keys()
    assert len(common) >= 0.9 * len(want), (len(got), len(want), len(common))
    assert all(got[k] == want[k] for k in common)
    assert BookMeta.load(ray_book).runs == 1
    assert verify(ray_book, node_limit=2_000_000, leaf_rule="strategy") == []


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_ray_address_is_one_line(tmp_path: Path) -> None:
    book = tmp_path / "u.ocb"
    address = f"127.0.0.1:{_free_port()}"
    started = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "orderchaos", "prove", MEDIUM, "--leaf-rule", "strategy", "--book", str(book), "--backend", "ray",
                        "--ray-address", address], capture_output=True, text=True, env=prove_env(), timeout=120)
    elapsed = time.perf_counter() - started
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot reach a Ray cluster at {address} (--ray-address)" in lines[0], r.stderr
    assert elapsed < 30, f"took {elapsed:.1f}s"
    assert not book.exists() and not Path(f"{book}.meta.json").exists()


@pytest.mark.parametrize("argv, message", [
    (["--ray-address", "127.0.0.1:6379"], "--ray-address goes with --backend ray"),
    (["--backend", "ray", "--ray-address", "nohost"], "bad --ray-address 'nohost'"),
    (["--backend", "ray", "--ray-address", "h:99999"], "bad --ray-address 'h:99999'"),
    (["--backend", "ray", "--status"], "--status runs in this process"),
    (["--backend", "ray", "--verify"], "--verify runs in this process"),
])
def test_bad_backend_options_refused_in_one_line(tmp_path: Path, capsys, argv: list[str], message: str) -> None:
    assert cli_main(["prove", "--book", str(tmp_path / "b.ocb"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "b.ocb").exists()


def test_ray_backend_without_ray_says_how_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(RayBackendError, match=r"--backend ray needs ray .*pip install 'orderchaos\[ray\]'"):
        make_pool(ProveConfig(backend="ray"))
    with pytest.raises(ValueError, match="ray backend only"):
        ProveConfig(ray_address="auto")
    with pytest.raises(ValueError, match="backend must be one of local, ray"):
        ProveConfig(backend="spark")


def test_unwritable_book_at_the_end_is_saved_elsewhere_and_named(tmp_path: Path) -> None:
    """When the book path cannot be written at a checkpoint, the proof goes beside it (named
    in a warning), not lost."""
    path = tmp_path / "b.ocb"
    s = random_board(7, 8)
    prover = Prover(s, ProofBook(), config=TINY, book_path=path)
    path.mkdir()  # the path turned into a folder after the run started
    with pytest.warns(UserWarning, match="saved to .*b.ocb.unsaved-"):
        result = prover.run()
    (kept,) = tmp_path.glob("b.ocb.unsaved-*[0-9]")
    assert ProofBook.load(kept).lookup(s).winner == result.winner == brute_force(s)
    assert BookMeta.load(kept).runs == 1


@pytest.mark.parametrize("content, message", [("[1,2]", "holds a JSON list, not an object"),
                                               ('"text"', "holds a JSON str")])
def test_side_file_of_another_shape_is_one_line(tmp_path: Path, capsys, content: str, message: str) -> None:
    book = tmp_path / "b.ocb"
    Path(f"{book}.meta.json").write_text(content)
    assert cli_main(["prove", "--book", str(book), "--minutes", "0.01"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1 and "attribute" not in err
