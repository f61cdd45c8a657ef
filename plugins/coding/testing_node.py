"""Running JavaScript/TypeScript tests: Node's built-in runner (``node --test``) and Jest.

``node --test`` (Node 20+): its JUnit reporter names neither the file nor the enclosing
``describe`` of a test, so ids would collide across files; instead a small reporter module
written to the run folder (Node's custom reporter API: an async generator over the runner's
``test:start``/``test:pass``/``test:fail`` events, https://nodejs.org/api/test.html#custom-reporters)
writes one JSON line per test with its file and its suite names. Ids are
``<file>::<suite> > <test>`` with the file relative to the repository
(``test/calc.test.js::division > by zero throws``). A file that fails to load is one ``error``
outcome whose id is the file itself. The human-readable ``spec`` reporter goes to the console.

Jest: used when the repository configures it (a ``jest`` key in ``package.json``, a
``jest.config.*`` file, or a ``test`` script that runs ``jest``) and ``node_modules/.bin/jest``
is installed (nothing is downloaded). It runs with ``--ci --json --outputFile=<report>``; its
JSON report lists each test file's ``assertionResults`` (``fullName``, ``status``:
``passed``/``failed``/``pending``/``todo``, ``failureMessages``). Ids are
``<file>::<fullName>``; a file that fails to run is ``error`` under the file's path.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from core.api import Sandbox, SandboxLimits, read_regular, write_new
from plugins.coding.testing import Outcome, TestRun, clip_output, sandbox_env

_REPORTER = r"""
// Horizon's node --test reporter: one JSON line per test, with its file and suite names.
export default async function* horizonReporter(source) {
  const stacks = new Map();
  for await (const event of source) {
    const data = event.data ?? {};
    const file = data.file ?? '';
    if (event.type === 'test:start') {
      const stack = stacks.get(file) ?? [];
      stack.length = data.nesting;
      stack.push(data.name);
      stacks.set(file, stack);
    } else if (event.type === 'test:pass' || event.type === 'test:fail') {
      const stack = (stacks.get(file) ?? []).slice(0, data.nesting);
      const suite = data.details?.type === 'suite';
      let status = event.type === 'test:pass' ? 'passed' : 'failed';
      if (data.skip !== undefined || data.todo !== undefined) status = 'skipped';
      const error = data.details?.error;
      const cause = error?.cause ?? error;
      const message = cause ? String(cause?.stack ?? cause).split('\n').slice(0, 8).join('\n') : '';
      yield JSON.stringify({ file, names: [...stack, data.name], status, suite, message }) + '\n';
    } else if (event.type === 'test:stderr' && file) {
      // A file that fails to load says why only on its process's stderr ("Cannot find module").
      yield JSON.stringify({ file, stderr: String(data.message ?? '') }) + '\n';
    }
  }
}
"""

#: How much of a test file's stderr is kept as the message of a file that failed to load.
_STDERR_CHARS = 2000
_JEST_CONFIGS = ("jest.config.js", "jest.config.mjs", "jest.config.cjs", "jest.config.ts", "jest.config.json")


def _package_json(root: Path) -> dict:
    try:
        data = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def uses_jest(root: Path) -> bool:
    """Whether the repository configures Jest (package.json ``jest`` key, a ``jest.config.*``, or a ``test`` script running jest)."""
    package = _package_json(root)
    scripts = package.get("scripts") if isinstance(package.get("scripts"), dict) else {}
    script = str(scripts.get("test", ""))
    return "jest" in package or any((root / name).is_file() for name in _JEST_CONFIGS) or "jest" in script.split()


def jest_binary(root: Path, node_modules: Path | None = None) -> Path | None:
    """``root/node_modules/.bin/jest`` when Jest is installed there, else None.

    Args:
        node_modules: the host folder the sandbox shows at ``root/node_modules``
            (``TestEnvironment.node_modules``); default the repository's own.
    """
    installed = (node_modules or root / "node_modules") / ".bin" / "jest"
    return root / "node_modules" / ".bin" / "jest" if installed.exists() else None


def _rel(root: Path, file: str) -> str:
    path = file.removeprefix("file://")
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except (ValueError, OSError):
        return path


def parse_node_report(root: Path, report: Path) -> tuple[dict[str, Outcome], dict[str, str], bool]:
    """Read the JSON lines of Horizon's ``node --test`` reporter.

    Returns:
        ``(outcomes, messages, load_failed)``; ``load_failed`` when some test file failed to load,
        its message then the end of the file's stderr (``test:stderr`` events), which says why.
    """
    outcomes: dict[str, Outcome] = {}
    messages: dict[str, str] = {}
    load_failed = False
    stderr: dict[str, str] = {}
    for line in read_regular(report).decode("utf-8", "replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or event.get("suite"):
            continue
        rel = _rel(root, str(event.get("file", "")))
        if "stderr" in event:
            stderr[rel] = (stderr.get(rel, "") + str(event["stderr"]))[-_STDERR_CHARS:]
            continue
        names = [str(n) for n in event.get("names", [])]
        status = event.get("status")
        if len(names) == 1 and _rel(root, names[0]) == rel:  # the file itself: it failed to load or run
            if status == "failed":
                outcomes[rel], load_failed = "error", True
                messages[rel] = str(event.get("message", ""))
            continue
        test_id = f"{rel}::{' > '.join(names)}"
        outcome: Outcome = status if status in ("passed", "failed", "skipped") else "failed"
        outcomes[test_id] = outcome
        if outcome == "failed":
            messages[test_id] = str(event.get("message", ""))
    for rel, text in stderr.items():  # node's own message for a file is only "test failed"
        if outcomes.get(rel) == "error" and text.strip() and messages.get(rel, "").strip(" '\"") in ("", "test failed"):
            messages[rel] = text.strip()
    return outcomes, messages, load_failed


def parse_jest_report(root: Path, report: Path) -> tuple[dict[str, Outcome], dict[str, str], bool]:
    """Read Jest's ``--json`` report.

    Returns:
        ``(outcomes, messages, suite_failed)``; ``suite_failed`` when some test file failed to run.
    """
    data = json.loads(read_regular(report))
    outcomes: dict[str, Outcome] = {}
    messages: dict[str, str] = {}
    suite_failed = False
    statuses = {"passed": "passed", "failed": "failed", "pending": "skipped", "skipped": "skipped", "todo": "skipped", "disabled": "skipped"}
    for suite in data.get("testResults", []):
        rel = _rel(root, str(suite.get("name", "")))
        results = suite.get("assertionResults", [])
        if not results and suite.get("status") == "failed":
            outcomes[rel], suite_failed = "error", True
            messages[rel] = str(suite.get("message", ""))[:2000]
            continue
        for result in results:
            test_id = f"{rel}::{result.get('fullName') or result.get('title')}"
            outcome: Outcome = statuses.get(str(result.get("status")), "failed")  # type: ignore[assignment]
            outcomes[test_id] = outcome
            if outcome == "failed":
                messages[test_id] = "\n".join(str(m) for m in result.get("failureMessages", []))[:2000]
    return outcomes, messages, suite_failed


def run_node(sandbox: Sandbox, root: Path, run_dir: Path, tests: list[str], limits: SandboxLimits | None) -> TestRun:
    """Run ``node --test`` (all test files, or the given files) and read per-test outcomes.

    Raises:
        plugins.coding.testing.ToolError: ``node`` is not installed (raised by the caller's check).
    """
    node = shutil.which("node")
    reporter = run_dir / "horizon-reporter.mjs"
    reporter.write_text(_REPORTER, encoding="utf-8")
    report = run_dir / "report.jsonl"
    argv = [
        str(Path(node).resolve()) if node else "node", "--test",
        f"--test-reporter={reporter.as_uri()}", f"--test-reporter-destination={report}",
        "--test-reporter=spec", "--test-reporter-destination=stdout",
        *tests,
    ]  # fmt: skip
    return _finish(sandbox, root, run_dir, argv, limits, "node", report, parse_node_report)


def run_jest(sandbox: Sandbox, root: Path, run_dir: Path, tests: list[str], limits: SandboxLimits | None,
             *, node_modules: Path | None = None) -> TestRun:  # fmt: skip
    """Run the repository's installed Jest with a JSON report and read per-test outcomes
    (``node_modules``: as ``jest_binary``; ``sandbox`` must show it at ``root/node_modules``)."""
    jest = jest_binary(root, node_modules)
    node = shutil.which("node")
    report = run_dir / "report.json"
    argv = [
        str(Path(node).resolve()) if node else "node", str(jest), "--ci", "--json", f"--outputFile={report}",
        "--watchAll=false", "--colors=false", *tests,
    ]  # fmt: skip
    return _finish(sandbox, root, run_dir, argv, limits, "jest", report, parse_jest_report)


def _finish(sandbox, root, run_dir, argv, limits, framework, report, parse) -> TestRun:
    env = {**sandbox_env(run_dir), "NO_COLOR": "1", "CI": "true"}
    result = sandbox.run(argv, cwd=root, env=env, limits=limits)
    output = (result.stdout + (("\n" + result.stderr) if result.stderr.strip() else "")).strip()
    write_new(run_dir / "output.txt", output)
    run = TestRun(framework=framework, exit_code=result.exit_code, timed_out=result.timed_out, output=clip_output(output), run_dir=str(run_dir))
    if report.is_file():
        try:
            run.outcomes, run.messages, run.build_failed = parse(root, report)
        except (ValueError, OSError) as exc:  # OSError: a link or FIFO planted by the code under test
            run.output = clip_output(f"[the {framework} report could not be read: {exc}]\n{output}")
    return run
