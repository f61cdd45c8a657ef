"""What the coding reward's verification costs: the pytest run alone, as before, against the pytest
run with the verdict stream plus the second run of the fail-to-pass tests, as a table.

    .venv/bin/python bench/verification.py            # the example and six tasks of suites/coding, 3 rounds
    .venv/bin/python bench/verification.py --quick    # the example and two small tasks, 1 round (CI)
    .venv/bin/python bench/verification.py --task NAME --rounds 1   # the example and tasks of your choice

For each project (``examples/python-user-service`` and tasks of ``suites/coding``, whose starting
trees are built from PyPI sdists into Horizon's cache when read, ``core.eval.sources``) the
reference fix is applied to a copy of the starting tree (under ``/var/tmp``: the sandbox hides
``/tmp``), then, in the bwrap sandbox with Horizon's own interpreter:

* before: pytest as the grader ran it before the verdict stream (``pytest_argv`` without it,
  outcomes from the JUnit report);
* after: pytest with the verdict stream (``testing.run_test_suite``), then the fail-to-pass tests
  that passed run a second way, without pytest (``second_run.second_run``).

Times are wall-clock seconds per verification, the median of the rounds; the ratio is after /
before. The exit status is non-zero when the reference fix does not verify the second way (a
fail-to-pass test differs, or the stream shows a problem): that would be a false alarm that
scores a right fix 0. Times are reported, not asserted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "python-user-service"
QUICK_TASKS = ["parse-1.20.2-hyphen-field-names", "xmltodict-0.14.2-whitespace-text"]
TASKS = [*QUICK_TASKS, "sqlparse-0.5.1-strip-comments", "pathspec-0.12.1-match-file", "tomlkit-0.13.1-super-table",
         "pyflakes-3.0.1-print-augassign", "jinja2-3.1.6-attr-sandbox"]  # fmt: skip


def projects(names: list[str], where: Path) -> list[tuple[str, Path, list[str]]]:
    """``(name, fixed tree, fail-to-pass ids)``: the example and each task, reference fix applied."""
    from core.eval.sources import StartRecipe, materialise

    found = []
    example = Path(shutil.copytree(EXAMPLE, where / "python-user-service", ignore=shutil.ignore_patterns("__pycache__")))
    service = example / "users" / "service.py"
    service.write_text(service.read_text().replace("nickname = user.nickname.strip()", 'nickname = (user.nickname or "").strip()'))
    found.append(("python-user-service", example, ["tests/test_service.py::test_display_name_falls_back_to_full_name_when_nickname_missing",
                                                   "tests/test_service.py::test_list_active_display_names_includes_users_without_nickname"]))  # fmt: skip
    for name in names:
        folder = ROOT / "suites" / "coding" / name
        task = json.loads((folder / "task.json").read_text(encoding="utf-8"))
        start = materialise(StartRecipe.model_validate(task["start"]), name=name)
        tree = Path(shutil.copytree(start.path, where / name, symlinks=True))
        subprocess.run(["git", "apply", str(folder / "fix.diff")], cwd=tree, check=True, capture_output=True)
        found.append((name, tree, list(task["fail_to_pass"])))
    return found


def plain_pytest_seconds(tree: Path, scratch: Path) -> tuple[float, int]:
    """The grader's pytest run as it was before the verdict stream; ``(seconds, tests)``."""
    from core.sandbox import open_sandbox
    from plugins.coding.environment import horizon_environment
    from plugins.coding.testing import UNITTEST_FILES, _has_pytest_config, new_run_dir, pytest_argv, read_pytest_run, sandbox_env

    environment = horizon_environment(tree)
    run_dir = new_run_dir(scratch, "pytest")
    extra = () if _has_pytest_config(tree) else ("-o", f"python_files={UNITTEST_FILES}")
    started = time.monotonic()
    result = open_sandbox(tree, scratch).run(pytest_argv(run_dir, tree, [], python=environment.python, extra=extra), cwd=tree,
                                             env={**environment.variables(tree), **sandbox_env(run_dir)})  # fmt: skip
    run = read_pytest_run(result, run_dir, tree)
    return time.monotonic() - started, len(run.outcomes)


def verified_seconds(tree: Path, scratch: Path, targets: list[str], second: Path) -> tuple[float, float, dict]:
    """The streamed pytest run and the second run; ``(pytest seconds, second-run seconds, facts)``."""
    from core.sandbox import open_sandbox
    from plugins.coding.environment import horizon_environment
    from plugins.coding.second_run import second_run, second_run_tests
    from plugins.coding.testing import run_test_suite

    environment = horizon_environment(tree)
    sandbox = open_sandbox(tree, scratch)
    started = time.monotonic()
    run = run_test_suite(sandbox, tree, scratch, environment=environment)
    first = time.monotonic() - started
    started = time.monotonic()
    result = second_run(sandbox, tree, second, second_run_tests(targets, run.outcomes), environment)
    return first, time.monotonic() - started, {
        "tests": len(run.outcomes), "targets": len(targets), "passed": sum(run.outcomes.get(t) == "passed" for t in targets),
        "checked": len(result.checked), "unchecked": result.unchecked, "differs": result.differs,
        "problems": [*run.stream_problems, *result.problems],
    }  # fmt: skip


def main() -> None:
    """Parse the arguments, measure every project, print the table; exit 1 on a false alarm (or a fix that fails)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"the example and {', '.join(QUICK_TASKS)}, one round (CI)")
    parser.add_argument("--task", action="append", help="a task of suites/coding (repeatable); default: TASKS")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per project (default 3, --quick 1)")
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 3)
    where = Path(tempfile.mkdtemp(prefix="horizon-bench-verification-", dir="/var/tmp"))
    console = Console(width=max(Console().width, 150))
    table = Table(title=f"seconds per verification (median of {rounds}), reference fixes, bwrap sandbox, Horizon's Python")
    for column in ("project", "tests", "fail-to-pass", "before: pytest", "after: pytest + stream", "second run", "after: both",
                   "ratio", "checked 2nd way", "verdict"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("project", "verdict") else "right")
    alarms = []
    try:
        for name, tree, targets in projects(args.task or (QUICK_TASKS if args.quick else TASKS), where):
            before, first, second, facts = [], [], [], {}
            for index in range(rounds):
                seconds, _ = plain_pytest_seconds(tree, where / f"{name}-scratch-before-{index}")
                before.append(seconds)
                one, two, facts = verified_seconds(tree, where / f"{name}-scratch-{index}", targets, where / f"{name}-second-{index}")
                first.append(one)
                second.append(two)
            b, f, s = statistics.median(before), statistics.median(first), statistics.median(second)
            verdict = "verified"
            if facts["differs"] or facts["problems"] or facts["passed"] != facts["targets"]:
                verdict = "FALSE ALARM" if facts["differs"] or facts["problems"] else "fix does not pass"
                alarms.append(f"{name}: {facts['differs'] or facts['problems'] or 'fail-to-pass tests not passing'}")
            unchecked = f" ({len(facts['unchecked'])} not: {min(facts['unchecked'].values())[:40]})" if facts["unchecked"] else ""
            table.add_row(name, str(facts["tests"]), str(facts["targets"]), f"{b:.2f}", f"{f:.2f}", f"{s:.2f}", f"{f + s:.2f}",
                          f"{(f + s) / b:.2f}", f"{facts['checked']}{unchecked}", verdict)  # fmt: skip
        console.print(table)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    for alarm in alarms:
        console.print(f"[red]{alarm}[/]")
    sys.exit(1 if alarms else 0)


if __name__ == "__main__":
    main()
