"""Does Horizon's own reward agree with a real fix's own tests? suites/coding-hidden, as a table.

    .venv/bin/python bench/reward_agreement.py              # all 28 tasks of suites/coding-hidden
    .venv/bin/python bench/reward_agreement.py --quick      # 2 tasks (CI)
    .venv/bin/python bench/reward_agreement.py --task NAME  # tasks of your choice
    .venv/bin/python bench/reward_agreement.py --run-hidden # also grade the fix by the hidden tests again

Each task of ``suites/coding-hidden`` is a bug from a PyPI bug-fix release: its starting tree
is the buggy release, its ``fix.diff`` the release's fix, and its hidden tests the fixed
release's test files. For each task two episodes run exactly as ``agent eval`` runs them
(``core.eval.runner.run_episode``, the ``reference`` policy replaying a diff as ``edit_file``
calls, the coding plugin's set-up and reward, the project's own environment), but graded as a
plain run is, by Horizon's own reward: no hidden tests and no declared fail-to-pass tests, so
the run's own test edits are its reproduction tests (``plugins.coding.reward``):

* fix + tests: the reference fix plus the fixed release's own test changes (the hidden test
  files written over the starting ones), as a careful agent would write them;
* tests only: the release's test changes without the fix.

The hidden tests' verdict is what the task was built on (``suites/validate.py``: every
fail-to-pass test fails on the starting tree and passes with the fix; the reference policy
resolves 28/28, finish-only 0/28, suites/coding-hidden/EVAL.md): "resolved" for the fix, "not
resolved" without it (the grader resets the run's test edits and writes the hidden tests in, so
a tests-only patch is graded there exactly as an unchanged tree). ``--run-hidden`` grades the fix
by the hidden tests again, a third episode per task. A task agrees when the fix + tests reward is
1.00 and the tests-only reward 0.00. "why" is the reason the verdict gives. A changed
expectation the reward credits (``changed_expectations``) is marked "flagged".

The exit status is non-zero only when an episode does not finish (an error in Horizon or the
task's set-up), never for a disagreement: those are measurements, explained in EVAL.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "suites"))

SUITE = ROOT / "suites" / "coding-hidden"
QUICK_TASKS = ["humanize-4.12.3-naturalsize-one-byte", "apispec-6.8.4-timedelta-number"]


def release_test_diff(task) -> str:
    """The fixed release's test changes: a git diff from the starting tree's test files to the hidden ones."""
    from build_task import git_diff

    hidden = Path(task.metadata["hidden_tests"])
    pairs = {}
    for path in sorted(hidden.rglob("*")):
        if path.is_file() and not path.is_symlink():
            rel = path.relative_to(hidden).as_posix()
            old = task.repo / rel
            new = path.read_text(encoding="utf-8")
            before = old.read_text(encoding="utf-8") if old.is_file() else None
            if before != new:
                pairs[rel] = (before, new)
    return git_diff(pairs)


def episode(task, diff: str, label: str, where: Path, home: Path, *, hidden: bool) -> dict:
    """Replay ``diff`` on ``task``'s starting tree as one ``reference`` episode; graded by the
    hidden tests when ``hidden``, else by Horizon's own reward (no declared or hidden tests)."""
    from core.eval.runner import episode_specs, run_episode
    from core.eval.tasks import load_task
    from core.export.source import load_run

    copy = where / label / task.name
    shutil.copytree(task.folder, copy)
    (copy / "fix.diff").write_text(diff, encoding="utf-8")
    replay = load_task(copy)
    [spec] = episode_specs([replay], plugin="coding", attempts=1, policy="reference", policy_config=None, limits={"max_steps": 400},
                           pricing={}, isolated=True, home=home, scripts_dir=where / label / "scripts")  # fmt: skip
    if not hidden:  # graded as a plain run: the run's own tests decide (a declared list of None is "not declared")
        spec.metadata = {k: v for k, v in spec.metadata.items() if k not in ("hidden_tests", "sandbox_hidden")}
        spec.metadata.update({"fail_to_pass": None, "pass_to_pass": None})
    started = time.monotonic()
    result = run_episode(spec)
    components = load_run(result.run_id, home).rewards if result.run_id else {}
    flagged = ((components.get("changed_expectations") or {}).get("detail") or {}).get("findings") or []
    return {"reward": result.reward, "resolved": result.resolved, "status": result.exit_status, "summary": result.summary or "",
            "flagged": flagged, "run_id": result.run_id, "seconds": time.monotonic() - started}  # fmt: skip


