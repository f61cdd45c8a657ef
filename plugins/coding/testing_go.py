"""Running Go tests with ``go test -json`` and reading its event stream.

``go test -json`` writes one JSON object per line (``go doc test2json``): ``{"Action":
"run"|"pass"|"fail"|"skip"|"output", "Package": ..., "Test": ...}``. A test's last ``pass``,
``fail`` or ``skip`` is its outcome; subtests are tests of their own (``TestX/case``). A package
that fails to build has no test events (Go 1.19-1.23 print ``FAIL <package> [build failed]`` as
plain text, later releases a package-level ``fail`` event): it becomes one ``error`` outcome
whose id is the package, with the compiler's errors from stderr as its message. Ids are ``<package import path>::<TestName>``.

Offline and outside the workspace: ``GOFLAGS=-mod=mod`` is not set (a module needing downloads
fails with Go's own message), ``GOPROXY=off`` forbids downloads, ``GOCACHE`` lives in the run's
scratch (``runs/go-cache``, shared by the episode's runs so later builds are incremental) and
``GOPATH`` under it, so nothing is written into the repository. Selectors: ids
(``example.com/calc::TestAdd``, run as ``-run '^(TestAdd)$' example.com/calc``) or package
patterns (``./...``, ``./calc``); the default is ``./...``.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from pathlib import Path

from core.api import Sandbox, SandboxLimits, write_new
from plugins.coding.testing import Outcome, TestRun, clip_output, sandbox_env


def go_binary() -> str | None:
    """Absolute path of the ``go`` program, or None when Go is not installed (Debian: ``golang-go``)."""
    found = shutil.which("go")
    return str(Path(found).resolve()) if found else None


_BUILD_FAILED = re.compile(r"^FAIL\s+(\S+)\s+\[(?:build|setup) failed\]")
_BUILD_HEADER = re.compile(r"^# (\S+)")


def parse_go_events(text: str, stderr: str = "") -> tuple[dict[str, Outcome], dict[str, str], bool]:
    """Read ``go test -json`` output (and its stderr, where the compiler's errors go).

    Returns:
        ``(outcomes, messages, build_failed)``; ``build_failed`` when a package failed without
        running any test (a compile error).
    """
    outcomes: dict[str, Outcome] = {}
    output: dict[str, list[str]] = defaultdict(list)
    packages_failed: set[str] = set()
    packages_with_tests: set[str] = set()
    for line in text.splitlines():
        failed_build = _BUILD_FAILED.match(line)
        if failed_build:  # go 1.19-1.23 print this as text, outside the JSON stream
            packages_failed.add(failed_build.group(1))
            continue
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        package, test, action = event.get("Package", ""), event.get("Test"), event.get("Action")
        key = f"{package}::{test}" if test else package
        if action == "output":
            output[key].append(str(event.get("Output", "")))
        elif action in ("pass", "fail", "skip"):
            if test:
                packages_with_tests.add(package)
                outcomes[key] = {"pass": "passed", "fail": "failed", "skip": "skipped"}[action]  # type: ignore[assignment]
            elif action == "fail":
                packages_failed.add(package)
    build_failed = False
    for package in packages_failed - packages_with_tests:
        outcomes[package] = "error"
        build_failed = True
    compile_errors: dict[str, list[str]] = defaultdict(list)
    current = ""
    for line in stderr.splitlines():
        header = _BUILD_HEADER.match(line)
        if header:
            current = header.group(1)
        elif current:
            compile_errors[current].append(line.rstrip())
    messages = {}
    for package in packages_failed - packages_with_tests:
        messages[package] = "\n".join(compile_errors.get(package, [])[:10])
    for test_id, outcome in outcomes.items():
        if test_id in messages:
            continue
        if outcome in ("failed", "error"):
            lines = [ln.rstrip() for ln in output.get(test_id, []) if ln.strip() and not ln.startswith(("=== ", "--- "))]
            messages[test_id] = "\n".join(lines[-10:])
    return outcomes, messages, build_failed


def _console_text(stdout: str) -> str:
    """The test output as ``go test`` would print it, from the ``output`` events."""
    parts = []
    for line in stdout.splitlines():
        if '"Action":"output"' not in line:
            continue
        try:
            parts.append(str(json.loads(line).get("Output", "")))
        except ValueError:
            continue
    return "".join(parts)


def _selectors(tests: list[str]) -> list[list[str]]:
    """Group selectors into ``go test`` argument lists: one per package of named tests, one for patterns."""
    named: dict[str, list[str]] = defaultdict(list)
    patterns: list[str] = []
    for item in tests:
        if "::" in item:
            package, test = item.split("::", 1)
            named[package].append(re.escape(test.split("/", 1)[0]))
        else:
            patterns.append(item)
    groups = [["-run", f"^({'|'.join(sorted(set(names)))})$", package] for package, names in named.items()]
    if patterns or not groups:
        groups.append(patterns or ["./..."])
    return groups


def run_go(sandbox: Sandbox, root: Path, run_dir: Path, tests: list[str], limits: SandboxLimits | None) -> TestRun:
    """Run ``go test -json`` on the repository's packages (or the given tests) and read per-test outcomes."""
    go = go_binary() or "go"
    cache = run_dir.parent / "go-cache"
    cache.mkdir(exist_ok=True)
    env = {
        **sandbox_env(run_dir),
        "GOCACHE": str(cache / "build"),
        "GOPATH": str(cache / "gopath"),
        "GOPROXY": "off",
        "GOFLAGS": "-buildvcs=false",  # .git is read-only and may be absent
        "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
        "GOTMPDIR": str(run_dir / "tmp"),
    }
    events, console, exit_code, timed_out = [], [], 0, False
    for group in _selectors(tests):
        result = sandbox.run([go, "test", "-json", *group], cwd=root, env=env, limits=limits)
        events.append(result.stdout)
        console.append(result.stderr)
        exit_code = exit_code or result.exit_code
        timed_out = timed_out or result.timed_out
    stdout = "\n".join(events)
    write_new(run_dir / "report.jsonl", stdout)
    outcomes, messages, build_failed = parse_go_events(stdout, "\n".join(console))
    output = (_console_text(stdout) + "\n" + "\n".join(console)).strip()
    write_new(run_dir / "output.txt", output)
    return TestRun(
        framework="go", outcomes=outcomes, messages=messages, exit_code=exit_code, build_failed=build_failed,
        timed_out=timed_out, output=clip_output(output), run_dir=str(run_dir),
    )  # fmt: skip
