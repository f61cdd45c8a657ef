"""Quality gates run before export: which trajectories are unfit to train on, and why.

Each gate reads only what the run store and the run folder recorded; every verdict names its
reason and the evidence. The reasons:

- ``infrastructure_failure``: the episode did not end on the policy's account. The run is not
  ``finished``: it ``crashed`` (a sandbox that could not start, a plugin set-up that failed, a bug
  in Horizon; ``exit_detail`` says which), lost its model server (``model_error``), was
  ``interrupted`` or ``killed``. Its outcome says nothing about the policy.
- ``reward_hacking``: the episode touched what the reward checks against: a reward component
  records edited files in its detail (``edited``, as the coding reward's ``tests_untouched``
  does), or the final patch touches a file the plugin's reward checks against (its
  ``is_checker_input`` hook: the coding plugin's tests and test-runner configuration; not for
  rewards whose tests live outside the workspace, whose components say
  ``tests_outside_workspace`` in their detail: a Terminal-Bench task may ask the agent to write
  tests; nor for the test files a reward ran as the run's own reproduction tests, named in
  ``reproduction_files``).
- ``suspicious_code``: the patch adds code that reaches for the grader rather than the bug: the
  reward's ``suspicious_changes`` component (the coding plugin's suspicious-change gate,
  ``plugins.coding.suspicious``) lists findings (``path:line: rule: what``): frame or source
  inspection, scans or patches of loaded modules, exit hooks, the runner's environment variables,
  equality that ignores its argument. The reward is unchanged (a real fix may trip it); the run
  is only kept out of exports unless ``--keep-flagged``, and the flag names the lines.
- ``changed_expectation``: the reward credited an existing test whose expected values the patch
  changed (the coding reward's ``changed_expectations`` component lists them, ``path:line: changed
  expectation of test: `old` -> `new` ``): the old expectation may have been the bug, or the run
  fitted the test to a wrong change. Like ``suspicious_code`` the reward is unchanged and the run
  is only kept out of exports unless ``--keep-flagged``; the flag names the lines.
- ``near_duplicate``: the same task from the same starting files, the same tool calls (name and
  arguments, JSON-canonical) and the same observations once digits are masked and whitespace
  collapsed (timings and durations vary between otherwise identical episodes). The oldest run
  of each set is kept; the others are flagged. The threshold is exact equality of that
  normalised sequence, no fuzzy similarity.
- ``nondeterministic_environment``: the same tests, run twice on the starting files, disagreed.
  Evidence: set-up ran the tests twice (``agent eval --baseline-runs 2``) and the two runs
  disagree (the reward detail's ``before`` and ``before_rerun``); a test run (a tool result
  whose data has ``tests: {id: outcome}``) made before any call that can change files, whose
  outcomes differ from the set-up run's; or two episodes with the same starting files whose
  set-up runs disagree.
- ``reward_not_applicable``: the plugin's reward had nothing to judge (``RewardResult``'s
  ``not_applicable``, e.g. a finance task whose filings could not be read, a repository with no
  tests): the trajectory has no reward to learn from, which is not a reward of 0.
- ``instruction_unseen``: the stored instruction is not the request the policy acted on: an MCP
  session served without ``--task`` (``agent mcp``), whose request stayed in the MCP client's
  conversation, which Horizon never sees (task metadata ``instruction_unseen``). A trajectory
  without its request cannot teach which calls answer it.
- ``state_leak``: an episode did not start fresh: it started inside another run's folder, or its
  starting files carry another episode's changes (a file whose starting content is exactly what
  an earlier episode of the same task ended with, where that episode's own start differed).

``apply_gates`` returns a ``GateReport``: the verdicts per run and a count per reason.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from core.export.source import RunRecord, baseline_git, plugin_checker_inputs, root_commit
from core.workspace import last_saved_tree

REASONS = ("infrastructure_failure", "reward_hacking", "suspicious_code", "changed_expectation", "reward_not_applicable",
           "instruction_unseen", "near_duplicate", "nondeterministic_environment", "state_leak")

@dataclass(frozen=True)
class Flag:
    """One reason a run failed a gate: ``reason`` (one of ``REASONS``) and the evidence, in one line."""

    reason: str
    detail: str


@dataclass
class GateReport:
    """What the gates decided.

    Attributes:
        flags: ``{run_id: [Flag, ...]}`` for every run checked (empty list: it passed).
    """

    flags: dict[str, list[Flag]] = field(default_factory=dict)

    def passed(self) -> list[str]:
        """Run ids with no flag, in the order checked."""
        return [r for r, f in self.flags.items() if not f]

    def counts(self) -> dict[str, int]:
        """Runs flagged per reason (a run with two reasons counts under both), every reason listed."""
        out = dict.fromkeys(REASONS, 0)
        for flags in self.flags.values():
            for reason in {f.reason for f in flags}:
                out[reason] += 1
        return out

    def table(self) -> str:
        """A plain-text table: runs checked, passed, and flagged per reason."""
        rows = [("checked", len(self.flags)), ("passed", len(self.passed()))] + list(self.counts().items())
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name:<{width}}  {n:>5}" for name, n in rows)


def _infrastructure(run: RunRecord) -> list[Flag]:
    status = run.row.get("status")
    if status == "finished":
        return []
    detail = f"run {status}: {run.row.get('exit_status') or '?'}: {(run.row.get('exit_detail') or '').strip()[:300]}"
    return [Flag("infrastructure_failure", detail)]


def _not_applicable(run: RunRecord) -> list[Flag]:
    if run.row.get("status") == "finished" and run.row.get("reward_status") == "not_applicable":
        why = run.row.get("reward_summary") or "no reason given"
        return [Flag("reward_not_applicable", f"{run.row.get('reward_version')}: {why}")]
    return []


def _instruction_unseen(run: RunRecord) -> list[Flag]:
    if (run.row.get("config") or {}).get("task_metadata", {}).get("instruction_unseen"):
        return [Flag("instruction_unseen", f"the stored task {run.row.get('task')!r} stands in for a request Horizon never saw "
                     "(an MCP session without --task)")]
    return []


def _reward_hacking(run: RunRecord) -> list[Flag]:
    flags = []
    for name, component in run.rewards.items():
        detail = component.get("detail") or {}
        if detail.get("edited"):
            flags.append(Flag("reward_hacking", f"reward component {name!r} records edited files: {', '.join(map(str, detail['edited']))}"))
        if detail.get("changes"):  # the coding reward's checker_untouched: the patch changes how tests run
            flags.append(Flag("reward_hacking", f"reward component {name!r}: {'; '.join(map(str, detail['changes']))[:300]}"))
    # a reward that ran the patch's own tests as reproduction tests (the coding reward, when no test
    # failed at the start) names them: they are its evidence, run on the starting code and the patch
    evidence = {f for c in run.rewards.values() for f in ((c.get("detail") or {}).get("reproduction_files") or [])}
    checks_against = plugin_checker_inputs(run.plugin)  # the plugin knows what its reward reads
    touched = [p for p in run.patched_files if checks_against(p) and p not in evidence]
    if any((c.get("detail") or {}).get("tests_outside_workspace") for c in run.rewards.values()):
        # its grader runs the task's own tests, kept outside the workspace, and imports pytest
        # before the working folder: test files the agent writes (often the task) are not its inputs
        touched = []
    if touched:
        flags.append(Flag("reward_hacking", f"the final patch changes the checker's inputs: {', '.join(touched)}"))
    return flags


#: The reward component a suspicious-change gate records its findings in (``detail["findings"]``).
SUSPICIOUS_COMPONENT = "suspicious_changes"


def _findings(run: RunRecord, component: str) -> tuple[int, str]:
    """How many findings the reward ``component`` lists (``detail["findings"]``), and the first five joined."""
    findings = [str(f) for f in ((run.rewards.get(component) or {}).get("detail") or {}).get("findings") or []]
    return len(findings), "; ".join(findings[:5]) + (f"; and {len(findings) - 5} more" if len(findings) > 5 else "")


def _suspicious(run: RunRecord) -> list[Flag]:
    count, shown = _findings(run, SUSPICIOUS_COMPONENT)
    return [Flag("suspicious_code", f"the patch adds {count} suspicious construct(s): {shown}"[:600])] if count else []


#: The reward component that lists the changed expectations a reward credited (``detail["findings"]``).
CHANGED_COMPONENT = "changed_expectations"


def _changed_expectation(run: RunRecord) -> list[Flag]:
    count, shown = _findings(run, CHANGED_COMPONENT)
    return [Flag("changed_expectation", f"the reward credits {count} changed expectation(s) of existing tests: {shown}"[:600])] if count else []


_DIGITS = re.compile(r"\d+")


def trajectory_signature(run: RunRecord) -> str:
    """SHA-256 of the task key, each tool call (name, canonical arguments) and each observation
    with digit runs masked and whitespace collapsed (see the module docstring)."""

    def canonical(arguments: str) -> str:
        try:
            return json.dumps(json.loads(arguments), sort_keys=True)
        except (json.JSONDecodeError, TypeError):
            return arguments or ""

    h = hashlib.sha256(json.dumps(run.task_key).encode())
    for call in run.tool_calls:
        observation = " ".join(_DIGITS.sub("#", call["output"] or "").split())
        h.update(json.dumps([call["tool"], canonical(call["arguments"]), observation]).encode())
    return h.hexdigest()


def _duplicates(runs: list[RunRecord]) -> dict[str, list[Flag]]:
    first: dict[str, str] = {}
    out: dict[str, list[Flag]] = {}
    for run in sorted(runs, key=lambda r: r.run_id):  # ids sort by start time: keep the oldest
        if not run.tool_calls:
            continue  # nothing happened: not a trajectory to deduplicate (other gates judge it)
        sig = trajectory_signature(run)
        if sig in first:
            out[run.run_id] = [Flag("near_duplicate", f"same task, tool calls and observations as run {first[sig]}")]
        else:
            first[sig] = run.run_id
    return out


def _baseline(run: RunRecord) -> dict[str, str]:
    """The set-up test run's outcomes, as the reward recorded them (``before`` in a component's detail)."""
    for component in run.rewards.values():
        before = (component.get("detail") or {}).get("before")
        if isinstance(before, dict) and before:
            return before
    return {}


def _rerun_disagrees(run: RunRecord) -> list[Flag]:
    """The set-up's second run (``before_rerun``, when set-up ran the tests twice) or a test run
    before any file-changing call, compared with the set-up run on the same tests."""
    before = _baseline(run)
    if not before:
        return []
    for component in run.rewards.values():
        again = (component.get("detail") or {}).get("before_rerun")
        if isinstance(again, dict):
            differ = sorted(t for t in set(before) | set(again) if before.get(t) != again.get(t))
            if differ:
                shown = ", ".join(f"{t}: {before.get(t, 'absent')} then {again.get(t, 'absent')}" for t in differ[:3])
                return [Flag("nondeterministic_environment", f"set-up ran the tests twice on the starting files and they disagreed ({shown})")]
    for call in run.tool_calls:
        tests = (call["data"] or {}).get("tests")
        if isinstance(tests, dict) and tests and not call["is_error"]:
            differ = sorted(t for t in tests if t in before and tests[t] != before[t])
            if differ:
                shown = ", ".join(f"{t}: {before[t]} then {tests[t]}" for t in differ[:3])
                return [Flag("nondeterministic_environment", f"the same tests on the starting files disagreed ({shown})")]
            return []
        if call["tool"] not in run.read_only_tools:
            return []  # files may have changed from here on: later test runs prove nothing
    return []


def _baselines_disagree(runs: list[RunRecord]) -> dict[str, list[Flag]]:
    groups: dict[tuple[str, str, str], list[RunRecord]] = defaultdict(list)
    for run in runs:
        if run.start_tree and _baseline(run):
            groups[(run.plugin, run.row.get("repo") or "", run.start_tree)].append(run)
    out: dict[str, list[Flag]] = {}
    for members in groups.values():
        reference = _baseline(members[0])
        for run in members[1:]:
            mine = _baseline(run)
            differ = sorted(t for t in set(reference) & set(mine) if reference[t] != mine[t])
            if differ:
                for r in (members[0], run):
                    out.setdefault(r.run_id, []).append(Flag(
                        "nondeterministic_environment",
                        f"set-up test runs of {members[0].run_id} and {run.run_id} on the same starting files disagree on {differ[0]}",
                    ))
    return out


def _blobs(folder: Path, *, final: bool) -> dict[str, str]:
    """``{path: blob hash}`` of a run's starting files (root commit) or final files (the tree the
    last save stored, ``core.workspace.last_saved_tree``; the index for older runs)."""
    if final:
        last = last_saved_tree(folder / "baseline.git")
        if last:
            listing, field_index = baseline_git(folder, "ls-tree", "-r", "-z", last) or "", 2
        else:  # a run stored before the last tree was recorded: its index lists the tree
            listing, field_index = baseline_git(folder, "ls-files", "-s", "-z") or "", 1
    else:
        root = root_commit(folder)
        listing, field_index = (baseline_git(folder, "ls-tree", "-r", "-z", root) or "") if root else "", 2
    entries = [e.split("\t", 1) for e in listing.split("\0") if "\t" in e]
    return {path: meta.split()[field_index] for meta, path in entries}


def _leaks(runs: list[RunRecord], runs_root: Path | None) -> dict[str, list[Flag]]:
    out: dict[str, list[Flag]] = {}
    if runs_root is not None:
        root = runs_root.resolve()
        for run in runs:
            repo = Path(run.row.get("repo") or "")
            if run.row.get("repo") and (repo.resolve() == root or root in repo.resolve().parents):
                out.setdefault(run.run_id, []).append(Flag("state_leak", f"started from {repo}, inside the run store (another run's files)"))
    by_task: dict[tuple[str, str], list[RunRecord]] = defaultdict(list)
    for run in runs:
        if run.start_tree:
            by_task[(run.plugin, run.instruction)].append(run)
    for members in by_task.values():
        if len({r.start_tree for r in members}) < 2:
            continue  # all started from the same files
        members = sorted(members, key=lambda r: r.run_id)
        starts = {r.run_id: _blobs(r.folder, final=False) for r in members}
        ends: dict[str, dict[str, str]] = {}
        for i, later in enumerate(members):
            for earlier in members[:i]:
                if earlier.start_tree == later.start_tree:
                    continue
                ended = ends.setdefault(earlier.run_id, _blobs(earlier.folder, final=True))
                carried = sorted(p for p, blob in starts[later.run_id].items()
                                 if starts[earlier.run_id].get(p) != blob and ended.get(p) == blob)
                if carried:
                    out.setdefault(later.run_id, []).append(Flag(
                        "state_leak", f"starts with the changes run {earlier.run_id} made to {', '.join(carried[:3])}: not a fresh attempt"))
                    break
    return out


def apply_gates(runs: list[RunRecord], runs_root: Path | None = None) -> GateReport:
    """Check every run against every gate.

    Args:
        runs: the runs to check (``core.export.source.load_run``).
        runs_root: the run store's folder (``core.runner.runs_dir()``), to tell a run that started
            inside another run's files; None skips that check.

    Returns:
        A ``GateReport`` with a (possibly empty) list of ``Flag`` per run id, in the given order.
    """
    report = GateReport(flags={r.run_id: [] for r in runs})
    for run in runs:
        for gate in (_infrastructure, _reward_hacking, _suspicious, _changed_expectation, _not_applicable, _instruction_unseen, _rerun_disagrees):
            report.flags[run.run_id] += gate(run)
    finished = [r for r in runs if r.row.get("status") == "finished"]
    for extra in (_duplicates(finished), _baselines_disagree(finished), _leaks(runs, runs_root)):
        for run_id, flags in extra.items():
            report.flags[run_id] += flags
    return report
