"""Differential verification: the fail-to-pass tests run a second way, which a patch cannot tell from production.

In-process test runs trust the code they import: a patch can return a value that compares equal
to anything, read the expected value out of the test's ``assert`` line (walking the frames to it
and reading it with ``linecache``), or behave only while ``PYTEST_CURRENT_TEST`` is set. None of
that needs a word a filter of the patch could catch. So after pytest, the tests that decide the
reward (the task's fail-to-pass tests, the tests failing at the start, or the run's reproduction
tests) that passed are run once more (``second_run``):

* in a fresh interpreter, the project's own (``plugins.coding.environment``, the same one pytest
  ran in), in a sandbox of the same kind, with the same ``PYTHONPATH`` and no ``PYTEST_*`` or
  ``CI`` variable;
* from a different path: the tree copied to another folder name, without its test files on disk
  (their text reaches the runner on standard input, so no file holds it);
* without pytest: Horizon's runner (``direct_runner.py``, copied into the run's folder) imports
  each test module through a finder of its own, binds a stand-in where the module says
  ``import pytest`` (never put in ``sys.modules``), and calls the test functions itself;
* with the comparisons checked by the grader: the test files' ``assert`` statements are rewritten
  (AST) so that ``==``, ``!=``, ``in`` and ``not in`` go through the runner's checker, which
  compares built-in values by the built-in types' own comparison (a ``str`` subclass whose
  ``__eq__`` returns True is caught) and fails any other value that compares equal to a fresh
  private object; the code is compiled under the name ``<horizon …>``, which ``linecache`` cannot
  read, so a frame-walking oracle finds no assert text.

A test that passed under pytest and does not pass here makes the reward 0 ("behaves differently
under the grader"), naming the tests and how. Supported: plain test functions, test classes
(``setup_method``/``teardown_method``), ``unittest.TestCase`` methods (``assertEqual``,
``assertNotEqual``, ``assertIn``, ``assertNotIn`` checked the same way), ``@pytest.mark.parametrize``
(values, ``ids=``, ``pytest.param``), fixtures the test files define (in the module, its classes,
or ``conftest.py`` files without hooks; function scope, ``yield`` teardown, ``autouse``), and
``tmp_path``, ``monkeypatch`` and ``capsys``. A test that needs anything else (another fixture, a
plugin's marker, an async test, a ``conftest.py`` with hooks, a piece of pytest the stand-in
lacks) is not run the second way and the verdict lists it as "not checked a second way (why)".
"""

from __future__ import annotations

import configparser
import json
import secrets
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from core.api import Sandbox, read_regular, sandbox_like, write_new
from plugins.coding.environment import TestEnvironment, horizon_environment
from plugins.coding.testing import default_limits, new_run_dir, sandbox_env, test_files
from plugins.coding.verdict_stream import StreamReader

RUNNER_SOURCE = Path(__file__).with_name("direct_runner.py")


@dataclass
class SecondRun:
    """The second way's results for the tests that passed under pytest.

    Attributes:
        checked: ``{test id: outcome}`` the second way (``passed``, ``failed``, ``error``, ``skipped``).
        differs: ``{test id: how}`` for tests that passed under pytest and not here.
        unchecked: ``{test id: why}`` for tests not run the second way (a fixture or marker it needs).
        problems: why the second run itself cannot be believed (it ended before its last record).
        seconds: wall-clock seconds of the second run, the copy included.
    """

    checked: dict[str, str] = field(default_factory=dict)
    differs: dict[str, str] = field(default_factory=dict)
    unchecked: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def record(self) -> dict:
        """The fields as a dict, for the verdict (``reward.grade(verification=...)``)."""
        return {"checked": self.checked, "differs": self.differs, "unchecked": self.unchecked, "problems": self.problems,
                "seconds": self.seconds}  # fmt: skip


def merge_second_runs(*records: dict | None) -> dict | None:
    """One record of several ``SecondRun.record()`` (the final run's and the reproduction tests'); None when all are."""
    given = [r for r in records if r]
    if not given:
        return None
    merged: dict = {"checked": {}, "differs": {}, "unchecked": {}, "problems": [], "seconds": 0.0}
    for record in given:
        for key in ("checked", "differs", "unchecked"):
            merged[key].update(record.get(key) or {})
        merged["problems"] += record.get("problems") or []
        merged["seconds"] = round(merged["seconds"] + float(record.get("seconds") or 0.0), 3)
    return merged


def second_run_tests(targets: list[str], outcomes: dict[str, str]) -> list[str]:
    """The targets to run a second way: those that passed under pytest, a module id
    (``tests/test_a.py``, a module that failed to import at the start) standing for its tests,
    ``*`` for every test."""
    chosen = []
    for target in targets:
        if target == "*":  # verdict.ALL_TESTS
            chosen += sorted(t for t, o in outcomes.items() if o == "passed" and "::" in t and t.partition("::")[0].endswith(".py"))
        elif "::" in target:
            if outcomes.get(target) == "passed" and target.partition("::")[0].endswith(".py"):
                chosen.append(target)
        else:
            chosen += sorted(t for t, o in outcomes.items() if t.startswith(target + "::") and o == "passed")
    return sorted(dict.fromkeys(chosen))


