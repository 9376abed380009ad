"""The certificate: its format, the independent checker on the real file and on planted faults,
the prove command's --certificate, --check and --status, and the proof book's agreement."""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from orderchaos.agents import strategy
from orderchaos.agents.proof_book import shipped_book
from orderchaos.proof import certificate
from orderchaos.proof.certificate import Certificate, CertificateError, parse_move
from orderchaos.proof.certificate_check import check, describe
from orderchaos.agents.proof_book import key_state
from orderchaos.proof.solved import print_solved_status
from orderchaos.envs.rules import ORDER, State, action_name, parse_cell

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cert_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The certificate as ``orderchaos prove --certificate`` writes it."""
    path = tmp_path_factory.mktemp("cert") / "certificate.json"
    done = subprocess.run([sys.executable, "-m", "orderchaos", "prove", "--certificate", str(path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "94,334 centre moves" in done.stdout
    return path


@pytest.fixture(scope="module")
def cert(cert_file: Path) -> Certificate:
    return certificate.read(cert_file)


def prove(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orderchaos", "prove", *args],
                          capture_output=True, text=True, timeout=600)


def test_the_file_has_the_documented_shape(cert_file: Path, cert: Certificate) -> None:
    data = json.loads(cert_file.read_text())
    assert list(data) == ["format", "version", "first_move", "pairs", "border_answer", "centre_moves"]
    assert data["format"] == "orderchaos-certificate" and data["version"] == 1
    assert data["first_move"] == "c3 X" and data["border_answer"] == "other symbol"
    assert data["pairs"][:2] == [["a2", "f2"], ["a3", "f3"]] and len(data["pairs"]) == 10
    key, value = next(iter(data["centre_moves"].items()))
    assert len(key) == 16 and len(value) == 4
    assert certificate.from_dict(data) == cert
    after_e5_o = State().apply(2 * parse_cell("c3")).apply(2 * parse_cell("e5") + 1)
    assert cert.centre_moves[".....X.........O"] == action_name(strategy.move(after_e5_o))


def test_the_check_passes_with_the_independently_counted_positions(cert_file: Path) -> None:
    done = prove("--check", str(cert_file), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["failure"] is None
    counts = {p["name"]: p["counts"] for p in report["parts"]}
    assert counts["centre game"]["order_to_move_centre_boards"] == 94_334
    assert counts["lemma"] == {"lines": 10, "cases": 140}
    # The count a program sharing nothing with this project found, after c3 X with Chaos
    # kept in the centre.
    assert counts["replay"]["order_to_move_positions"] == 385_340


def failure(cert: Certificate, **changes: object) -> str:
    report = check(dataclasses.replace(cert, **changes))
    assert not report.ok
    assert describe(report)[-1] == f"  FAILED: {report.failure}"
    return str(report.failure)


def test_a_losing_centre_move_fails(cert: Certificate) -> None:
    table = strategy.centre_table()
    key, good = min(cert.centre_moves.items(), key=lambda kv: kv[0].count("."))  # a late board
    state = State()
    for cell, ch in zip(strategy.CENTRE_CELLS, key):
        if ch != ".":
            state = state.apply_unchecked(2 * cell + "XO".index(ch))
    losing = [a for a in state.legal_actions() if a >> 1 in strategy.CENTRE_CELLS
              and table[strategy.centre_index(state.apply(a))] < 0]
    assert losing and parse_move(good) not in losing
    moves = dict(cert.centre_moves)
    moves[key] = action_name(losing[0])
    message = failure(cert, centre_moves=moves)
    assert "centre" in message


def test_swapped_partners_fail(cert: Certificate) -> None:
    pairs = list(cert.pairs)
    pairs[0], pairs[1] = ("a2", "f3"), ("a3", "f2")
    assert "are not the two ends of a 6-cell line" in failure(cert, pairs=tuple(pairs))


def test_the_same_symbol_border_answer_fails(cert: Certificate) -> None:
    assert "lemma: the border answer" in failure(cert, border_answer="same symbol")


def test_a_missing_centre_position_fails(cert: Certificate) -> None:
    moves = dict(cert.centre_moves)
    key = sorted(moves)[len(moves) // 2]
    del moves[key]
    assert f"no centre move for centre board {key}" in failure(cert, centre_moves=moves)


def test_a_centre_move_on_an_occupied_cell_fails(cert: Certificate) -> None:
    moves = dict(cert.centre_moves)
    key = next(k for k in sorted(moves) if k[5] == "X")  # c3 holds X
    moves[key] = "c3 O"
    assert "is not on an empty central cell" in failure(cert, centre_moves=moves)


def test_damaged_truncated_or_other_version_files_are_refused_in_one_line(cert_file: Path, tmp_path: Path) -> None:
    text = cert_file.read_text()
    cases = {
        "truncated.json": text[: len(text) // 2],
        "version.json": text.replace('"version": 1', '"version": 2', 1),
        "format.json": text.replace("orderchaos-certificate", "something-else", 1),
        "answer.json": text.replace('"other symbol"', '"any symbol"', 1),
        "board.json": text.replace('"centre_moves": {\n  "', '"centre_moves": {\n  "Z', 1),
    }
    for name, content in cases.items():
        (tmp_path / name).write_text(content)
        done = prove("--check", str(tmp_path / name))
        assert done.returncode == 2, (name, done.stdout, done.stderr)
        assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, name
        assert "Traceback" not in done.stderr
    with pytest.raises(CertificateError, match="not valid JSON"):
        certificate.read(tmp_path / "truncated.json")
    assert prove("--check", str(tmp_path / "absent.json")).returncode == 2


@pytest.mark.parametrize("change", ["extra", "missing"])
def test_a_certificate_with_other_keys_is_refused(cert_file: Path, tmp_path: Path, change: str) -> None:
    data = json.loads(cert_file.read_text())
    if change == "extra":
        data["comment"] = "a key no reader checks"
    else:
        del data["border_answer"]
    bad = tmp_path / f"{change}.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(CertificateError, match="expected exactly the keys"):
        certificate.read(bad)


def test_bad_combinations_are_refused(cert_file: Path) -> None:
    for args in (["--check", str(cert_file), "--border-moves", "-1"], ["--status", "--check", str(cert_file)],
                 ["--status", "--border-moves", "1"]):
        done = prove(*args)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, args


def test_the_checker_imports_only_the_rules_engine_and_the_format() -> None:
    # orderchaos.files: the bounded JSON reader, which knows nothing of what a file means
    allowed = {"orderchaos.envs.rules", "orderchaos.proof.certificate", "orderchaos.files"}
    stdlib = {"__future__", "json", "os", "tempfile", "time", "dataclasses", "pathlib", "collections.abc"}
    for name in ("certificate_check.py", "certificate.py"):
        tree = ast.parse((ROOT / "proof" / name).read_text())
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
        assert imported <= allowed | stdlib, (name, imported - allowed - stdlib)


def test_status_reports_the_empty_board_won_by_the_certificate(capsys: pytest.CaptureFixture) -> None:
    done = prove("--status", "--json")
    assert done.returncode == 0, done.stderr
    s = json.loads(done.stdout)
    assert s["root"] == "order" and s["root_source"]["source"] == "certificate"
    by_move = {f["move"]: f for f in s["first_moves"]}
    assert set(by_move) == {"a1 X", "b1 X", "c1 X", "b2 X", "c2 X", "c3 X"}
    for move in ("b2 X", "c2 X", "c3 X"):
        assert by_move[move]["result"] == "proven" and by_move[move]["source"] == "strategy"
    for move in ("a1 X", "b1 X", "c1 X"):  # proven by the book: the extended pairing argument
        assert by_move[move]["source"] == "book" and by_move[move]["verdict"] == "proven"
    replies = s["focus"]["replies"]
    assert len(replies) == 40 and all(r["strategy"] == "proven" for r in replies)
    print_solved_status(s)
    text = capsys.readouterr().out
    assert text.startswith("empty board: order wins (by the certificate")
    assert "  c3 X: proven    by the strategy" in text and "  a1 X: proven    by the book; check: " in text


def test_the_proof_book_agrees_with_the_strategy() -> None:
    """The brute-force proof book is an independent check: of the 40 replies to c3 X it
    proved 29, and every position it holds that the strategy covers is an Order win in it."""
    book = shipped_book()
    c3 = State().apply(strategy.FIRST_MOVE)
    proven = 0
    for a in c3.legal_actions():
        hit = book.lookup(c3.apply(a))
        if hit is not None:
            assert hit.winner == ORDER and strategy.covers(c3.apply(a))
            proven += 1
    assert proven >= 29  # as replies, not up to symmetry
    covered = 0
    for key, winner, _ in book.items():
        state = key_state(key)
        if strategy.covers(state):
            covered += 1
            assert winner == ORDER, state.to_string()
    assert covered > 50


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_the_check_with_one_border_move(cert_file: Path) -> None:
    done = prove("--check", str(cert_file), "--border-moves", "1", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    counts = {p["name"]: p["counts"] for p in json.loads(done.stdout)["parts"]}
    assert counts["replay"]["order_to_move_positions"] == 10_184_876
