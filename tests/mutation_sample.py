"""Mutation testing of a seeded sample of one module's mutants (docs/testing.md).

A module with hundreds of mutants takes hours to run in full with ``mutmut run``; this runs a
sample of them, drawn with a seed so that a run can be repeated::

    python tests/mutation_sample.py envs/rules.py --sample 80 --seed 1 \\
        tests/envs/test_rules.py tests/envs/test_reachable.py

It registers the module's mutants in mutmut's cache (``.mutmut-cache``), so the ids it prints
are mutmut's own (``mutmut show ID`` prints one, ``mutmut results`` lists the sampled ones),
draws the sample, runs the tests once unmutated, then for each sampled mutant writes it into
the module, runs the tests and writes the module back. Any failing status of the tests kills
the mutant (a collection error included); a run past ten times the unmutated run's time, or
30 s more than it, is killed too (a mutant that loops). The module is written back whatever
happens, Ctrl-C included. ``--ids`` runs given mutants again (after a test is added), and
``--list`` prints every id. Meanwhile run no other mutmut command (``mutmut show`` reads the
module as it is on disk and would register the planted change in the cache), and leave the
tests it runs unchanged. Exit status: 0 when every mutant run was killed, 1 when some
survived or the tests fail unmutated, 2 for bad arguments.

Not a test module: pytest collects only ``test_*.py`` files.
"""

from __future__ import annotations

import argparse
import difflib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

TIMEOUT_FACTOR = 10.0
TIMEOUT_EXTRA_S = 30.0


class _Parser(argparse.ArgumentParser):
    """Bad arguments are one line and exit status 2, without the usage text."""

    def error(self, message: str) -> NoReturn:
        """Print ``message`` on one line and exit with status 2."""
        bad_input(message)