def _config_pythonpath(root: Path) -> list[str]:
    """pytest's ``pythonpath`` setting (pytest 7+), as absolute folders in ``root``."""
    entries: list[str] = []
    try:
        if (root / "pyproject.toml").is_file():
            doc = tomllib.loads(read_regular(root / "pyproject.toml").decode("utf-8"))
            value = doc.get("tool", {}).get("pytest", {}).get("ini_options", {}).get("pythonpath")
            entries = [value] if isinstance(value, str) else list(value or [])
        for name, section in (("pytest.ini", "pytest"), ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
            if not entries and (root / name).is_file():
                parser = configparser.RawConfigParser(strict=False, interpolation=None)
                parser.read_string(read_regular(root / name).decode("utf-8"))
                if parser.has_option(section, "pythonpath"):
                    entries = parser.get(section, "pythonpath").split()
    except (OSError, ValueError, UnicodeDecodeError, tomllib.TOMLDecodeError, configparser.Error, AttributeError):
        return []
    return [str((root / str(e)).resolve()) for e in entries if isinstance(e, str)]


def second_run(sandbox: Sandbox, tree: Path, folder: Path, tests: list[str], environment: TestEnvironment | None = None) -> SecondRun:
    """Run ``tests`` (ids that passed under pytest in ``tree``) the second way; see the module docstring.

    Args:
        sandbox: the episode's sandbox (its kind and limits are reused, in a fresh one).
        tree: the tree pytest ran them in (left unchanged: a copy is made in ``folder``).
        folder: a fresh folder outside any workspace for the copy and the run's files.
        tests: test ids (``tests/test_a.py::test_x``, ``tests/test_a.py::TestK::test_y[1]``).
        environment: the episode's test environment (None: Horizon's own interpreter).

    Returns:
        A ``SecondRun``; every id in ``tests`` is in ``checked`` (and ``differs`` when it did not
        pass) or in ``unchecked``.
    """
    import time

    started = time.monotonic()
    result = SecondRun()
    if not tests:
        return result
    copy = folder / f"project-{secrets.token_hex(4)}"
    shutil.copytree(tree, copy, symlinks=True, ignore=_plain_entries_only)
    root = copy.resolve()
    sources: dict[str, str] = {}
    for rel in test_files(root):
        path = root / rel
        if rel.endswith(".py") and path.is_file() and not path.is_symlink():
            try:
                sources[rel] = read_regular(path).decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            path.unlink()  # its text reaches the runner on stdin only: no file holds it
    scratch = folder / "scratch"
    box = sandbox_like(sandbox, root, scratch)
    environment = environment or horizon_environment(root)
    run_dir = new_run_dir(scratch, "second-run")
    runner = run_dir / "horizon" / "direct_runner.py"
    runner.parent.mkdir(parents=True)
    write_new(runner, RUNNER_SOURCE.read_bytes())
    plan = {"root": str(root), "sources": sources, "tests": list(tests), "token": secrets.token_hex(6),
            "tmp": str(run_dir / "tmp" / "direct"), "pythonpath": _config_pythonpath(root)}  # fmt: skip
    env = {**environment.variables(root), **sandbox_env(run_dir)}
    python = environment.interpreter(root)
    with StreamReader() as reader:
        process = environment.sandbox(box).run([python, str(runner), str(reader.fd)], cwd=root, env=env,
                                               limits=default_limits(box), stdin=json.dumps(plan), pass_fds=(reader.fd,))  # fmt: skip
        data = reader.finish()
    output = (process.stdout + "\n" + process.stderr).strip()
    write_new(run_dir / "output.txt", output)
    results, ended = _read_results(data, result.problems)
    for test_id in tests:
        outcome, message = results.get(test_id, ("", ""))
        if outcome == "unchecked":
            result.unchecked[test_id] = message
            continue
        if not outcome:
            how = "timed out" if process.timed_out else f"exit code {process.exit_code}"
            tail = output.splitlines()[-1][:200] if output else ""
            result.checked[test_id] = "error"
            result.differs[test_id] = f"passed under pytest, gave no result when run directly (the process ended: {how}{'; ' + tail if tail else ''})"
            continue
        result.checked[test_id] = outcome
        if outcome != "passed":
            result.differs[test_id] = f"passed under pytest, {outcome} when run directly" + (f": {message}" if message else "")
    if not ended and not result.problems:
        result.problems.append(f"the direct run ended before its last record (exit code {process.exit_code})")
    shutil.rmtree(copy, ignore_errors=True)
    result.seconds = round(time.monotonic() - started, 3)
    return result


def _plain_entries_only(folder: str, names: list[str]) -> set[str]:
    """``copytree``'s ignore: caches, and anything but files, folders and links (a FIFO the code
    under test made during the first run would block Horizon's copy)."""
    import os
    import stat

    skipped = {"__pycache__", ".pytest_cache"}
    for name in names:
        try:
            mode = os.lstat(os.path.join(folder, name)).st_mode
        except OSError:
            skipped.add(name)
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            skipped.add(name)
    return skipped


def _read_results(data: bytes, problems: list[str]) -> tuple[dict[str, tuple[str, str]], bool]:
    """``({test id: (outcome, message)}, whether the end record arrived)``; a broken numbering or
    a repeated result is a problem (something else wrote to the pipe)."""
    results: dict[str, tuple[str, str]] = {}
    ended = False
    expected = 0
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            problems.append("the direct run's results hold a line that is not one of its records (something else wrote to them)")
            continue
        if not isinstance(record, dict) or record.get("n") != expected:
            problems.append("the direct run's results are out of order: records were forged or held back")
            break
        expected += 1
        if ended:
            problems.append("the direct run wrote results after its end record")
            break
        if record.get("k") == "end":
            ended = True
        elif record.get("k") == "result":
            test_id = str(record.get("id"))
            if test_id in results:
                problems.append(f"the direct run reported {test_id} twice")
                continue
            results[test_id] = (str(record.get("outcome")), str(record.get("message") or ""))
    return results, ended