def shown(outcome: dict) -> str:
    if outcome["status"] != "submitted":  # the reference policy always finishes: anything else is a failure
        return f"error ({outcome['status']})"
    value = "n/a" if outcome["reward"] is None else f"{outcome['reward']:.2f}"
    return value + (" flagged" if outcome["flagged"] else "")


def why(fixed: dict, tests_only: dict) -> str:
    """The verdicts' reasons, short: the fix's, and the tests-only one's when it is not a plain 0."""
    def short(text: str) -> str:
        text = " ".join(text.split())
        return text if len(text) <= 260 else text[:259] + "…"

    said = short(fixed["summary"])
    if tests_only["reward"] != 0.0:
        said += f" / tests only: {short(tests_only['summary'])}"
    return said.replace("|", "\\|")


def main(argv: list[str] | None = None) -> int:
    """Grade each task's fix + tests and tests only by Horizon's own reward; print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_TASKS)}")
    parser.add_argument("--task", action="append", default=[], help="a task of suites/coding-hidden (repeatable)")
    parser.add_argument("--run-hidden", action="store_true", help="grade the reference fix by the hidden tests again (a third episode)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON lines here")
    parser.add_argument("--home", type=Path, default=None, help="Horizon home for the runs (default: $HORIZON_HOME; its cache is reused)")
    args = parser.parse_args(argv)

    from rich.console import Console
    from rich.table import Table

    from core.config import horizon_home
    from core.eval.tasks import load_task

    names = args.task or (QUICK_TASKS if args.quick else sorted(p.name for p in SUITE.iterdir() if (p / "task.json").is_file()))
    home = args.home or horizon_home()
    console = Console(width=250)
    rows, failed = [], 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="horizon-agreement-", dir="/var/tmp") as tmp:
        for name in names:
            task = load_task(SUITE / name)
            fix, tests = (task.folder / "fix.diff").read_text(encoding="utf-8"), release_test_diff(task)
            where = Path(tmp)
            fixed = episode(task, fix + tests, "fix-and-tests", where, home, hidden=False)
            only = episode(task, tests, "tests-only", where, home, hidden=False)
            hidden = episode(task, fix, "hidden", where, home, hidden=True)["resolved"] if args.run_hidden else True
            agree = fixed["reward"] == 1.0 and only["reward"] == 0.0 and hidden
            row = {"task": name, "fix_and_tests": shown(fixed), "tests_only": shown(only),
                   "hidden": ("resolved" if hidden else "not resolved") + " / not resolved", "agree": agree,
                   "why": why(fixed, only), "seconds": round(fixed["seconds"] + only["seconds"], 1),
                   "runs": [fixed["run_id"], only["run_id"]], "flagged": fixed["flagged"]}  # fmt: skip
            failed += any(o["status"] != "submitted" for o in (fixed, only))
            rows.append(row)
            console.print(f"{name}: fix + tests {row['fix_and_tests']}, tests only {row['tests_only']}, agree {agree} "
                          f"({row['seconds']:.0f} s)")  # fmt: skip
            if args.json:
                with args.json.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(row) + "\n")
    table = Table(title="Horizon's own reward vs the fixed release's own tests (suites/coding-hidden)")
    for column in ("task", "fix + tests", "tests only", "hidden tests (fix / no fix)", "agree?", "why"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(row["task"], row["fix_and_tests"], row["tests_only"], row["hidden"], "yes" if row["agree"] else "no", row["why"])
    console.print(table)
    agreed = sum(r["agree"] for r in rows)
    console.print(f"{agreed}/{len(rows)} tasks agree (fix + tests 1.00, tests only 0.00); "
                  f"{sum(1 for r in rows if r['flagged'])} credited through a changed expectation (flagged); "
                  f"{time.monotonic() - started:.0f} s for {2 * len(rows)} episodes")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