def bad_input(message: str) -> NoReturn:
    """One line on stderr, exit status 2."""
    print(f"mutation_sample: {message}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line, checked: the module and the tests exist, the sample size is positive."""
    parser = _Parser(description="Run a seeded sample of mutmut's mutants of one module.")
    parser.add_argument("module", help="the file to mutate, relative to the repository root")
    parser.add_argument("tests", nargs="*", help="the test files or folders that pytest runs on each mutant")
    parser.add_argument("--sample", type=int, default=0, metavar="N",
                        help="how many mutants to run (default: all of them)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="the seed of the draw (default 0)")
    parser.add_argument("--ids", default="", metavar="ID,ID",
                        help="run these mutant ids (comma-separated) instead of a sample")
    parser.add_argument("--list", action="store_true", help="print the module's mutant ids and stop")
    args = parser.parse_intermixed_args(argv)
    if not Path("pyproject.toml").is_file() or not Path("tests").is_dir():
        bad_input("run it from the repository root (where pyproject.toml and tests/ are)")
    module = Path(args.module)
    if module.is_absolute() or module.suffix != ".py" or not module.is_file():
        bad_input(f"{args.module}: not a Python file under the repository root")
    if Path(f"{args.module}.bak").exists():
        bad_input(f"{args.module}.bak exists: an earlier mutmut run was interrupted; "
                  f"check {args.module} (git diff), then remove the .bak")
    if not args.tests and not args.list:
        bad_input("name the tests to run on each mutant (test files or folders)")
    missing = [t for t in args.tests if not Path(t).exists()]
    if missing:
        bad_input(f"no such test path: {missing[0]}")
    try:
        args.ids = [int(i) for i in args.ids.split(",")] if args.ids else []
    except ValueError:
        bad_input(f"--ids takes mutant ids separated by commas, not {args.ids!r}")
    if args.ids and args.sample:
        bad_input("give --ids or --sample, not both")
    if args.sample < 0:
        bad_input(f"--sample must be a number of mutants (0: all), not {args.sample}")
    return args


def register_mutants(module: str) -> dict[int, Any]:
    """Every mutant of ``module`` in the order of the file: mutmut's id (registered in its
    cache where it is not yet: mutmut registers them only when ``mutmut run`` lists them)
    and mutmut's description of the change (its line and index there)."""
    from mutmut import Context, list_mutations
    from mutmut.cache import Line, Mutant, SourceFile, db_session, get_or_create, init_db, update_line_numbers
    from mutmut.cache import UNTESTED

    update_line_numbers(module)
    mutations = list_mutations(Context(source=Path(module).read_text(), filename=module, dict_synonyms=[""]))

    @init_db
    @db_session
    def ids() -> dict[int, Any]:
        source = SourceFile.get(filename=module)
        found = {}
        for m in mutations:
            line = Line.get(sourcefile=source, line=m.line, line_number=m.line_number)
            mutant = get_or_create(Mutant, line=line, index=m.index, defaults={"status": UNTESTED})
            mutant.flush()
            found[mutant.id] = m
        return found

    return ids()


def run_tests(tests: list[str], timeout: float | None) -> tuple[str, float]:
    """Run pytest on ``tests``: ``"passed"``, ``"failed"`` or ``"timeout"``, and the seconds it took.
    The tests run in their own process group, so that a timeout or Ctrl-C ends all of it."""
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    start = time.monotonic()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return "timeout", time.monotonic() - start
    finally:
        if proc.returncode is None:  # interrupted: end the tests before the module is restored
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return ("passed" if code == 0 else "failed"), time.monotonic() - start


def mutant_source(module: str, mutation_id: Any, original: str) -> str:
    """The text of ``module`` with the mutant ``mutation_id`` (mutmut's description) planted."""
    from mutmut import Context, mutate

    mutated, performed = mutate(Context(source=original, mutation_id=mutation_id, filename=module,
                                        dict_synonyms=[""]))
    if performed != 1:
        raise RuntimeError(f"{mutation_id} is not one change of {module}")
    return mutated


def record(module: str, mutation_id: Any, status: str) -> None:
    """Store a mutant's outcome in mutmut's cache, where ``mutmut results`` reads it."""
    from mutmut.cache import hash_of_tests, update_mutant_status

    update_mutant_status(module, mutation_id, status, hash_of_tests(["tests/"]))


def main(argv: list[str] | None = None) -> int:
    """Draw the sample, run it, print the killed and surviving mutants and the survivors' diffs."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import mutmut  # noqa: F401
    except ImportError:
        bad_input("mutmut is not installed: pip install -e '.[mutation]'")
    from mutmut import BAD_SURVIVED, BAD_TIMEOUT, OK_KILLED

    module = args.module
    ids = register_mutants(module)
    if args.list:
        print(" ".join(map(str, ids)))
        return 0
    if args.sample > len(ids):
        bad_input(f"--sample {args.sample}: {module} has {len(ids)} mutants")
    unknown = [i for i in args.ids if i not in ids]
    if unknown:
        bad_input(f"--ids: {unknown[0]} is not a mutant of {module} (--list shows them)")
    if args.ids:
        chosen = args.ids
    else:
        chosen = sorted(random.Random(args.seed).sample(sorted(ids), args.sample)) if args.sample else list(ids)
    path = Path(module)
    original = path.read_bytes()
    what = f"{len(chosen)} of {len(ids)} mutants" + (f" (seed {args.seed})" if args.sample else "")
    what += " given by id" if args.ids else ""
    print(f"{module}: {what}; tests: {' '.join(args.tests)}", flush=True)
    outcome, baseline = run_tests(args.tests, None)
    if outcome != "passed":
        print(f"the tests fail on the unmutated {module}; fix them first", file=sys.stderr)
        return 1
    timeout = max(TIMEOUT_FACTOR * baseline, baseline + TIMEOUT_EXTRA_S)
    survivors: list[int] = []
    killed = 0
    try:
        for n, pk in enumerate(chosen, 1):
            path.write_text(mutant_source(module, ids[pk], original.decode()))
            outcome, seconds = run_tests(args.tests, timeout)
            path.write_bytes(original)
            status = {"passed": BAD_SURVIVED, "timeout": BAD_TIMEOUT}.get(outcome, OK_KILLED)
            record(module, ids[pk], status)
            if outcome == "passed":
                survivors.append(pk)
            else:
                killed += 1
            print(f"[{n}/{len(chosen)}] mutant {pk}: {'survived' if outcome == 'passed' else 'killed'}"
                  f"{' (timeout)' if outcome == 'timeout' else ''} ({seconds:.1f} s)", flush=True)
    except KeyboardInterrupt:
        print(f"\ninterrupted: {module} is restored", file=sys.stderr)
        return 130
    finally:
        path.write_bytes(original)
    print(f"{module}: {what}: {killed} killed, {len(survivors)} survived"
          + (f": {' '.join(map(str, survivors))}" if survivors else ""))
    for pk in survivors:
        mutated = mutant_source(module, ids[pk], original.decode())
        diff = difflib.unified_diff(original.decode().splitlines(), mutated.splitlines(), module, module, lineterm="")
        print(f"\nmutant {pk}:", *diff, sep="\n")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
