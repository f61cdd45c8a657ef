"""The end-of-episode test run, SWE-bench style: the starting files plus the patch, test files reset.

SWE-bench grades a model's patch by applying it to a clean checkout, then putting the task's
own test files in place, then running the tests (Jimenez et al., 2024, section 2.2). Here the
clean checkout is the run's start tree (``core.workspace.materialize``: every file the workspace
held at the start, installed packages and build outputs included, caches left out), and the
patch is the run's final diff, the same text a reviewer reads and ``agent apply`` applies. So
what the agent left in the workspace outside the patch (bytecode, pytest's rewrite caches,
edits to ignored files, nested ``.git`` folders) never reaches the grader.

Before the agent starts, ``save_original_tests`` copies every test file (``testing.test_files``)
into the run's scratch folder, which the agent's commands cannot write. At the end,
``grading_run`` builds the patched copy in scratch, writes the original test files back into
it, deletes test files the patch added (a new ``conftest.py`` could rewrite outcomes), and runs
the suite there in a fresh sandbox of the same kind, with bytecode caches redirected to an
empty folder. Once graded, the copies are removed (a Django-sized tree left 71 MB per grading);
the patch, the reports and the test outputs stay in ``runs/NNN-grading``. The workspace itself
is not touched.

Test files the patch adds or extends are the run's reproduction tests (``reproduction_run``):
they are run on the starting code and on the patch, whatever else failed at the start or when
the set-up run timed out (an edited file that defines no test, a helper such as a package's
``tests/__init__.py``, is run through the repository's test modules beside it, ``helper_users``);
edits of the existing tests are judged by ``plugins.coding.test_edits``
(only an edit that weakens a test is a fault). Files a test run created in the workspace and
nothing changed since (reports, artefacts, outputs: ``core.workspace.record_test_outputs``) are
not part of the patch.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from core.api import (
    Sandbox,
    UserError,
    changed_paths,
    diff_trees,
    make_parents,
    materialize,
    read_regular,
    remove_tree,
    sandbox_like,
    save_tree,
    start_files,
    write_new,
)
from plugins.coding.checker_inputs import checker_changes
from plugins.coding.environment import TestEnvironment, load_environment
from plugins.coding.reward import edited_test_files, file_digests
from plugins.coding.runner_reach import runner_reach
from plugins.coding.second_run import merge_second_runs, second_run, second_run_tests
from plugins.coding.test_edits import review_tests, test_qualname, unchanged_tests
from plugins.coding.testing import PYTEST_CONFIG_FILES, TestRun, new_run_dir, run_test_suite, test_files
from plugins.coding.verdict import verification_record

ORIGINAL_TESTS_DIR = "original_tests"
#: The set-up run's record in the run's scratch folder (``CodingPlugin._baseline`` writes it).
BASELINE_FILE = "baseline.json"


def failing_at_start(scratch: Path) -> set[str]:
    """Ids of the tests that failed or errored in the set-up run (``BASELINE_FILE``); empty when
    there is no record yet (set-up has not run) or it cannot be read."""
    try:
        outcomes = json.loads(read_regular(scratch / BASELINE_FILE)).get("outcomes") or {}
    except (OSError, ValueError, AttributeError):
        return set()
    return {t for t, o in outcomes.items() if o in ("failed", "error")}


def save_original_tests(workspace: Path, scratch: Path) -> list[str]:
    """Copy the repository's test files into ``scratch/original_tests``.

    Args:
        workspace: repository root before the episode.
        scratch: the run's scratch folder (read-only to the agent's commands).

    Returns:
        The saved paths, relative to the repository root.
    """
    saved = test_files(workspace)
    target = scratch / ORIGINAL_TESTS_DIR
    for rel in saved:
        source = workspace / rel
        if source.is_symlink() or not source.is_file():
            continue
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target / rel)
    return saved


def reset_tests(copy: Path, originals: Path, original_list: list[str], present: list[str] | None = None) -> dict[str, list[str]]:
    """Put the original test files back into ``copy`` and delete test files that were not there.

    Args:
        present: ``test_files(copy)`` when the caller has it already (else it is listed here).

    Returns:
        ``{"restored": [...], "removed": [...]}``: test files rewritten to their original
        content, and test files added during the episode that were deleted.
    """
    restored, removed = [], []
    for rel in original_list:
        saved = originals / rel
        if not saved.is_file():
            continue
        # The patch may have made a folder on the way a link to a host folder: Horizon, not
        # sandboxed, must never write or delete through it (make_parents replaces such links).
        target = make_parents(copy, rel)
        original = saved.read_bytes()
        if target.is_dir() and not target.is_symlink():
            remove_tree(target)  # a real folder: links inside are removed, never followed; any depth
        if target.is_symlink() or not target.is_file() or target.read_bytes() != original:
            write_new(target, original)  # removes a link or special file there, never follows it
            restored.append(rel)
    known = set(original_list)
    for rel in test_files(copy) if present is None else present:
        if rel not in known:
            make_parents(copy, rel).unlink(missing_ok=True)
            removed.append(rel)
    return {"restored": sorted(restored), "removed": sorted(removed)}


def put_hidden_tests(hidden: Path, copy: Path) -> list[str]:
    """Write every regular file under ``hidden`` into ``copy`` at the same relative path, replacing
    what is there (never writing through a link the patch made); return the paths, sorted.

    Raises:
        UserError: ``hidden`` is not a folder (the task's hidden tests are missing: re-materialise the task).
    """
    if not hidden.is_dir():
        raise UserError(f"the task's hidden tests {hidden} are missing; materialise the task again (agent eval fetches it)")
    written = []
    for path in sorted(hidden.rglob("*")):
        if path.is_file() and not path.is_symlink():
            rel = path.relative_to(hidden).as_posix()
            target = make_parents(copy, rel)
            if target.is_dir() and not target.is_symlink():
                remove_tree(target)
            write_new(target, path.read_bytes())
            written.append(rel)
    return written


@dataclass
class Graded:
    """The end-of-episode grading run.

    Attributes:
        run: the test run on the patched copy (None when the patch did not apply).
        reset: what ``reset_tests`` changed (``{"restored": [...], "removed": [...]}``).
        edited_tests: test files the patch changes, adds or deletes.
        checker_changes: why the patch changes the test runner's configuration or loading
            (``plugins.coding.checker_inputs``); empty when it does not.
        patch_sha256: SHA-256 of the graded patch's bytes (UTF-8, surrogate escapes kept), so
            the verdict names the exact text it judged.
        patch_error: why the patch did not apply to the starting files ("" when it did).
        verification: pytest runs: the verdict stream's problems and the second run's record
            (``plugins.coding.verdict.verification_record``); None for other frameworks.
        weakened: ``{test file: ["path:line: what", ...]}``: how the patch weakens existing tests
            (``plugins.coding.test_edits``); empty when it does not.
        changed: ``{test file: [record, ...]}``: the existing tests whose expectations the patch
            changes (``test_edits.review``); the reward decides from the runs whether each is credited.
        patch: the graded patch's text (``patch.diff``), for the checks that read it after grading
            (``plugins.coding.suspicious.with_suspicious_changes``).
    """

    run: TestRun | None
    reset: dict[str, list[str]] = field(default_factory=dict)
    edited_tests: list[str] = field(default_factory=list)
    checker_changes: list[str] = field(default_factory=list)
    patch_sha256: str = ""
    patch_error: str = ""
    reproduction: Reproduction | None = None
    verification: dict | None = None
    weakened: dict[str, list[str]] = field(default_factory=dict)
    changed: dict[str, list[dict]] = field(default_factory=dict)
    patch: str = ""


@dataclass
class Reproduction:
    """The run's own tests, run on the starting code and on the patch (see ``reproduction_run``).

    Attributes:
        files: the test files the patch adds or changes that were run (relative paths).
        before: ``{test id: outcome}`` on the starting code with only ``files`` changed.
        after: the same with the whole patch.
        trusted: False when either run's exit code contradicts its report.
        refused: why the files were not run ("" when they were).
        stream_problems: what the verdict stream of either run shows (``plugins.coding.verdict_stream``).
        second: the second run of the reproduction tests that pass with the patch (``second_run``).
        existing: ids in ``before`` of tests the repository had, kept exactly as they were (an
            extended file's other tests): their failures on the starting code are the
            repository's, not reproductions (``test_edits.unchanged_tests``), and the tests of
            ``users`` that failed in the set-up run.
        users: the unedited test modules run beside ``files`` because they use an edited helper
            (``helper_users``).
    """

    files: list[str]
    before: dict[str, str] = field(default_factory=dict)
    after: dict[str, str] = field(default_factory=dict)
    trusted: bool = True
    refused: str = ""
    stream_problems: list[str] = field(default_factory=list)
    second: dict | None = None
    existing: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)

    def record(self) -> dict:
        """The fields as a dict, for ``reward.grade(reproduction=...)`` and the stored verdict."""
        return {"files": self.files, "before": self.before, "after": self.after, "trusted": self.trusted, "refused": self.refused,
                "existing": self.existing, **({"users": self.users} if self.users else {})}


def reproduction_files(copy: Path, edited: list[str]) -> list[str]:
    """The test modules among ``edited`` that can serve as reproduction tests: regular ``.py``
    files in the patched ``copy`` (pytest configuration files such as ``conftest.py`` excluded: they
    are checker inputs, judged by ``checker_inputs``)."""
    found = []
    for rel in edited:
        path = copy / rel
        if rel.endswith(".py") and rel.rsplit("/", 1)[-1] not in PYTEST_CONFIG_FILES and path.is_file() and not path.is_symlink():
            found.append(rel)
    return found


#: At most this many of the repository's test modules are run with an edited helper (``helper_users``).
MAX_HELPER_USERS = 200


def _defines_tests(data: bytes) -> bool:
    """Whether a Python file defines a test pytest would collect: a module-level ``test*`` function,
    a ``Test*`` class, or a class derived from a ``...TestCase`` (unittest's way: ``CroniterTest(base.TestCase)``)."""
    try:
        tree = ast.parse(data.decode("utf-8", "replace"))
    except (SyntaxError, ValueError):
        return True  # cannot tell: run it as it is

    def base_name(node: ast.AST) -> str:
        return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""

    return any((isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test"))
               or (isinstance(n, ast.ClassDef) and (n.name.startswith("Test") or any(base_name(b).endswith("TestCase") for b in n.bases)))
               for n in tree.body)  # fmt: skip


def helper_users(copy: Path, files: list[str], original_list: list[str]) -> list[str]:
    """The repository's test modules that use an edited test helper: for each of ``files`` that
    defines no test itself (a package's ``tests/__init__.py`` holding mixins, a ``helpers.py``), the
    test modules (``test_*.py``, ``*_test.py``) the repository had at the start in its folder and
    below, unedited, so that a check added to the helper runs in the tests that inherit or call it.

    Returns:
        Sorted paths, at most ``MAX_HELPER_USERS``; empty when every file defines tests.
    """
    folders = [rel.rsplit("/", 1)[0] if "/" in rel else "" for rel in files if not _defines_tests(read_regular(copy / rel))]
    if not folders:
        return []
    edited = set(files)
    found = sorted(rel for rel in original_list if rel not in edited and rel.endswith(".py")
                   and re.match(r"^(test_.*|.*_test)\.py$", rel.rsplit("/", 1)[-1])
                   and any(not folder or rel.startswith(folder + "/") for folder in folders))  # fmt: skip
    return found[:MAX_HELPER_USERS]


def reproduction_run(sandbox: Sandbox, baseline: Path, copy: Path, folder: Path, files: list[str],
                     environment: TestEnvironment | None = None, originals: Path | None = None,
                     original_list: list[str] | None = None, patch: str = "", users: list[str] | None = None,
                     failing_before: set[str] | None = None) -> Reproduction:
    """Run the patch's test files on the starting files plus the patch and on the starting files
    alone, with only those test files changed in each, SWT-bench's check that a generated test
    reproduces the bug (fails without the fix, passes with it; Mündler et al., 2024). Every other
    test file is the original in both (a ``conftest.py`` the patch adds is not there to rewrite
    the outcomes).

    Args:
        sandbox: the episode's sandbox (its kind and limits are reused, each run in a fresh one).
        baseline: the run's git database (the start tree is rebuilt from it).
        copy: the starting files plus the whole patch, test files not yet reset (the test files are read from it).
        folder: the grading run's folder; ``reproduce/`` is made in it.
        files: ``reproduction_files``; may be empty.
        environment: the episode's test environment (``plugins.coding.environment``); None: the default.
        originals: the saved original test files (``ORIGINAL_TESTS_DIR``), to tell the tests an
            extended file already had (``Reproduction.existing``) and to reset the other test files;
            None: every test counts as the run's, and the patched side is ``copy`` as it is.
        original_list: the test files saved at the start (``save_original_tests``).
        patch: the graded patch (``copy`` is the start tree plus it), applied again for the patched side.
        users: unedited test modules run beside ``files`` (``helper_users``): their tests that
            failed in the set-up run (``failing_before``) are ``existing``, the repository's; the
            others (which passed there, or are new, from the helper) are the run's.
        failing_before: ids of the tests that failed or errored in the set-up run (``failing_at_start``).

    Returns:
        A ``Reproduction``; ``refused`` says why nothing ran (a file that reaches into pytest's
        reporting, ``plugins.coding.runner_reach``).
    """
    if not files:
        return Reproduction(files=[])  # nothing to run: the verdict says the patch adds no test
    contents = {rel: read_regular(copy / rel) for rel in files}
    reaching = {rel: why for rel, why in sorted((rel, runner_reach(data)) for rel, data in contents.items()) if why}
    if reaching:
        named = ", ".join(f"{rel} ({why})" for rel, why in reaching.items())
        return Reproduction(files=files, refused=f"{named} reach(es) into pytest's reporting "
                                                 "(hooks, reports or plugins), so its outcomes cannot be trusted")  # fmt: skip
    patched = copy
    if originals is not None:
        patched = folder / "reproduce" / "patched"
        materialize(baseline, patched, patch)
        reset_tests(patched, originals, original_list or [])
        for rel, data in contents.items():
            write_new(make_parents(patched, rel), data)
    users = list(users or [])
    run_files = [*files, *users]
    after = run_test_suite(sandbox_like(sandbox, patched, folder / "reproduce" / "after"), patched, folder / "reproduce" / "after", run_files,
                           environment=environment)  # fmt: skip
    start = folder / "reproduce" / "start"
    materialize(baseline, start, "")
    for rel, data in contents.items():
        write_new(make_parents(start, rel), data)  # never through a link the start tree holds
    before = run_test_suite(sandbox_like(sandbox, start, folder / "reproduce" / "before"), start, folder / "reproduce" / "before", run_files,
                            environment=environment)  # fmt: skip
    kept: dict[str, set[str]] = {}
    for rel, data in contents.items():
        if originals is not None and (originals / rel).is_file():
            kept[rel] = unchanged_tests(read_regular(originals / rel), data)
    used = set(users)
    existing = sorted(t for t in before.outcomes if test_qualname(t) in kept.get(t.split("::", 1)[0], set())
                      or (t.split("::", 1)[0] in used and t in (failing_before or set())))  # fmt: skip
    return Reproduction(files=files, before=before.outcomes, after=after.outcomes, users=users,
                        trusted=before.report_trusted and after.report_trusted, existing=existing,
                        stream_problems=[*before.stream_problems, *after.stream_problems])  # fmt: skip


def grading_run(sandbox: Sandbox, workspace: Path, baseline: Path, scratch: Path, original_list: list[str],
                original_digests: dict[str, str], *, reproduce: bool = False, hidden_tests: Path | None = None,
                targets: list[str] | None = None) -> Graded:  # fmt: skip
    """Run the whole suite on the starting files plus the run's patch, test files reset.

    Args:
        sandbox: the episode's sandbox (its kind and limits are reused).
        workspace: the workspace at the end of the episode (only its patch is taken).
        baseline: the run's git database (``core.workspace.snapshot``).
        scratch: the run's scratch folder holding ``original_tests``.
        original_list: the test files saved at the start (``save_original_tests``).
        original_digests: ``{test file: sha256}`` at the start (``reward.file_digests``).
        reproduce: also run the test modules the patch adds or changes as reproduction tests
            (``reproduction_run``; the caller asks unless the task declares its own fail-to-pass
            tests). Skipped when the patch changes the checker (the reward is 0 then anyway).
        hidden_tests: a folder of the task's own test files, at their paths in the repository,
            which the agent never saw (an evaluation's, kept out of the sandbox): written into the
            copy after the reset, in place of whatever is there, before the suite runs.
        targets: the tests whose passing earns the reward (``verdict.verdict_targets``); those
            that pass under pytest are run a second way (``plugins.coding.second_run``), as are
            the reproduction tests that fail on the starting code and pass with the patch.

    Returns:
        A ``Graded`` record.
    """
    tree = save_tree(workspace, baseline, patch=True)  # what a test run wrote left out, as in patch.diff
    patch = diff_trees(baseline, "HEAD^{tree}", tree)
    digest = hashlib.sha256(patch.encode("utf-8", "surrogateescape")).hexdigest()
    folder = new_run_dir(scratch, "grading")
    (folder / "patch.diff").write_text(patch, errors="surrogateescape")
    copy = folder / "workspace"
    try:
        return _grade_copy(sandbox, baseline, scratch, folder, copy, tree, patch, digest, original_list, original_digests,
                           reproduce=reproduce, hidden_tests=hidden_tests, targets=targets)  # fmt: skip
    finally:  # graded: the copies (the start tree, whole) go; the patch, reports and outputs in ``folder`` stay
        for made in (copy, folder / "reproduce" / "patched", folder / "reproduce" / "start"):
            remove_tree(made)


def _grade_copy(sandbox: Sandbox, baseline: Path, scratch: Path, folder: Path, copy: Path, tree: str, patch: str, digest: str,
                original_list: list[str], original_digests: dict[str, str], *, reproduce: bool, hidden_tests: Path | None,
                targets: list[str] | None) -> Graded:  # fmt: skip
    """``grading_run``'s work on the patched copy ``copy`` (made here, in ``folder``)."""
    try:
        materialize(baseline, copy, patch)
    except UserError as exc:
        return Graded(run=None, patch_sha256=digest, patch_error=str(exc), patch=patch)
    tests_now = test_files(copy)
    edited = edited_test_files(original_digests, file_digests(copy, tests_now))
    changed = changed_paths(baseline, "HEAD^{tree}", tree)
    reasons = checker_changes(start_files(baseline, changed), copy, changed, set(original_list) | set(tests_now))
    environment = load_environment(scratch)
    weak, changed_tests = review_tests(scratch / ORIGINAL_TESTS_DIR, copy, edited, original_list)
    reproduced = None
    if reproduce and not reasons:
        files = reproduction_files(copy, edited)
        reproduced = reproduction_run(sandbox, baseline, copy, folder, files, environment, originals=scratch / ORIGINAL_TESTS_DIR,
                                      original_list=original_list, patch=patch, users=helper_users(copy, files, original_list),
                                      failing_before=failing_at_start(scratch))  # fmt: skip
    if reproduced is not None and reproduced.after and not reproduced.refused:  # before the reset removes them
        failing = [t for t, o in reproduced.before.items() if o in ("failed", "error")]
        reproduced.second = second_run(sandbox, copy, folder / "second-reproduce", second_run_tests(failing, reproduced.after),
                                       environment).record()  # fmt: skip
    reset = reset_tests(copy, scratch / ORIGINAL_TESTS_DIR, original_list, present=tests_now)
    if hidden_tests is not None:
        reset["hidden"] = put_hidden_tests(hidden_tests, copy)
    grading_scratch = folder / "scratch"
    # The episode's test environment (saved in its scratch at set-up), with the copy's own source roots.
    run = run_test_suite(sandbox_like(sandbox, copy, grading_scratch), copy, grading_scratch, environment=environment)
    verification = None
    if run.framework == "pytest":
        second = second_run(sandbox, copy, folder / "second", second_run_tests(targets or [], run.outcomes), environment) \
            if targets is not None and not reasons else None
        verification = verification_record(
            [*run.stream_problems, *(reproduced.stream_problems if reproduced else [])],
            merge_second_runs(second.record() if second else None, reproduced.second if reproduced else None))
    return Graded(run=run, reset=reset, edited_tests=edited, checker_changes=reasons, patch_sha256=digest, reproduction=reproduced,
                  verification=verification, weakened=weak, changed=changed_tests, patch=patch)  # fmt: skip
