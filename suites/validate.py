"""Check every task's reference fix, twice in a row, and write the results table.

For each task folder of a suite, twice: copy its starting tree (``repo/``, or the tree built from
its ``start`` recipe into the sources cache) to a fresh workspace, run the whole test
suite in Horizon's sandbox (``plugins.coding.testing.run_test_suite``), apply ``fix.diff`` and
run it again. A task passes when, in both rounds,

* every fail-to-pass test fails (or errors, or cannot be collected) without the fix,
* every pass-to-pass test passes without the fix,
* every fail-to-pass and pass-to-pass test passes with the fix,
* no other test fails without the fix (the coding plugin's grader counts every test failing at
  the start as a target, so an unrelated failure would make the task unsolvable).

Usage::

    .venv/bin/python suites/validate.py suites/coding [--jobs 2] [--out suites/coding/VALIDATION.md]

Exit status 0 when every task passes.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checking import failed_before, run_before_after

from core.eval.tasks import EvalTask, load_suite
from plugins.coding.reward import passes as passes_after

ROUNDS = 2


def check_round(task: EvalTask) -> dict[str, Any]:
    """One before/after round; returns the counts and the problems found (empty: good)."""
    hidden = task.metadata.get("hidden_tests")
    check = run_before_after(task.repo, task.fix_diff, hidden_tests=Path(hidden) if hidden else None,
                             dependencies_as_of=task.spec.dependencies_as_of)  # fmt: skip
    spec = task.spec
    problems = []
    not_failing = [t for t in spec.fail_to_pass if not failed_before(t, check.before)]
    if not_failing:
        problems.append(f"fail-to-pass tests pass without the fix: {not_failing[:3]}")
    p2p_not_passing = [t for t in spec.pass_to_pass if check.before.get(t) != "passed"]
    if p2p_not_passing:
        problems.append(f"pass-to-pass tests do not pass without the fix: {p2p_not_passing[:3]}")
    expected = set(spec.fail_to_pass)
    modules = {t.split("::", 1)[0] for t in spec.fail_to_pass}
    other = [t for t, o in check.before.items() if o in ("failed", "error") and t not in expected and t not in modules]
    if other:
        problems.append(f"other tests fail without the fix: {other[:3]}")
    f2p_after = [t for t in spec.fail_to_pass if not passes_after(t, check.after)]
    if f2p_after:
        problems.append(f"fail-to-pass tests still fail with the fix: {f2p_after[:3]}")
    p2p_after = [t for t in spec.pass_to_pass if check.after.get(t) != "passed"]
    if p2p_after:
        problems.append(f"pass-to-pass tests fail with the fix: {p2p_after[:3]}")
    return {
        "seconds": check.seconds,
        "f2p_failing_before": len(spec.fail_to_pass) - len(not_failing),
        "f2p_passing_after": len(spec.fail_to_pass) - len(f2p_after),
        "p2p_passing_after": len(spec.pass_to_pass) - len(p2p_after),
        "problems": problems,
    }


def validate(task: EvalTask) -> dict[str, Any]:
    """``ROUNDS`` rounds for one task; returns a row of the results table."""
    rounds = []
    for _ in range(ROUNDS):
        try:
            rounds.append(check_round(task))
        except Exception as exc:  # noqa: BLE001 - a task that cannot run is a failed check, not a crash
            rounds.append({"seconds": 0.0, "f2p_failing_before": 0, "f2p_passing_after": 0, "p2p_passing_after": 0,
                           "problems": [f"{type(exc).__name__}: {exc}"]})
    return {"task": task, "rounds": rounds, "ok": all(not r["problems"] for r in rounds)}


def table(rows: list[dict[str, Any]]) -> str:
    """The results as a Markdown table, one line per task."""
    lines = [
        "| task | package | buggy -> fixed | fail-to-pass | pass-to-pass | round 1 | round 2 | seconds (both rounds) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        task: EvalTask = row["task"]
        s = task.spec.source
        cells = []
        for r in row["rounds"]:
            cells.append(
                "ok" if not r["problems"] else "FAIL: " + "; ".join(r["problems"]).replace("|", "\\|")
            )
        seconds = sum(r["seconds"] for r in row["rounds"])
        lines.append(
            f"| {task.name} | {s.package} | {s.buggy_version} -> {s.fixed_version} | {len(task.spec.fail_to_pass)} "
            f"| {len(task.spec.pass_to_pass)} | {cells[0]} | {cells[1]} | {seconds:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Validate a suite, print the table and write it to ``--out``; 0 when every task passes."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suite", type=Path)
    parser.add_argument("--jobs", type=int, default=2, help="tasks checked at once")
    parser.add_argument("--out", type=Path, default=None, help="Markdown file for the table (default: SUITE/VALIDATION.md)")
    parser.add_argument("names", nargs="*", help="only these tasks")
    args = parser.parse_intermixed_args(argv)  # task names before or after the options
    tasks = load_suite(args.suite.resolve(), args.names)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(validate, tasks))
    text = table(rows)
    good = sum(1 for r in rows if r["ok"])
    header = (
        "# Reference-fix validation\n\n"
        f"Generated by `.venv/bin/python suites/validate.py {args.suite}`: for each task, twice in a row, the whole\n"
        "test suite runs in Horizon's sandbox without and then with `fix.diff` (see `suites/validate.py`\n"
        "for the conditions checked).\n\n"
        f"**{good} of {len(rows)} tasks pass both rounds.**\n\n"
    )
    (args.out or args.suite / "VALIDATION.md").write_text(header + text, encoding="utf-8")
    print(header + text)
    return 0 if good == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
