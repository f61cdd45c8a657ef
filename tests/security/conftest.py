"""The attack suite's fixtures and its report.

Every test here is one attack a model's command could try, run through the same path a model's
call takes: the coding plugin's tools (``shell``, ``edit_file``, ``view_file``, ``run_tests``) with a
real ``ToolContext`` on a copy of ``examples/python-user-service``, in a sandbox from
``core.sandbox.open_sandbox``.

Each test carries ``@pytest.mark.attack(id, attack, expected)`` and records what it saw with the
``observe`` fixture. At the end of the session a table (id, attack, expected, observed, result) is
printed, whatever the outcome, and written as Markdown to ``security-attacks.md`` in pytest's base
temporary folder (the path is printed under the table). ``docs/security.md`` carries a copy.

Layout of a run, as the runner makes it (``core.runner``)::

    <outside>/<case>/horizon-home/          HORIZON_HOME (hidden in the sandbox)
        runs/run-a/workspace/               the workspace (bound read-write)
        runs/run-a/scratch/                 scratch (read-only; scratch/runs read-write)
        runs/run-b/...                      another run, with a secret

``<outside>`` is under ``/var/tmp``, which the sandbox shows read-only: a test there shows the
mechanism that stops an attack, not the accident that ``/tmp`` is private inside.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from core.sandbox import SandboxLimits, open_sandbox
from core.tools import ToolContext, ToolResult
from plugins.coding.tools import shell

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "python-user-service"
REPORT_NAME = "security-attacks.md"


# --------------------------------------------------------------------------------------------
# the attack table


@dataclass
class Case:
    id: str
    attack: str
    expected: str
    observed: str = ""
    result: str = "not run"


_CASES: dict[str, Case] = {}  # node id -> case


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "attack(id, attack, expected): one case of the security attack suite (tests/security)"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    marker = item.get_closest_marker("attack")
    if marker is None:
        return
    case = _CASES.setdefault(item.nodeid, Case(*marker.args))
    if report.when == "setup" and report.skipped:
        case.result = "skipped"
        case.observed = case.observed or _reason(report)
    elif report.when == "call" or (report.when == "setup" and report.failed):
        if hasattr(report, "wasxfail"):
            if report.skipped:  # xfailed: the attack got through, as recorded in the marker
                case.result = "FAIL (known hole, xfail)"
                case.observed = case.observed or _reason(report)
            else:  # a non-strict xfail that passed
                case.result = "pass (XPASS)"
        elif report.failed and str(report.longrepr).startswith("[XPASS(strict)]"):
            case.result = "pass (XPASS: the hole is closed; remove the xfail)"
        elif report.passed:
            case.result = "pass"
        elif report.skipped:
            case.result = "skipped"
            case.observed = case.observed or _reason(report)
        else:
            case.result = "FAIL"
            if call.excinfo is not None:
                case.observed = _short((case.observed + " | " if case.observed else "") + _first_line(call.excinfo.exconly()))


_CASE_FOLDER = re.compile(r"/var/tmp/horizon-security-[^/\s]+/case-[^/\s']+")


def _short(text: str) -> str:
    """Temporary paths shortened: ``$CASE`` is the case's folder under /var/tmp."""
    return _CASE_FOLDER.sub("$CASE", text)


def _reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # skip: (file, line, reason)
        return _first_line(str(longrepr[2]))
    return _first_line(str(getattr(report, "wasxfail", "") or longrepr or ""))


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


