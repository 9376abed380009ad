"""orderchaos.files: the output-path checks run before work starts, and the fallback
that keeps finished work when the real place cannot be written at the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from orderchaos.files import (
    MAX_INPUT_BYTES, InputTooLargeError, OutputPathError, check_output_dir, check_output_file, read_text_bounded,
    write_with_fallback)

UNWRITABLE = "/proc/orderchaos-nowhere"  # /proc refuses new entries, even to root


def test_a_writable_file_path_passes_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "new" / "deeper" / "g.jsonl"
    assert check_output_file(target) == target
    assert list(tmp_path.iterdir()) == []  # the folders made for the probe are gone again
    existing = tmp_path / "old.txt"
    existing.write_text("kept")
    check_output_file(existing)
    assert existing.read_text() == "kept"


def test_an_existing_file_that_cannot_be_written_is_refused(tmp_path: Path) -> None:
    """The folder is writable, the file is there but refuses writes (even to root: a link
    to a /proc file), so only the check of the existing file itself can catch it."""
    existing = tmp_path / "games.jsonl"
    existing.symlink_to("/proc/version")
    with pytest.raises(OutputPathError, match=f"cannot write output {existing}: "):
        check_output_file(existing, "output")


def test_a_writable_directory_passes_and_leaves_nothing(tmp_path: Path) -> None:
    check_output_dir(tmp_path / "a" / "b")
    check_output_dir(tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "make, check, message",
    [
        (lambda t: t, check_output_file, "is a directory"),
        (lambda t: Path(UNWRITABLE) / "g.jsonl", check_output_file, "cannot create /proc/orderchaos-nowhere"),
        (lambda t: (t / "afile").touch() or t / "afile" / "g.jsonl", check_output_file, "afile is a file"),
        (lambda t: (t / "afile").touch() or t / "afile", check_output_dir, "is a file, not a directory"),
        (lambda t: (t / "afile").touch() or t / "afile" / "sub", check_output_dir, "afile is a file"),
        (lambda t: Path(UNWRITABLE), check_output_dir, "cannot create"),
        (lambda t: Path("/proc"), check_output_dir, "cannot write in /proc"),
    ],
)
def test_unwritable_outputs_are_refused_in_one_line(tmp_path: Path, make, check, message: str) -> None:
    with pytest.raises(OutputPathError, match=message) as err:
        check(make(tmp_path), "output")
    assert "\n" not in str(err.value)
    assert isinstance(err.value, ValueError)


def test_fallback_writes_beside_the_target_then_to_a_temporary_folder(tmp_path: Path) -> None:
    def write(p: Path) -> None:
        p.write_text("work")

    ok = tmp_path / "ok.txt"
    assert write_with_fallback(ok, write) == (ok, None)
    blocked = tmp_path / "blocked"
    blocked.mkdir()  # a directory where the file is meant: writing it fails
    where, error = write_with_fallback(blocked, write)
    assert isinstance(error, IsADirectoryError)
    assert where.parent == tmp_path and where.name.startswith("blocked.unsaved-")
    assert where.read_text() == "work"

    nowhere = Path(UNWRITABLE) / "x.txt"  # neither it nor a file beside it can be written
    where, error = write_with_fallback(nowhere, write)
    assert error is not None and where.name == "x.txt" and where.read_text() == "work"
    assert not str(where).startswith("/proc")
    where.unlink()
    where.parent.rmdir()


def test_fallback_raises_the_first_error_when_nothing_can_be_written() -> None:
    def write(p: Path) -> None:
        raise PermissionError(13, "denied", str(p))

    with pytest.raises(PermissionError):
        write_with_fallback("/tmp/whatever", write)


def test_the_bounded_reader_refuses_a_file_over_the_limit_from_its_size_and_an_endless_one_as_it_reads(
    tmp_path: Path,
) -> None:
    sparse = tmp_path / "huge.jsonl"
    with open(sparse, "wb") as fh:
        fh.truncate(MAX_INPUT_BYTES + 1)  # no disk and no memory: the size alone refuses it
    with pytest.raises(InputTooLargeError, match=f"larger than {MAX_INPUT_BYTES:,} bytes"):
        read_text_bounded(sparse)
    with pytest.raises(InputTooLargeError, match="larger than 4,096 bytes"):
        read_text_bounded("/dev/zero", 4096)
    exact = tmp_path / "exact.txt"
    exact.write_text("x" * 4096)
    assert read_text_bounded(exact, 4096) == "x" * 4096
