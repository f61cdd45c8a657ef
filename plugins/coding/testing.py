"""Detecting and running a repository's tests in the sandbox, with per-test outcomes.

The ``run_tests`` tool and the reward (fail-to-pass / pass-to-pass at the start and end of an
episode) both call ``run_test_suite``. Outcomes are read from a JUnit XML report written under
the scratch folder, never from console text, and nothing is built inside the workspace:

* pytest: ``python -c PYTEST_LAUNCHER -p no:cacheprovider --junitxml=<scratch>/... -o junit_family=xunit1``
  with ``PYTHONDONTWRITEBYTECODE=1``, ``--basetemp`` under scratch and ``--rootdir=<workspace>``.
  Test ids are pytest node ids relative to the workspace (``tests/test_service.py::test_x``,
  ``tests/test_a.py::TestK::test_y[param]``).
* JUnit 5 (no Maven: no network): ``javac -d <scratch>/classes -cp <console launcher jar>`` over
  the main and test sources, then the JUnit Platform console launcher 1.9 (Debian's
  ``junit5``; its options are flat, with no ``execute`` subcommand) with ``--scan-class-path``
  and ``--reports-dir``. Ids are ``com.example.users.UserServiceTest#methodName`` (parameters kept
  when a method has any: ``#len(String)[1]``; nested classes as ``Outer$Inner``).

Outcomes are ``passed``, ``failed``, ``error`` or ``skipped``. ``failed`` means the test ran and
did not pass; for JUnit that includes the XML's ``<error>`` (any exception other than an
assertion), because the JUnit Platform itself only knows success, failure and abort, and pytest
too reports an exception raised in a test body as a failure. ``error`` is pytest's error in a
fixture's setup or teardown, or a module that failed to import (id: the module's path).

Time limit. A test run (build included) is stopped after the sandbox's ``timeout_s`` (120 s by
default, ``SandboxLimits``); ``$HORIZON_TEST_TIMEOUT_S`` (seconds) sets it for every test run
that is not given its own limits: the run_tests tool, the baseline before an episode and the
verification after it. A suite with a test that hangs then costs that long, not 120 s; the run
reports ``timed_out`` (pytest and the JUnit launcher write their reports at the end, so a
killed run has no outcomes).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from core.api import ProcessResult, Sandbox, SandboxLimits, ToolError, read_regular, write_new
from plugins.coding.environment import TestEnvironment, horizon_environment, load_environment
from plugins.coding.search import iter_files, shorten

log = logging.getLogger(__name__)

Framework = Literal["pytest", "junit", "node", "jest", "go"]
Outcome = Literal["passed", "failed", "error", "skipped"]

#: Characters of console output kept in ``TestRun.output`` (head and tail); the rest is in the
#: run folder's ``output.txt``.
OUTPUT_HEAD_CHARS = 4000
OUTPUT_TAIL_CHARS = 12000

_JUNIT_JAR_GLOBS = ("junit-platform-console-standalone.jar", "junit-platform-console-standalone-*.jar")
_JUNIT_JAR_DIRS = (Path("/usr/share/java"),)
_PYTEST_CONFIG_MARKERS = {
    "pytest.ini": None,
    "pyproject.toml": "[tool.pytest",
    "setup.cfg": "[tool:pytest]",
    "tox.ini": "[pytest]",
}
NO_TESTS_MESSAGE = (
    "no tests found: expected pytest or unittest tests (test*.py / *_test.py or a pytest config), "
    "JUnit tests (src/test/java or *Test.java), JavaScript/TypeScript tests (*.test.js, test/*.js, "
    "__tests__/; node --test, or Jest when installed) or Go tests (*_test.go)"
)
_FRAMEWORK_NOISE = ("java.", "jdk.", "sun.", "org.junit.", "org.opentest4j.", "org.apiguardian.")


class TestRun(BaseModel):
    """The outcome of one test-suite run.

    Attributes:
        framework: ``pytest`` or ``junit``; ``None`` when the repository has no tests (then
            nothing ran and ``exit_code`` is -1).
        outcomes: ``{test_id: "passed" | "failed" | "error" | "skipped"}``, one entry per test that
            the report lists; empty when nothing ran (build failure, timeout, crash).
        messages: ``{test_id: text}`` for tests not passed: the failure message and the most
            useful lines of its traceback.
        exit_code: exit status of the test command (of ``javac`` when the build failed).
        build_failed: the suite could not be built or collected, so some or all outcomes are
            missing: a ``javac`` error, or a pytest module that failed to import.
        timed_out: the sandbox's time limit stopped the run.
        output: the console output (compiler errors when the build failed), head and tail kept.
        duration_s: wall-clock seconds for the whole run, build included.
        run_dir: the scratch folder holding the report and ``output.txt``.
        stream_problems: pytest runs: why the outcomes that reached the grader as the tests ran
            (``plugins.coding.verdict_stream``) cannot be believed; empty when nothing was unusual.
        not_run: pytest runs the time limit stopped: how many collected tests had no outcome yet
            (``outcomes`` then holds those that ran, as they reached the grader); 0 otherwise.
        budget_s: the time limit the run had, in seconds (0: the sandbox's own, not recorded).
        budget_reason: why that limit (``testing_scale.suite_budget``); "" for a fixed one.
        parallel: how the run was spread over processes: ``"pytest-xdist -n 2"``, ``"2 shards"``;
            "" for one process.
    """

    __test__ = False  # not a pytest test class

    framework: Framework | None
    outcomes: dict[str, Outcome] = Field(default_factory=dict)
    messages: dict[str, str] = Field(default_factory=dict)
    exit_code: int
    build_failed: bool = False
    timed_out: bool = False
    output: str = ""
    duration_s: float = 0.0
    run_dir: str = ""
    stream_problems: list[str] = Field(default_factory=list)
    not_run: int = 0
    budget_s: float = 0.0
    budget_reason: str = ""
    parallel: str = ""

    @property
    def report_trusted(self) -> bool:
        """Whether the exit code agrees with the report: 0 when nothing failed, non-zero when something did.

        Every runner here exits 0 exactly when no test failed (pytest, the JUnit console
        launcher, ``node --test``, Jest, ``go test``). A report of only passes from a command
        that exited non-zero (or failures from one that exited 0) was written or changed by
        something other than the test runner, e.g. code under test printing or planting a
        report, and is not believed. A run that timed out, or reported nothing, is trusted as
        what it is (no outcomes).
        """
        if self.timed_out or not self.outcomes:
            return True
        failing = any(o in ("failed", "error") for o in self.outcomes.values())
        return failing if self.exit_code != 0 else not failing

    def count(self, outcome: Outcome) -> int:
        """How many tests had ``outcome``."""
        return sum(1 for value in self.outcomes.values() if value == outcome)

    @property
    def not_passed(self) -> list[str]:
        """Ids of tests that failed or errored, sorted."""
        return sorted(t for t, o in self.outcomes.items() if o in ("failed", "error"))


# --------------------------------------------------------------------------- detection


#: pytest's ``python_files`` when the repository has no pytest config: pytest's own defaults plus
#: unittest's discovery pattern ``test*.py``, so unittest-style suites are collected by pytest
#: (which runs ``unittest.TestCase`` classes natively and reports each test).
UNITTEST_FILES = "test_*.py *_test.py test*.py"
#: JavaScript/TypeScript test files: Node's ``--test`` defaults and Jest's (``__tests__``, ``.spec``).
_JS_TEST = re.compile(
    r"(^|/)(__tests__|test|tests)/.*\.[cm]?[jt]sx?$|(^|/)test\.[cm]?[jt]sx?$|(^|/)test-[^/]*\.[cm]?[jt]sx?$"
    r"|[._-](test|spec)\.[cm]?[jt]sx?$"
)

#: Files that exist only to configure pytest: editing one can fake a pass, so they count as test
#: files. Files that configure pytest among other things (``pyproject.toml``, ``setup.cfg``,
#: ``tox.ini``) are judged by their pytest sections (``plugins.coding.checker_inputs``).
PYTEST_CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "conftest.py")


def _is_python_test(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    if name in PYTEST_CONFIG_FILES:
        return True
    if not name.endswith(".py"):
        return False
    parts = rel.split("/")[:-1]
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or any(part in ("tests", "test") for part in parts)
    )


def _is_java_test(rel: str) -> bool:
    if ("/" + rel).find("/src/test/") != -1:
        return True
    name = rel.rsplit("/", 1)[-1]
    if not name.endswith(".java"):
        return False
    stem = name[: -len(".java")]
    return stem.startswith("Test") or stem.endswith(("Test", "Tests", "IT"))


def _is_js_test(rel: str) -> bool:
    return "node_modules/" not in rel and bool(_JS_TEST.search(rel))


def _is_go_test(rel: str) -> bool:
    return rel.endswith("_test.go")


def test_files(workspace: Path) -> list[str]:
    """List the repository's test source files, so edits to tests can be told apart.

    Python: ``test_*.py``, ``*_test.py``, ``conftest.py``, any ``.py`` under a ``tests`` or
    ``test`` folder, and the files the project's pytest configuration collects by name
    (``python_files``, ``plugins.coding.pytest_files``). Java: every file under a ``src/test/`` folder (resources included) and
    ``Test*.java``, ``*Test.java``, ``*Tests.java``, ``*IT.java`` elsewhere. JavaScript and
    TypeScript: ``*.test.js``, ``*.spec.ts``, ``*_test.js``, ``test-*.js``, and any script under a
    ``test``, ``tests`` or ``__tests__`` folder. Go: ``*_test.go``. Files ignored by
    ``.gitignore`` are left out.

    Args:
        workspace: repository root.

    Returns:
        Sorted POSIX paths relative to ``workspace``.
    """
    from plugins.coding.pytest_files import configured_test_patterns, matches

    root = workspace.resolve()
    configured = configured_test_patterns(root)
    found = []
    for path in iter_files(root, gitignore=False):
        rel = path.relative_to(root).as_posix()
        if (_is_python_test(rel) or _is_java_test(rel) or _is_js_test(rel) or _is_go_test(rel)
                or (configured and rel.endswith(".py") and matches(rel, configured))):  # fmt: skip
            found.append(rel)
    return sorted(found)


test_files.__test__ = False  # type: ignore[attr-defined]  # not a pytest test function


def _has_pytest_config(root: Path) -> bool:
    if (root / "conftest.py").is_file():
        return True
    for name, marker in _PYTEST_CONFIG_MARKERS.items():
        path = root / name
        if not path.is_file():
            continue
        if marker is None:
            return True
        try:
            if marker in path.read_text(encoding="utf-8", errors="replace"):
                return True
        except OSError:
            continue
    return False


def detect_framework(workspace: Path, node_modules: Path | None = None) -> Framework | None:
    """Tell which test framework a repository uses.

    ``junit`` when there is a ``src/test/java`` folder or ``*Test.java``-style files; ``pytest``
    when there are ``test*.py`` / ``*_test.py`` files (unittest-style suites included: pytest
    runs them) or a pytest configuration; ``jest`` for JavaScript/TypeScript tests when the
    repository configures Jest and has it installed in ``node_modules``, else ``node`` (``node
    --test``); ``go`` for ``*_test.go`` files. When several apply, the one with the most test
    files wins (ties: pytest, junit, node/jest, go).

    Args:
        workspace: repository root.
        node_modules: the installed packages set-up chose (``TestEnvironment.node_modules``),
            default the workspace's own ``node_modules``.

    Returns:
        The framework, or ``None`` when no tests were found.
    """
    from plugins.coding.testing_node import jest_binary, uses_jest

    root = workspace.resolve()
    counts = {"pytest": 0, "junit": 0, "node": 0, "go": 0}
    for rel in test_files(root):
        name = rel.rsplit("/", 1)[-1]
        if name.endswith(".py") and name.startswith("test") or name.endswith("_test.py"):
            counts["pytest"] += 1
        elif name.endswith(".java"):
            counts["junit"] += 1
        elif _is_js_test(rel):
            counts["node"] += 1
        elif _is_go_test(rel):
            counts["go"] += 1
    if not counts["junit"] and any(True for _ in _maven_roots(root, "test")):
        counts["junit"] = 1
    if not counts["pytest"] and _has_pytest_config(root):
        counts["pytest"] = 1
    best = max(counts, key=lambda name: counts[name])  # the first of equals wins: dicts keep order
    if not counts[best]:
        return None
    if best == "node" and uses_jest(root) and jest_binary(root, node_modules) is not None:
        return "jest"
    return best  # type: ignore[return-value]


# --------------------------------------------------------------------------- helpers


TEST_TIMEOUT_ENV = "HORIZON_TEST_TIMEOUT_S"


def default_limits(sandbox: Sandbox) -> SandboxLimits | None:
    """The limits of a test run not given its own: the sandbox's, with ``timeout_s`` from
    ``$HORIZON_TEST_TIMEOUT_S`` when that is set (None: the sandbox's own, unchanged).

    A value that is not a positive number of seconds is ignored, with a warning.
    """
    value = os.environ.get(TEST_TIMEOUT_ENV, "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < float("inf"):
        log.warning("%s=%r is not a positive number of seconds; using the sandbox's limit (%g s)",
                    TEST_TIMEOUT_ENV, value, sandbox.limits.timeout_s)
        return None
    return sandbox.limits.model_copy(update={"timeout_s": seconds})


#: How pytest is started: like ``python -m pytest`` (the working folder first on ``sys.path``, so
#: the repository's own packages import), except that pytest itself is imported before the
#: working folder and the ``PYTHONPATH`` folders (the repository's source roots,
#: ``plugins.coding.environment``) are on ``sys.path``. With ``-m`` a ``pytest.py`` (or
#: ``_pytest/``) in the repository would be imported in its place and could report every test as passed.
PYTEST_LAUNCHER = (
    "import os, sys\n"
    "here = os.getcwd()\n"
    "ours = {here, *(os.path.abspath(p) for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p)}\n"
    "kept = sys.path[:]\n"
    "sys.path[:] = [p for p in kept if os.path.abspath(p or here) not in ours]\n"
    "import pytest\n"
    "sys.path[:] = [here, *(p for p in kept if p not in ('', here))]\n"
    "sys.exit(pytest.main())\n"
)


def pytest_command(python: str | None = None) -> list[str]:
    """The argv prefix that starts pytest with ``python`` (default ``default_python()``) safely
    from inside the code under test (``PYTEST_LAUNCHER``); pytest's own arguments follow."""
    return [python or default_python(), "-c", PYTEST_LAUNCHER]


def default_python() -> str:
    """The interpreter that runs pytest: ``$HORIZON_TEST_PYTHON``, else Horizon's own."""
    return os.environ.get("HORIZON_TEST_PYTHON") or sys.executable


def find_junit_launcher() -> Path | None:
    """The JUnit Platform console-launcher jar: ``$HORIZON_JUNIT_JAR``, else Debian's in ``/usr/share/java``."""
    configured = os.environ.get("HORIZON_JUNIT_JAR")
    if configured:
        return Path(configured) if Path(configured).is_file() else None
    for folder in _JUNIT_JAR_DIRS:
        for pattern in _JUNIT_JAR_GLOBS:
            matches = sorted(folder.glob(pattern))
            if matches:
                return matches[-1]
    return None


def java_tool(name: str) -> str | None:
    """Absolute path of a JDK program (``java``, ``javac``): ``$JAVA_HOME/bin`` first, then ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / name).is_file():
        return str(Path(home) / "bin" / name)
    found = shutil.which(name)
    return str(Path(found).resolve()) if found else None


def sandbox_env(run_dir: Path) -> dict[str, str]:
    """Extra environment for tool processes: UTF-8, and no bytecode files read from or written to the workspace.

    The sandbox supplies PATH, HOME and TMPDIR; programs are started by absolute path anyway.
    Also makes ``run_dir/tmp`` for programs told to use it (pytest's basetemp, java.io.tmpdir).
    """
    (run_dir / "tmp").mkdir(parents=True, exist_ok=True)
    # Bytecode is read from and written to a fresh folder of this run only: a forged
    # ``__pycache__/*.pyc`` (or pytest's ``*-pytest-*.pyc`` rewrite cache) in the repository is never loaded.
    return {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
            "PYTHONPYCACHEPREFIX": str(run_dir / "tmp" / "pycache")}


def new_run_dir(scratch: Path, label: str) -> Path:
    """Make a fresh numbered folder ``<scratch>/runs/NNN-label`` for one command's files.

    The sandboxed commands can write ``scratch/runs`` (``SCRATCH_WRITABLE``), so they may fill it
    with entries or plant the next names. The next number is kept in ``scratch/runs.next``, which
    they cannot write (the folder is counted once, for a run from before the counter); a name that
    is taken is skipped, and after a few taken names a random suffix makes the name unguessable.
    So the cost does not grow with the folder's size, and no number of planted entries makes a
    call fail: only the file system can (a full disk, a quota, a folder at its link limit).

    Args:
        scratch: the run's scratch folder.
        label: what the folder is for (``pytest``, ``junit``, ``static``, ``grading``).

    Returns:
        The new, empty folder; it did not exist before this call, so nothing in it was planted.

    Raises:
        ToolError: the folder cannot be made; the message says why (the loop shows it to the
            model as an observation).
    """
    import errno
    import secrets

    base = scratch / "runs"
    counter = scratch / "runs.next"  # beside runs/, so only Horizon writes it (scratch is read-only inside)
    try:
        base.mkdir(parents=True, exist_ok=True)
        try:
            number = max(1, int(read_regular(counter).decode("ascii").strip()))
        except (OSError, ValueError):  # no counter yet (a new run, or one from before it): count once
            with os.scandir(base) as entries:
                number = sum(1 for _ in entries) + 1
        for attempt in range(20):
            name = f"{number:03d}-{label}" if attempt < 3 else f"{number:03d}-{label}-{secrets.token_hex(4)}"
            try:
                (base / name).mkdir()
            except FileExistsError:  # an earlier call's folder, or one a command planted
                number += 1
                continue
            try:
                write_new(counter, f"{number + 1}\n")
            except OSError:  # only a hint: the next call skips the names that are taken
                pass
            return base / name
        raise OSError(errno.EEXIST, "20 names in a row are taken")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ToolError(
            f"cannot make a folder for this command's files in {base} ({reason}); nothing was run. "
            "If a command filled the disk or that folder, delete what it wrote there and try again"
        ) from None


def clip_output(text: str, head: int = OUTPUT_HEAD_CHARS, tail: int = OUTPUT_TAIL_CHARS) -> str:
    """Keep the first ``head`` and last ``tail`` characters of ``text``, marking the cut."""
    if len(text) <= head + tail:
        return text
    return f"{text[:head]}\n… [{len(text) - head - tail} characters cut] …\n{text[-tail:]}"


def _maven_roots(root: Path, kind: str) -> list[Path]:
    """Folders ``…/src/<kind>/java`` in the repository (``kind``: main or test)."""
    found = []
    stack = [root]  # a stack, not os.walk (recursive in Python 3.11): a 1,500-deep tree is fine
    while stack:
        path = stack.pop()
        if path.name == "java" and path.parent.name == kind and path.parent.parent.name == "src":
            found.append(path)
            continue
        try:
            children = sorted((e.name for e in os.scandir(path) if e.is_dir(follow_symlinks=False)), reverse=True)
        except OSError:
            continue
        stack += [path / d for d in children if not d.startswith(".") and d not in ("target", "build", "node_modules")]
    return sorted(found)


def java_sources(workspace: Path) -> tuple[list[str], list[str]]:
    """Java files to compile, split into (main, test), as POSIX paths relative to the workspace.

    With a Maven layout only ``src/main/java`` and ``src/test/java`` trees (any module) count;
    otherwise every ``.java`` file not ignored by ``.gitignore``, split by ``_is_java_test``.
    """
    root = workspace.resolve()
    main_roots, test_roots = _maven_roots(root, "main"), _maven_roots(root, "test")
    main: list[str] = []
    test: list[str] = []
    if main_roots or test_roots:
        for bucket, roots in ((main, main_roots), (test, test_roots)):
            for source_root in roots:
                bucket += [p.relative_to(root).as_posix() for p in iter_files(root, source_root, suffixes=(".java",))]
    else:
        for path in iter_files(root, suffixes=(".java",)):
            rel = path.relative_to(root).as_posix()
            (test if _is_java_test(rel) else main).append(rel)
    return main, test


def java_classpath_extras(workspace: Path) -> list[str]:
    """Resource folders (``src/*/resources``) and ``.jar`` files of the repository, absolute."""
    root = workspace.resolve()
    extras = [
        str(p) for kind in ("main", "test") for p in (r.parent / "resources" for r in _maven_roots(root, kind)) if p.is_dir()
    ]
    extras += [str(p) for p in iter_files(root, suffixes=(".jar",))]
    return extras


# --------------------------------------------------------------------------- report parsing


def _pytest_id(workspace: Path, case: ET.Element) -> str:
    name = case.get("name", "")
    classname = case.get("classname", "")
    file = case.get("file")
    if not classname:  # collection error: name is the module, dotted
        return _dotted_to_path(workspace, name.split(".")) or name
    parts = classname.split(".")
    if file:
        module = file[:-3].replace("/", ".") if file.endswith(".py") else file
        if classname == module or classname.startswith(module + "."):
            rest = classname[len(module) + 1 :].split(".") if classname != module else []
            return "::".join([file, *[p for p in rest if p], name])
    for cut in range(len(parts), 0, -1):
        path = _dotted_to_path(workspace, parts[:cut])
        if path:
            return "::".join([path, *parts[cut:], name])
    return f"{classname}::{name}"


def _dotted_to_path(workspace: Path, parts: list[str]) -> str | None:
    candidate = "/".join(parts) + ".py"
    return candidate if (workspace / candidate).is_file() else None


def _tail_lines(text: str, count: int) -> list[str]:
    lines = [line.rstrip() for line in text.strip("\n").splitlines() if line.strip()]
    return lines[-count:]


def parse_pytest_report(workspace: Path, report: Path) -> tuple[dict[str, Outcome], dict[str, str], bool]:
    """Read a pytest JUnit XML report.

    Returns:
        ``(outcomes, messages, collection_failed)``; ``collection_failed`` is True when some
        module could not be collected.
    """
    outcomes: dict[str, Outcome] = {}
    messages: dict[str, str] = {}
    collection_failed = False
    rank = {"passed": 0, "skipped": 1, "error": 2, "failed": 3}
    for case in ET.fromstring(read_regular(report)).iter("testcase"):
        test_id = _pytest_id(workspace, case)
        outcome: Outcome = "passed"
        detail = None
        for child in case:
            kind = {"failure": "failed", "error": "error", "skipped": "skipped"}.get(child.tag)
            if kind is None:
                continue
            if rank[kind] > rank[outcome]:
                outcome, detail = kind, child  # type: ignore[assignment]
        if not case.get("classname") and outcome == "error":
            collection_failed = True
        previous = outcomes.get(test_id)
        if previous is not None and rank[previous] >= rank[outcome]:
            continue
        outcomes[test_id] = outcome
        if detail is not None and outcome != "skipped":
            head = (detail.get("message") or "").strip().splitlines()[:2]
            messages[test_id] = "\n".join([*head, *_tail_lines(detail.text or "", 8)])
    return outcomes, messages, collection_failed


def _junit_id(case: ET.Element) -> str:
    name = case.get("name", "")
    name = name.removesuffix("()")
    return f"{case.get('classname', '')}#{name}"


def _java_message(detail: ET.Element) -> str:
    kind = detail.get("type", "")
    message = (detail.get("message") or "").strip()
    first = f"{kind}: {message}" if kind and message else (kind or message)
    frames = []
    for line in (detail.text or "").splitlines():
        line = line.strip()
        if line.startswith("at "):
            frame = line[3:]
            if not frame.startswith(_FRAMEWORK_NOISE):
                frames.append("  " + line)
        elif line.startswith("Caused by:"):
            frames.append(line)
        if len(frames) >= 5:
            break
    return "\n".join([first.splitlines()[0] if first else "(no message)", *frames])


def parse_junit_reports(reports_dir: Path) -> tuple[dict[str, Outcome], dict[str, str]]:
    """Read the console launcher's ``TEST-*.xml`` reports (``TEST-junit-jupiter.xml`` and others).

    Returns:
        ``(outcomes, messages)``; ``<failure>`` and ``<error>`` both count as ``failed``.
    """
    outcomes: dict[str, Outcome] = {}
    messages: dict[str, str] = {}
    for report in sorted(reports_dir.glob("TEST-*.xml")):
        for case in ET.fromstring(read_regular(report)).iter("testcase"):
            test_id = _junit_id(case)
            outcome: Outcome = "passed"
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "failed"
                    messages[test_id] = _java_message(child)
                    break
                if child.tag == "skipped" and outcome == "passed":
                    outcome = "skipped"
            outcomes[test_id] = outcome
    return outcomes, messages


# --------------------------------------------------------------------------- running


def _check_selectors(tests: list[str]) -> list[str]:
    cleaned = [t.strip() for t in tests if t.strip()]
    for item in cleaned:
        if item.startswith("-"):
            raise ToolError(f"test selector {item!r} looks like an option; give test ids or paths, not flags")
    return cleaned


def pytest_argv(run_dir: Path, rootdir: Path, targets: list[str], *, python: str | None = None, extra: tuple[str, ...] = (),
                stream: tuple[int, Path] | None = None) -> list[str]:  # fmt: skip
    """The pytest command Horizon runs: started safely (``pytest_command``), a JUnit XML report at
    ``run_dir/report.xml``, no cache, collection errors reported per module, short tracebacks,
    then ``extra`` options (a ``--tb`` there replaces the short style) and the ``targets`` (test ids
    or paths). With ``stream`` (the pipe's descriptor and the plugin's path,
    ``plugins.coding.verdict_stream``) each outcome is also written to the pipe."""
    if stream is not None:
        from plugins.coding.verdict_stream import STREAM_LAUNCHER

        start = [python or default_python(), "-c", STREAM_LAUNCHER, str(stream[0]), str(stream[1])]
    else:
        start = pytest_command(python)
    return [
        *start,
        "-p", "no:cacheprovider",
        "-p", "no:langsmith",  # langsmith's plugin costs 1-2 s at start-up and is never needed here
        "--continue-on-collection-errors",  # one broken module must not hide the others' outcomes
        "--tb=short",  # before ``extra``: a later --tb there wins
        *extra,
        f"--junitxml={run_dir / 'report.xml'}",
        "-o", "junit_family=xunit1",
        f"--basetemp={run_dir / 'tmp' / 'pytest'}",
        f"--rootdir={rootdir}",
        "--color=no", "-q", "-rN",
        *targets,
    ]  # fmt: skip


def read_pytest_run(result: ProcessResult, run_dir: Path, rootdir: Path, stream: tuple[bytes, bool] | None = None) -> TestRun:
    """A finished pytest command (``pytest_argv``) as a ``TestRun``: its output saved to
    ``run_dir/output.txt`` and the outcomes read from ``run_dir/report.xml`` (ids relative to
    ``rootdir``); a report that cannot be read is said so in the output. With ``stream`` (the
    verdict stream's bytes and whether it overflowed) the outcomes are the stream's, and
    ``stream_problems`` says where the stream, the report and the exit code disagree."""
    output = result.stdout + (("\n" + result.stderr) if result.stderr.strip() else "")
    write_new(run_dir / "output.txt", output)  # code under test may have planted a link
    run = TestRun(framework="pytest", exit_code=result.exit_code, timed_out=result.timed_out,
                  output=clip_output(output), run_dir=str(run_dir))  # fmt: skip
    report = run_dir / "report.xml"
    if report.is_file():
        try:
            run.outcomes, run.messages, run.build_failed = parse_pytest_report(rootdir, report)
        except (ET.ParseError, OSError) as exc:  # OSError: a link or FIFO planted by the code under test
            run.output = clip_output(f"[the pytest report could not be read: {exc}]\n{output}")
    if stream is not None:
        from plugins.coding.verdict_stream import read_stream

        verdict = read_stream(stream[0], rootdir, exit_code=result.exit_code, timed_out=result.timed_out,
                              report=run.outcomes if report.is_file() else None, overflow=stream[1])  # fmt: skip
        run.stream_problems = verdict.problems
        if not result.timed_out:
            run.outcomes = verdict.outcomes  # only what arrived as the tests ran counts
            run.messages = {t: m for t, m in run.messages.items() if t in run.outcomes}
        elif not report.is_file():  # killed before pytest wrote its report: what ran is what reached the grader
            run.outcomes = verdict.outcomes  # type: ignore[assignment]
            run.not_run = len(verdict.not_run)
    return run


def _run_pytest(
    sandbox: Sandbox, root: Path, run_dir: Path, tests: list[str], limits: SandboxLimits | None, python: str | None,
    environment: TestEnvironment, *, processes: int = 1, progress: Progress | None = None, traceback: str = "short",
) -> TestRun:
    """One pytest run; with ``processes`` > 1 (a whole-suite run) spread over that many
    processes: pytest-xdist's ``-n`` when the environment has it, else Horizon's shards
    (``plugins.coding.testing_scale``). ``traceback``: pytest's ``--tb`` style."""
    unittest_files = () if _has_pytest_config(root) else ("-o", f"python_files={UNITTEST_FILES}")
    if traceback != "short":
        unittest_files = (*unittest_files, f"--tb={traceback}")
    note = ""
    if python is None:
        python = environment.interpreter(root)
        if not Path(python).exists():  # e.g. the cache was deleted since set-up
            note = f"[the test environment chosen at set-up ({python}) is gone; Horizon's own Python ran the tests instead]\n"
            environment = horizon_environment(root, own=True)
            python = sys.executable
    from plugins.coding.testing_scale import has_xdist

    prefix = ""
    if environment.prefix:
        prefix = str(root / environment.prefix) if environment.in_workspace else environment.prefix
    readers: list = []
    ticker = _Ticker(progress, readers)
    try:
        if processes > 1 and has_xdist(python, prefix):
            run = _pytest_process(sandbox, root, run_dir, tests, limits, python, environment,
                                  (*unittest_files, "-n", str(processes)), {}, readers)  # fmt: skip
            run.parallel = f"pytest-xdist -n {processes}"
        elif processes > 1:
            run = _sharded(sandbox, root, run_dir, tests, limits, python, environment, unittest_files, processes, readers)
        else:
            run = _pytest_process(sandbox, root, run_dir, tests, limits, python, environment, unittest_files, {}, readers)
    finally:
        ticker.stop()
    if note:
        run.output = note + run.output
    return run


#: Called with a line saying how far a long test run has got (``run_test_suite``'s ``progress``).
Progress = Callable[[str], None]
#: Seconds between two progress lines of a running suite.
PROGRESS_S = 15.0


def _pytest_process(
    sandbox: Sandbox, root: Path, run_dir: Path, tests: list[str], limits: SandboxLimits | None, python: str,
    environment: TestEnvironment, extra: tuple[str, ...], variables: dict[str, str], readers: list,
) -> TestRun:
    """One sandboxed pytest command with the verdict stream (``pytest_argv``), read as a ``TestRun``;
    its stream's reader is added to ``readers`` (what ``_Ticker`` counts)."""
    from plugins.coding.verdict_stream import StreamReader, install_plugin

    env = {**environment.variables(root), **sandbox_env(run_dir), **variables}
    plugin = install_plugin(run_dir)
    with StreamReader() as reader:
        readers.append(reader)
        argv = pytest_argv(run_dir, root, tests, python=python, extra=extra, stream=(reader.fd, plugin))
        result = environment.sandbox(sandbox).run(argv, cwd=root, env=env, limits=limits, pass_fds=(reader.fd,))
        records = reader.finish()
    return read_pytest_run(result, run_dir, root, stream=(records, reader.overflow))


class _Ticker:
    """Every ``PROGRESS_S`` while a suite runs, one ``progress`` line: tests done so far (read from
    the verdict streams received until now: every process of a sharded run), how many failed,
    seconds so far."""

    def __init__(self, progress: Progress | None, readers: list) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if progress is None:
            return
        started = time.monotonic()

        def tick() -> None:
            while not self._stop.wait(PROGRESS_S):
                done = failing = 0
                for reader in list(readers):
                    for line in reader.so_far().split(b"\n"):
                        if b'"k": "logged"' in line and b'"when": "call"' in line:
                            done += 1
                            failing += b'"outcome": "failed"' in line
                try:
                    progress(f"{done:,} tests done, {failing:,} failing, {time.monotonic() - started:.0f} s so far")
                except Exception:  # a broken display must not stop the tests
                    log.debug("progress display failed", exc_info=True)

        self._thread = threading.Thread(target=tick, name="test-progress", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)


def _sharded(
    sandbox: Sandbox, root: Path, run_dir: Path, tests: list[str], limits: SandboxLimits | None, python: str,
    environment: TestEnvironment, extra: tuple[str, ...], count: int, readers: list,
) -> TestRun:
    """``count`` pytest processes side by side, shard ``k`` in ``run_dir/shard-k`` with
    ``HORIZON_SHARD=k/count`` (``verdict_plugin.shard_files``), merged (``merge_runs``)."""
    from concurrent.futures import ThreadPoolExecutor

    folders = [run_dir / f"shard-{index}" for index in range(count)]
    for folder in folders:  # all made before any process starts: none can plant another's folder
        folder.mkdir()

    def shard(index: int) -> TestRun:
        return _pytest_process(sandbox, root, folders[index], tests, limits, python, environment, extra,
                               {"HORIZON_SHARD": f"{index}/{count}"}, readers)  # fmt: skip

    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="test-shard") as pool:
        runs = list(pool.map(shard, range(count)))
    merged = merge_runs(runs, run_dir)
    merged.parallel = f"{count} shards"
    return merged


def merge_runs(runs: list[TestRun], run_dir: Path) -> TestRun:
    """One ``TestRun`` of the shards of a sharded pytest run (``_sharded``): their outcomes and
    messages together, ``not_run`` and durations summed and maxed, the stream's problems each
    named by its shard, the output of each under its shard's heading (also in ``run_dir/output.txt``).

    The exit code is pytest's for the whole: the first shard's that is neither 0 nor 5 (5: that
    shard collected nothing), else 0 when a shard passed, else 5; ``timed_out`` and
    ``build_failed`` when any shard's is.
    """
    merged = TestRun(framework="pytest", exit_code=5, run_dir=str(run_dir))
    codes = [r.exit_code for r in runs]
    bad = [c for c in codes if c not in (0, 5)]
    merged.exit_code = bad[0] if bad else (0 if 0 in codes else 5)
    outputs = []
    for index, run in enumerate(runs):
        merged.outcomes.update(run.outcomes)
        merged.messages.update(run.messages)
        merged.not_run += run.not_run
        merged.timed_out = merged.timed_out or run.timed_out
        merged.build_failed = merged.build_failed or run.build_failed
        merged.stream_problems += [f"shard {index + 1} of {len(runs)}: {p}" for p in run.stream_problems]
        try:
            text = read_regular(Path(run.run_dir) / "output.txt").decode("utf-8", "replace")
        except OSError:
            text = run.output
        outputs.append(f"=== shard {index + 1} of {len(runs)} (exit code {run.exit_code}) ===\n{text.strip()}")
    output = "\n".join(outputs)
    write_new(run_dir / "output.txt", output)
    merged.output = clip_output(output)
    return merged


def _java_selectors(root: Path, tests: list[str]) -> list[str]:
    selectors = []
    for item in tests:
        if item.endswith(".java"):
            path = Path(item)
            parts = path.with_suffix("").parts
            if "java" in parts:
                class_name = ".".join(parts[len(parts) - parts[::-1].index("java") :])
            else:
                package = ""
                try:
                    match = re.search(
                        r"^\s*package\s+([\w.]+)\s*;", (root / item).read_text(encoding="utf-8", errors="replace"), re.MULTILINE
                    )
                    package = match.group(1) + "." if match else ""
                except OSError:
                    pass
                class_name = package + path.stem
            selectors.append(f"--select-class={class_name}")
        elif "#" in item:
            selectors.append(f"--select-method={item}")
        elif re.fullmatch(r"[\w$.]+", item):
            selectors.append(f"--select-class={item}")
        else:
            raise ToolError(
                f"cannot read the JUnit test selector {item!r}; use a class (com.example.FooTest), a method "
                "(com.example.FooTest#testBar) or a test file path"
            )
    return selectors


def _run_junit(sandbox: Sandbox, root: Path, run_dir: Path, tests: list[str], limits: SandboxLimits | None) -> TestRun:
    launcher = find_junit_launcher()
    javac, java = java_tool("javac"), java_tool("java")
    if launcher is None or javac is None or java is None:
        missing = [
            n
            for n, v in (
                ("JUnit console launcher jar (junit-platform-console-standalone.jar; set HORIZON_JUNIT_JAR)", launcher),
                ("javac", javac),
                ("java", java),
            )
            if v is None
        ]
        raise ToolError(f"cannot run JUnit tests here: missing {', '.join(missing)}")
    main, test = java_sources(root)
    if not test:
        raise ToolError("no Java test sources found (expected src/test/java or *Test.java files)")
    classes, reports = run_dir / "classes", run_dir / "reports"
    classes.mkdir()
    extras = java_classpath_extras(root)
    classpath = os.pathsep.join([str(launcher), *extras])
    argfile = run_dir / "sources.txt"
    argfile.write_text("\n".join(f'"{p}"' for p in [*main, *test]) + "\n", encoding="utf-8")
    env = sandbox_env(run_dir)
    started = time.monotonic()
    compiled = sandbox.run(
        [javac, "-d", str(classes), "-cp", classpath, "-encoding", "UTF-8", "-g", "-nowarn", "-implicit:none", f"@{argfile}"],
        cwd=root, env=env, limits=limits,
    )  # fmt: skip
    if not compiled.ok:
        output = (compiled.stdout + "\n" + compiled.stderr).strip()
        if compiled.timed_out:
            output = f"[javac timed out after {compiled.duration_s:.0f} s]\n{output}"
        write_new(run_dir / "output.txt", output)  # code under test may have planted a link
        shutil.rmtree(classes, ignore_errors=True)
        return TestRun(
            framework="junit", exit_code=compiled.exit_code, build_failed=True, timed_out=compiled.timed_out,
            output=clip_output(output), run_dir=str(run_dir),
        )  # fmt: skip
    selectors = _java_selectors(root, tests) if tests else [f"--scan-class-path={classes}"]
    argv = [
        java, "-XX:-UsePerfData", f"-Djava.io.tmpdir={run_dir / 'tmp'}",
        "-jar", str(launcher),
        "--disable-banner", "--disable-ansi-colors", "--details=none",
        f"--class-path={os.pathsep.join([str(classes), *extras])}",
        f"--reports-dir={reports}",
        *selectors,
    ]  # fmt: skip
    if limits is not None:
        remaining = max(1.0, limits.timeout_s - (time.monotonic() - started))
        limits = limits.model_copy(update={"timeout_s": remaining})
    result = sandbox.run(argv, cwd=root, env=env, limits=limits)
    output = (result.stdout + (("\n" + result.stderr) if result.stderr.strip() else "")).strip()
    write_new(run_dir / "output.txt", output)  # code under test may have planted a link
    shutil.rmtree(classes, ignore_errors=True)
    run = TestRun(
        framework="junit",
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        output=clip_output(output),
        run_dir=str(run_dir),
    )
    if reports.is_dir():
        try:
            run.outcomes, run.messages = parse_junit_reports(reports)
        except (ET.ParseError, OSError) as exc:  # OSError: a link or FIFO planted by the code under test
            run.output = clip_output(f"[the JUnit report could not be read: {exc}]\n{output}")
    return run


def run_test_suite(
    sandbox: Sandbox,
    workspace: Path,
    scratch: Path,
    tests: list[str] | None = None,
    *,
    framework: Framework | None = None,
    limits: SandboxLimits | None = None,
    python: str | None = None,
    environment: TestEnvironment | None = None,
    progress: Progress | None = None,
    traceback: str = "short",
) -> TestRun:
    """Run the repository's tests (or some of them) in the sandbox and collect per-test outcomes.

    A whole-suite run (no ``tests``) is spread over processes and given a time limit that grows
    with the suite (``plugins.coding.testing_scale``); a run the limit stops still reports the
    pytest tests that ran (``TestRun.not_run`` counts the others).

    Args:
        sandbox: runs the build and test commands; its workspace is ``workspace``.
        workspace: repository root.
        scratch: folder outside the workspace for builds, reports and logs; each run gets a
            fresh ``runs/NNN-<framework>`` folder in it.
        tests: selectors; pytest: node ids or paths (``tests/test_a.py::test_x``); JUnit:
            ``pkg.Class``, ``pkg.Class#method`` or a test file path; node and Jest: test file
            paths; Go: ids (``example.com/m::TestX``) or package patterns (``./calc``).
            ``None`` or empty: all.
        framework: skip detection and use this one.
        limits: sandbox limits per command (default ``default_limits(sandbox)``: the sandbox's
            own, with ``$HORIZON_TEST_TIMEOUT_S`` as ``timeout_s`` when set; without that
            variable a whole-suite run gets ``testing_scale.suite_budget``); for JUnit the
            launcher gets what the compiler left of ``timeout_s``.
        python: interpreter for pytest, overriding ``environment``'s.
        environment: where Python tests run (``plugins.coding.environment``): default the one
            chosen at set-up and saved in ``scratch``, else Horizon's own interpreter
            (``$HORIZON_TEST_PYTHON`` when set), always with the workspace's source roots
            (``src`` for a src layout) first on ``PYTHONPATH``.
        progress: called from another thread every ``PROGRESS_S`` while a pytest suite runs,
            with a line saying how many tests are done (the set-up's progress lines).
        traceback: pytest's ``--tb`` style for its failures' messages (``short``; the set-up's
            baseline asks for ``native``: pytest's own styles parse each frame's whole source file
            again for every failing test, 35 s against 4.4 s on a quarter of Django's suite, and the
            baseline keeps only outcomes); other frameworks ignore it.

    Returns:
        ``TestRun``. A compile error or a test failure is a result, not an exception; so is a
        repository without tests (``framework`` None, ``exit_code`` -1, nothing run).

    Raises:
        ToolError: a needed program (javac, java, the JUnit launcher, node, jest, go) is
            missing, or a selector is malformed.
    """
    root = workspace.resolve()
    environment = environment or load_environment(scratch)
    modules = Path(environment.node_modules) if environment is not None and environment.node_modules else None
    framework = framework or detect_framework(root, node_modules=modules)
    if framework is None:
        return TestRun(framework=None, exit_code=-1, output=NO_TESTS_MESSAGE)
    selected = _check_selectors(tests or [])
    from plugins.coding import testing_scale

    processes, key, reason = 1, "", ""
    if not selected:  # a whole-suite run: spread over processes, its limit sized by the suite
        files = [f for f in test_files(root) if f.rsplit("/", 1)[-1] not in PYTEST_CONFIG_FILES]
        key = testing_scale.suite_key(framework, root, files)
        if framework == "pytest":
            processes = testing_scale.processes_for(key, len(files))
        if limits is None and not os.environ.get(TEST_TIMEOUT_ENV, "").strip():
            budget, reason = testing_scale.suite_budget(sandbox.limits.timeout_s, key, len(files), processes)
            limits = sandbox.limits.model_copy(update={"timeout_s": budget})
    limits = limits or default_limits(sandbox)
    if progress is not None:
        spread = f"{processes} processes" if processes > 1 else "one process"
        why = f" ({reason})" if reason else ""
        progress(f"running the {framework} tests in {spread}, time limit {(limits or sandbox.limits).timeout_s:.0f} s{why}")
    run_dir = new_run_dir(scratch, framework)
    started = time.monotonic()
    if framework == "pytest":
        environment = environment or horizon_environment(root)
        run = _run_pytest(sandbox, root, run_dir, selected, limits, python, environment, processes=processes, progress=progress,
                          traceback=traceback)  # fmt: skip
    elif framework == "junit":
        run = _run_junit(sandbox, root, run_dir, selected, limits)
    elif framework in ("node", "jest"):
        from plugins.coding import testing_node

        if shutil.which("node") is None:
            raise ToolError("cannot run JavaScript tests here: node is not installed")
        if framework == "jest" and testing_node.jest_binary(root, modules) is None:
            raise ToolError("cannot run Jest here: node_modules/.bin/jest is not installed (no download is possible)")
        box = environment.sandbox(sandbox) if environment is not None else sandbox  # shows node_modules
        if framework == "jest":
            run = testing_node.run_jest(box, root, run_dir, selected, limits, node_modules=modules)
        else:
            run = testing_node.run_node(box, root, run_dir, selected, limits)
    else:
        from plugins.coding import testing_go

        if testing_go.go_binary() is None:
            raise ToolError("cannot run Go tests here: go is not installed (Debian package golang-go)")
        run = testing_go.run_go(sandbox, root, run_dir, selected, limits)
    run.duration_s = round(time.monotonic() - started, 3)
    run.budget_s = (limits or sandbox.limits).timeout_s
    run.budget_reason = reason
    if key and (run.outcomes or run.timed_out):  # measured: the next run of this suite is sized by it
        testing_scale.record(key, duration_s=run.duration_s, budget_s=run.budget_s, timed_out=run.timed_out,
                             tests=len(run.outcomes), processes=processes)  # fmt: skip
    return run


# --------------------------------------------------------------------------- rendering


_EXCEPTION_LINE = re.compile(r"^(?:E\s+)?((?:[A-Za-z_][\w.]*)?(?:Error|Exception|Exit)\b(?::.*)?)$")  # Node's is plain "Error: ..."
_CONFTEST_FAILED = re.compile(r"ImportError while loading conftest '([^']+)'")
#: Lines of a collection error's report that say nothing about the cause.
_COLLECTION_NOISE = ("collection failure", "Hint: make sure your test modules", "Traceback:", "importlib/__init__.py",
                     "return _bootstrap._gcd_import", "^^^^")  # fmt: skip


def exception_line(text: str) -> str:
    """The last ``SomeError: message`` line of a traceback (pytest's ``E   `` prefix removed), or ""."""
    for line in reversed(text.splitlines()):
        match = _EXCEPTION_LINE.match(line.strip())
        if match:
            return shorten(match.group(1).strip(), 300)
    return ""


def collection_errors(run: TestRun, root: Path | None = None) -> dict[str, str]:
    """Test modules pytest could not import, with the reason.

    A module that fails to import is one ``error`` outcome whose id is its path (no ``::``); a
    ``conftest.py`` that fails to import stops pytest before any test (exit code 4, no report),
    so it is read from the console output.

    Args:
        run: a pytest run.
        root: the workspace, to make a conftest's absolute path relative (default: kept as printed).

    Returns:
        ``{module path: "ModuleNotFoundError: No module named 'yaml'"}`` (the reason is "" when
        the report has no exception line).
    """
    found = {t: exception_line(run.messages.get(t, "")) for t, o in run.outcomes.items() if o == "error" and "::" not in t}
    if not run.outcomes and run.framework == "pytest":
        for match in _CONFTEST_FAILED.finditer(run.output):
            path = match.group(1)
            if root is not None and Path(path).is_relative_to(root):
                path = Path(path).relative_to(root).as_posix()
            found[path] = exception_line(run.output[match.end():].split("ImportError while loading conftest", 1)[0])
    return found


def format_test_run(run: TestRun, *, max_detailed: int = 10, max_listed: int = 50, failing_at_start: set[str] | frozenset[str] = frozenset()) -> str:
    """Render a ``TestRun`` for the model: counts, failing tests with their first lines, exit code.

    Tests in ``failing_at_start`` (they failed in the set-up run) that fail again are not shown as
    new failures: they come after the others, one line each, marked "failing at the start", with
    their error's last line (``exception_line``)."""
    lines: list[str] = []
    if run.framework is None:
        return run.output or NO_TESTS_MESSAGE
    if run.build_failed and not run.outcomes:
        tool = {"junit": "javac", "go": "go build"}.get(run.framework, run.framework)
        lines.append(f"{run.framework}: BUILD FAILED, no tests ran ({tool} exit code {run.exit_code}, {run.duration_s:.1f} s)")
        lines += _first_lines(run.output, 40)
        return "\n".join(lines)
    total = len(run.outcomes)
    counts = ", ".join(f"{run.count(o)} {o}" for o in ("passed", "failed", "error", "skipped") if run.count(o) or o == "passed")
    status = "timed out" if run.timed_out else f"exit code {run.exit_code}"
    spread = f", {run.parallel}" if run.parallel else ""
    lines.append(f"{run.framework}: {total} test{'' if total == 1 else 's'}: {counts} ({status}, {run.duration_s:.1f} s{spread})")
    if run.build_failed:
        lines.append("Some test modules could not be collected (see the errors below).")
    if run.timed_out:
        limit = f" ({run.budget_s:.0f} s)" if run.budget_s else ""
        missing = (f"{run.not_run} collected test{'' if run.not_run == 1 else 's'} did not run; the outcomes are those of the "
                   "tests that ran" if run.not_run else "outcomes may be missing")  # fmt: skip
        lines.append(f"The run was stopped by the time limit{limit}: {missing}. Run fewer tests (pass test ids).")
    bad = [t for t in run.not_passed if t not in failing_at_start]
    known = [t for t in run.not_passed if t in failing_at_start]
    broken = collection_errors(run)
    for index, test_id in enumerate(bad):
        reason = f" (could not be imported: {broken[test_id]})" if broken.get(test_id) else ""
        if index < max_detailed:
            lines.append("")
            lines.append(f"{run.outcomes[test_id].upper()} {test_id}{reason}")
            message = run.messages.get(test_id, "").splitlines()
            if test_id in broken:
                message = [line for line in message if not any(noise in line for noise in _COLLECTION_NOISE)]
            lines += ["    " + shorten(line, 300) for line in message[:10]]
        elif index < max_detailed + max_listed:
            if index == max_detailed:
                lines.append("")
            lines.append(f"{run.outcomes[test_id].upper()} {test_id}{reason}")
        else:
            lines.append(f"… and {len(bad) - index} more not passing")
            break
    if known:
        lines.append("")
        lines.append(f"{len(known)} of the tests not passing were failing at the start, before any change:")
        for test_id in known[:max_listed]:
            why = broken.get(test_id) or exception_line(run.messages.get(test_id, ""))
            lines.append(f"{run.outcomes[test_id].upper()} {test_id} (failing at the start)" + (f": {why}" if why else ""))
        if len(known) > max_listed:
            lines.append(f"… and {len(known) - max_listed} more failing at the start")
    if total == 0 and run.exit_code != 0:
        for path, reason in broken.items():
            lines.append(f"pytest could not load {path}: {reason or 'see the output below'}; no test ran.")
        if run.output.strip():
            lines.append("No test results were reported. Output:")
            lines += _last_lines(run.output, 30)
        else:
            lines.append("No test results were reported, and the tests printed nothing.")
    elif total == 0:
        lines.append("No tests were collected.")
    return "\n".join(lines)


def _first_lines(text: str, count: int) -> list[str]:
    lines = text.strip().splitlines()
    return lines[:count] + ([f"… ({len(lines) - count} more lines)"] if len(lines) > count else [])


def _last_lines(text: str, count: int) -> list[str]:
    lines = text.strip().splitlines()
    return ([f"… ({len(lines) - count} lines before)"] if len(lines) > count else []) + lines[-count:]