@pytest.fixture
def observe(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """``observe(text)``: record what the attack did (shown in the table's "observed" column)."""
    marker = request.node.get_closest_marker("attack")
    assert marker is not None, "a test using observe needs @pytest.mark.attack(id, attack, expected)"
    case = _CASES.setdefault(request.node.nodeid, Case(*marker.args))

    def record(text: str) -> None:
        case.observed = _short(" ".join(text.split()))

    return record


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


def attack_table_markdown(cases: list[Case]) -> str:
    lines = ["| id | attack | expected | observed | result |", "|---|---|---|---|---|"]
    for c in cases:
        lines.append(f"| {c.id} | {_cell(c.attack)} | {_cell(c.expected)} | {_cell(c.observed)} | {c.result} |")
    return "\n".join(lines) + "\n"


#: The table's order of id prefixes: sandbox reads, writes, network, resources, external MCP
#: servers' resources, Horizon's own process, git, reward hacking, the grading property, agent
#: apply, the terminal, configuration trust, web surfaces (and a breaker's attacks on them), what
#: a service request may choose, limitations.
_PREFIXES = ["R", "W", "N", "X", "MC", "H", "G", "RH", "P", "A", "T", "TR", "WS", "WB", "SB", "L"]


def _order(case: Case) -> tuple[int, str]:
    prefix = re.match(r"[A-Z]+", case.id)
    name = prefix.group(0) if prefix else ""
    return (_PREFIXES.index(name) if name in _PREFIXES else len(_PREFIXES), case.id)


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:  # type: ignore[no-untyped-def]
    cases = sorted(_CASES.values(), key=_order)
    if not cases:
        return
    tr = terminalreporter
    tr.write_sep("=", f"Horizon sandbox attack table ({len(cases)} cases)")
    width = max(len(c.id) for c in cases)
    for c in cases:
        tr.write_line(f"{c.id:<{width}}  {c.result}")
        tr.write_line(f"{'':<{width}}  attack:   {c.attack}")
        tr.write_line(f"{'':<{width}}  expected: {c.expected}")
        tr.write_line(f"{'':<{width}}  observed: {c.observed or '-'}")
    counts: dict[str, int] = {}
    for c in cases:
        key = c.result.split(" ")[0]
        counts[key] = counts.get(key, 0) + 1
    tr.write_line("totals: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    try:
        base = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
        path = Path(base) / REPORT_NAME
        path.write_text(attack_table_markdown(cases))
        tr.write_line(f"Markdown table: {path}")
    except (AttributeError, OSError) as exc:
        tr.write_line(f"(could not write the Markdown table: {exc})")


# --------------------------------------------------------------------------------------------
# runs to attack


@pytest.fixture(scope="session")
def outside() -> Path:
    """A folder on the host outside every hidden folder: visible, read-only, inside the sandbox."""
    base = Path("/var/tmp")
    if not (base.is_dir() and os.access(base, os.W_OK)):
        pytest.skip("needs a writable /var/tmp (a host folder the sandbox shows read-only)")
    folder = Path(tempfile.mkdtemp(prefix="horizon-security-", dir=base))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Run:
    """One sandboxed run to attack: its tool context and the host paths around it."""

    ctx: ToolContext
    home: Path  # HORIZON_HOME
    folder: Path  # the run's folder: home/runs/run-a
    visible: Path  # a host folder outside the run, visible (read-only) inside
    token: str  # unique text planted in secrets
    extra: dict[str, Path] = field(default_factory=dict)

    @property
    def ws(self) -> Path:
        return self.ctx.workspace

    @property
    def scratch(self) -> Path:
        return self.ctx.scratch

    def sh(self, command: str, timeout_s: float = 30) -> ToolResult:
        """Run ``command`` as a model's ``shell`` call would."""
        return shell({"command": command, "timeout_s": timeout_s}, self.ctx)

    @staticmethod
    def out(result: ToolResult) -> str:
        """The stdout part of a ``shell`` result's text."""
        return stdout(result)

    @staticmethod
    def err(result: ToolResult) -> str:
        """The stderr part of a ``shell`` result's text."""
        return stderr(result)


def stdout(result: ToolResult) -> str:
    """The stdout part of a ``shell`` result's text."""
    return _stream(result.output, "stdout")


def stderr(result: ToolResult) -> str:
    """The stderr part of a ``shell`` result's text."""
    return _stream(result.output, "stderr")


def _stream(output: str, name: str) -> str:
    marker = f"--- {name} ---\n"
    if marker not in output:
        return ""
    text = output.split(marker, 1)[1]
    return text.split("\n--- stderr ---\n", 1)[0] if name == "stdout" else text


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (links as their target text) to tell whether anything changed."""
    found: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = b"->" + os.readlink(path).encode()
        elif path.is_file():
            found[rel] = path.read_bytes()
    return found


@pytest.fixture
def make_run(outside: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """``make_run(limits=None, git=False, before_open=None) -> Run``: a fresh run to attack.

    Sets ``HORIZON_HOME`` to the case's folder (as a user who moved it out of the home would),
    makes a sibling run holding a secret, and opens the sandbox the way the runner does.
    ``before_open(run_folder)`` runs just before the sandbox is opened (e.g. to move HOME).
    """

    def make(limits: SandboxLimits | None = None, *, git: bool = False, before_open=None) -> Run:  # type: ignore[no-untyped-def]
        case = Path(tempfile.mkdtemp(prefix="case-", dir=outside))
        token = f"HORIZON-SECRET-{uuid.uuid4().hex}"
        home = case / "horizon-home"
        folder = home / "runs" / "run-a"
        workspace, scratch = folder / "workspace", folder / "scratch"
        shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        scratch.mkdir()
        (folder / "baseline.git").mkdir()  # stands in for the runner's baseline database
        (folder / "baseline.git" / "HEAD").write_text(f"ref: refs/heads/main {token}\n")
        other = home / "runs" / "run-b"
        (other / "workspace" / "users").mkdir(parents=True)
        (other / "workspace" / "users" / "secret.py").write_text(f"API_TOKEN = '{token}'\n")
        (other / "scratch").mkdir()
        (other / "scratch" / "baseline.json").write_text(f'{{"token": "{token}"}}\n')
        visible = case / "visible"
        visible.mkdir()
        (visible / "target.txt").write_text("original\n")
        if git:
            import subprocess

            subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
            subprocess.run(["git", "add", "-A"], cwd=workspace, check=True)
            subprocess.run(
                ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"], cwd=workspace, check=True
            )
        monkeypatch.setenv("HORIZON_HOME", str(home))
        if before_open is not None:
            before_open(case)
        sandbox = open_sandbox(workspace, scratch, limits=limits)
        return Run(ToolContext(workspace=workspace, sandbox=sandbox, scratch=scratch), home, folder, visible, token)

    return make


@pytest.fixture
def run(make_run) -> Run:  # type: ignore[no-untyped-def]
    """A fresh run with the default limits."""
    return make_run()
