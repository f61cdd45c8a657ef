"""Whole-suite test runs at scale: one process against Horizon's shards, on real PyPI suites, as a table.

    .venv/bin/python bench/test_runs.py            # pathspec 0.12.1 and mpmath 1.3.0 (615 tests, minutes)
    .venv/bin/python bench/test_runs.py --quick    # pathspec 0.12.1 only (CI)

Each project's sdist comes from the sources cache (``core.eval.sources``; downloaded from PyPI
once). The suite runs as the baseline does (``run_test_suite`` with no ids, in the sandbox, with
Horizon's own interpreter): once in one process (``HORIZON_TEST_WORKERS=1``) and once sharded
over the CPUs here, each with a 900 s limit so that both finish; then once more sharded with the
budget sized from the measured run (``testing_scale.suite_budget``), to show what it grew to.
Wall-clock seconds; a shared machine makes the ratio the number to read.

Exits non-zero when the sharded outcomes differ from the serial ones.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from core.eval.sources import ArchiveLayer, fetch_archive, unpack
from core.sandbox import open_sandbox
from plugins.coding import testing_scale
from plugins.coding.testing import run_test_suite

PROJECTS = {
    "pathspec-0.12.1": ArchiveLayer(
        url="https://files.pythonhosted.org/packages/ca/bc/f35b8446f4531a7cb215605d100cd88b7ac6f44ab3fc94870c120ab3adbf/pathspec-0.12.1.tar.gz",
        sha256="a482d51503a1ab33b1c67a6c3813a26953dbdc71c31dacaef9a838c4e29f5712"),
    "mpmath-1.3.0": ArchiveLayer(
        url="https://files.pythonhosted.org/packages/e0/47/dd32fa426cc72114383ac549964eecb20ecfd886d1e5ccf5340b55b02f57/mpmath-1.3.0.tar.gz",
        sha256="7a28eb2a9774d00c7bc92411c19a89209d5da7c4c9a9e227be8330a23a25b91f"),
}  # fmt: skip
QUICK = ("pathspec-0.12.1",)


def run(source: Path, base: Path, workers: int, timeout: str | None):
    """The whole suite of a fresh copy of ``source`` with ``workers`` processes."""
    shutil.rmtree(base, ignore_errors=True)
    workspace, scratch = base / "ws", base / "scratch"
    shutil.copytree(source, workspace, symlinks=True)
    scratch.mkdir()
    os.environ[testing_scale.WORKERS_ENV] = str(workers)
    if timeout is None:
        os.environ.pop("HORIZON_TEST_TIMEOUT_S", None)
    else:
        os.environ["HORIZON_TEST_TIMEOUT_S"] = timeout
    started = time.monotonic()
    result = run_test_suite(open_sandbox(workspace, scratch), workspace, scratch)
    return result, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="pathspec only")
    args = parser.parse_args()
    cores = testing_scale.workers()
    table = Table(title=f"whole-suite test runs: one process against {cores} shards (wall-clock s)")
    for column in ("project", "tests", "1 process s", f"{cores} shards s", "ratio", "same outcomes", "budget then", "why"):
        table.add_column(column, justify="left" if column in ("project", "why", "same outcomes") else "right")
    problems = []
    saved = {k: os.environ.get(k) for k in ("HORIZON_HOME", "HORIZON_TEST_ENV", "HORIZON_TEST_TIMEOUT_S", testing_scale.WORKERS_ENV)}
    with tempfile.TemporaryDirectory(prefix="horizon-bench-tests-") as tmp:
        root = Path(tmp)
        os.environ["HORIZON_HOME"] = str(root / "home")  # a fresh budget cache
        os.environ["HORIZON_TEST_ENV"] = "horizon"
        for name in QUICK if args.quick else PROJECTS:
            archive, _ = fetch_archive(PROJECTS[name])
            (root / "src" / name).mkdir(parents=True)
            source = unpack(archive, root / "src" / name, PROJECTS[name].url)
            serial, serial_s = run(source, root / "serial", 1, "900")
            sharded, sharded_s = run(source, root / "sharded", cores, "900")
            same = serial.outcomes == sharded.outcomes and not serial.timed_out and not sharded.timed_out
            if not same:
                differ = sorted(t for t in set(serial.outcomes) | set(sharded.outcomes) if serial.outcomes.get(t) != sharded.outcomes.get(t))
                shown = "; ".join(f"{t}: {serial.outcomes.get(t, 'absent')} alone, {sharded.outcomes.get(t, 'absent')} sharded"
                                  for t in differ[:5])  # fmt: skip
                problems.append(f"{name}: {len(differ)} sharded outcome(s) differ from the serial ones: {shown}")
            sized, _ = run(source, root / "sized", cores, None)  # sized from the sharded run just recorded
            table.add_row(name, str(len(serial.outcomes)), f"{serial_s:.1f}", f"{sharded_s:.1f}", f"{serial_s / sharded_s:.2f}x",
                          "yes" if same else "NO", f"{sized.budget_s:.0f}", sized.budget_reason)  # fmt: skip
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    Console(width=160).print(table)
    for problem in problems:
        print(f"problem: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
