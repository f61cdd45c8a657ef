"""A newcomer's walk-through as a test (issue 30): every command block of the README and of the
``docs/`` pages, run as a reader would run it, from the checkout's root.

Each shell block (```` ```sh ````, ```` ```bash ````, or ```` ```text ```` whose first line is a
``$`` prompt) of ``README.md`` and ``docs/*.md`` is split into its commands (continued lines and
multi-line quotes joined, comments dropped). Every command must be in ``RUN`` (this test runs it)
or in ``NOT_IN_CI`` (with the reason it cannot run here): a command added to the docs fails
``test_every_documented_command_is_run_or_listed`` until it is classified, and a command removed
from them fails it until its entry goes.

Commands run in bash against the example repositories (``examples/``), with the scripted
policy where a model is needed, in a temporary ``HOME`` whose ``.horizon`` is ``HORIZON_HOME``
(so ``~/.horizon/...`` in the docs is true too); ``agent`` and ``.venv/bin/agent`` are this
interpreter's ``core.cli``. Placeholders are filled in: ``RUN_ID`` (the README's scripted run),
``path/to/your/repo`` (a copy of ``examples/python-user-service``), ``/tmp/ex`` (an exchange
folder). Where the docs show output (the README's captured scripted run), the printed lines must
match it, loosely on what changes from run to run (ids, seconds, ``...`` elisions).
"""

from __future__ import annotations

import json
import os
import pty
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from plugins.coding.reward import REWARD_VERSION

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUN_ID = re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{4}\b")

#: Documented commands that this test cannot run, each with why (the key is the command as
#: ``Command.key`` writes it: its words, comments dropped).
NOT_IN_CI: dict[str, str] = {
    "./setup.sh && .venv/bin/agent run coding \"fix NPE in user module\" --repo examples/java-user-service":
        "setup.sh installs system packages with sudo (bubblewrap, a JDK, Chromium, ...); the embedded 135M model's run "
        "takes minutes on 2 cores (the README's stated time); the embedded model is tested in tests/core/policy/test_embedded.py",
    "./setup.sh && .venv/bin/python -m pytest":
        "setup.sh installs system packages with sudo; the test suite is what CI runs (this test is part of it)",
    "agent serve Qwen/Qwen3-8B": "needs a GPU, vLLM and the model's weights from a model hub",
    "python3.12 -m venv .harbor-venv && . .harbor-venv/bin/activate":
        "Harbor needs Python 3.12 or newer, which Debian bookworm (this machine kind) does not have; "
        "tests/plugins/coding/test_harbor_agent.py drives HorizonAgent through Harbor's documented interface",
    "pip install harbor 'horizon-agents[coding]'": "installs Harbor into the Python 3.12 environment above (none here)",
    "harbor run --path suites/terminal-bench/fix-calc --agent-import-path plugins.coding.harbor:HorizonAgent --model openai/Qwen3-8B --agent-kwarg base_url=http://localhost:8000/v1":
        "needs Harbor (Python 3.12+) and a model server; tests/plugins/coding/test_harbor_real.py runs Harbor itself "
        "where HORIZON_HARBOR_PYTHON names a 3.12 interpreter with harbor installed",
    "cd path/to/your/repo && agent run coding \"fix the failing date parsing test\" --base-url http://localhost:8000/v1 --model Qwen/Qwen3-8B":
        "needs a model server serving Qwen3-8B; a dead --base-url is tested in tests/core/test_cli.py (the probe)",
    'agent run coding "fix the failing date parsing test"':
        "the embedded 135M model: minutes on 2 cores; tests/core/test_cli.py runs it for one step",
    "agent run coding \"...\" --base-url http://localhost:8000/v1 --model Qwen/Qwen3-8B": "needs a model server",
    "agent run coding \"...\" --tool-format text ...": "needs a model server (and '...' stands for the other flags)",
    "agent eval coding suites/coding --policy reference --workers 2":
        "21 tasks whose repositories are built from PyPI sdists: about 10 minutes; tests/integration/test_ui_browser.py "
        "runs one of them; this test runs the same command on suites/terminal-bench",
    "agent mcp threed --blender 9876": "needs an open Blender with the Horizon add-on listening (Listen for MCP)",
    ".venv/bin/python bench/mesh_checks.py --markdown":
        "reads ../shared/data/meshes, the shared mesh files, which a checkout does not have",
    ".venv/bin/python -m pytest -p no:randomly -q tests/plugins/threed/test_threed_print3d.py tests/plugins/threed/test_threed_meshes.py":
        "runs tests that CI runs anyway",
    ".venv/bin/python -m pytest tests/security -q": "runs tests that CI runs anyway",
}

#: Documented commands this test runs: the key, and the test function that runs it.
RUN: dict[str, str] = {
    ".venv/bin/agent run coding \"fix NPE in user module\" --repo examples/java-user-service --policy scripted --script "
    "examples/scripts/fix-java-npe.jsonl": "test_the_readme_scripted_run_prints_what_the_readme_shows",
    "agent runs": "test_runs_show_resume_plugins",
    "agent show RUN_ID": "test_runs_show_resume_plugins",
    "agent resume RUN_ID": "test_runs_show_resume_plugins",
    "agent plugins": "test_runs_show_resume_plugins",
    "agent apply RUN_ID": "test_apply_asks_at_a_terminal_and_applies",
    "cd path/to/your/repo": "test_runs_show_resume_plugins",
    "agent export --all --format sft-jsonl --out data.jsonl": "test_export_serve_dry_run_and_the_addon",
    "agent serve Qwen/Qwen3-8B --fast --dry-run": "test_export_serve_dry_run_and_the_addon",
    "agent threed build-addon": "test_export_serve_dry_run_and_the_addon",
    "agent eval coding suites/terminal-bench --policy reference": "test_eval_of_terminal_bench",
    "agent run coding \"...\" --policy human --exchange /tmp/ex": "test_you_play_the_model",
    "agent human wait /tmp/ex": "test_you_play_the_model",
    "agent human answer /tmp/ex --tool view_file --args '{\"path\": \"a.py\"}'": "test_you_play_the_model",
    "agent mcp coding --repo .": "test_mcp_over_stdio",
    "agent ui": "test_agent_ui_serves_the_runs",
    "agent server --workers 2 --port 8766": "test_the_service_block",
    "agent server --workers 2": "test_the_service_block",
    'H="Authorization: Bearer $(cat ~/.horizon/server.token)"': "test_the_service_block",
    "curl -s -X POST localhost:8766/api/runs -H \"$H\" -H 'content-type: application/json' -d '{ \"plugin\": \"coding\", \"task\": "
    "\"fix NPE in user module\", \"repo\": \"examples/python-user-service\", \"policy\": \"scripted\", \"script\": "
    "\"examples/scripts/fix-python-npe.jsonl\", \"limits\": {\"max_steps\": 20}}'": "test_the_service_block",
    "curl -s -H \"$H\" 'localhost:8766/api/runs?limit=100&offset=0'": "test_the_service_block",
    'curl -s -H "$H" localhost:8766/api/runs/RUN_ID': "test_the_service_block",
    'curl -N -H "$H" localhost:8766/api/runs/RUN_ID/events': "test_the_service_block",
    'curl -s -X POST -H "$H" localhost:8766/api/runs/RUN_ID/cancel': "test_the_service_block",
    'curl -s -H "$H" localhost:8766/metrics': "test_the_service_block",
}


@dataclass
class Command:
    """One documented command: where it is, its text (comments dropped), the output lines shown under it."""

    page: str
    line: int
    text: str
    output: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """The command as one line: continuation backslashes joined, comments dropped, each run of white space one space."""
        return _one_line(self.text)


def _one_line(text: str) -> str:
    out, quote, i = [], "", 0
    while i < len(text):
        ch = text[i]
        if quote:
            out.append(ch)
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
            out.append(ch)
        elif ch == "#" and (not out or out[-1].isspace()):
            while i < len(text) and text[i] != "\n":  # a comment: to the end of the line
                i += 1
            continue
        elif ch == "\\" and text[i + 1:i + 2] == "\n":
            i += 2
            out.append(" ")
            continue
        else:
            out.append(" " if ch.isspace() else ch)
        i += 1
    joined = "".join(out)
    return re.sub(r"\s+", " ", joined).strip()  # inside quotes too: a JSON body's line breaks and indents are one space


def _complete(text: str) -> bool:
    """Whether ``text`` is a whole shell command (no open quote, no trailing backslash)."""
    if text.rstrip().endswith("\\"):
        return False
    try:
        shlex.split(text, comments=True)
    except ValueError:
        return False
    return True


def documented_commands() -> list[Command]:
    """Every command of every shell block of the README and the docs pages, in page order."""
    found: list[Command] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
            lang, body = block.group(1), block.group(2)
            start = text.count("\n", 0, block.start(2)) + 1
            prompted = lang == "text" and body.lstrip().startswith("$ ")
            if lang not in ("sh", "bash", "console") and not prompted:
                continue
            lines, pending, current = body.splitlines(), "", None
            for number, line in enumerate(lines, start):
                if prompted and not pending:
                    if not line.startswith("$ "):  # output shown under the last command
                        if current is not None and line.strip():
                            current.output.append(line)
                        continue
                    line = line[2:]
                if not pending and (not line.strip() or line.lstrip().startswith("#")):
                    continue  # a blank line, or a comment on its own (also one continuing the last line's comment)
                pending = f"{pending}\n{line}" if pending else line
                if _complete(pending):
                    current = Command(page.relative_to(REPO).as_posix(), number, pending)
                    found.append(current)
                    pending = ""
            assert not pending, f"{page.name}:{start}: an unterminated command: {pending!r}"
    return found


def test_every_documented_command_is_run_or_listed():
    """Every documented command is either run below or listed in ``NOT_IN_CI`` with a reason, and
    neither table names a command the docs no longer show."""
    keys = {c.key: c for c in documented_commands()}
    unclassified = [f"{c.page}:{c.line}: {k}" for k, c in keys.items() if k not in RUN and k not in NOT_IN_CI]
    assert not unclassified, "documented commands this test neither runs nor lists in NOT_IN_CI:\n" + "\n".join(unclassified)
    stale = sorted((set(RUN) | set(NOT_IN_CI)) - set(keys))
    assert not stale, f"commands listed here that no page documents any more: {stale}"
    assert not set(RUN) & set(NOT_IN_CI)
    assert all(reason.strip() for reason in NOT_IN_CI.values())
    assert set(RUN.values()) <= {name for name in globals() if name.startswith("test_")}


# --- running them -----------------------------------------------------------------------------


def _free_port(preferred: int) -> int:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            sock.bind(("127.0.0.1", 0))
            return sock.getsockname()[1]


@dataclass
class Reader:
    """The newcomer's machine: a HOME with ``.horizon`` in it, ``agent`` on PATH, their repository."""

    home: Path
    env: dict[str, str]
    repo: Path
    exchange: Path
    examples: Path  # a folder holding a copy of examples/: the README's commands run there, so its apply changes no checkout file
    run_id: str = ""

    def fill(self, command: str) -> str:
        """The command with its placeholders filled in."""
        return (command.replace("RUN_ID", self.run_id).replace("path/to/your/repo", str(self.repo))
                .replace("/tmp/ex", str(self.exchange)).replace(".venv/bin/agent", "agent"))

    def sh(self, key: str, *, cwd: Path = REPO, timeout: float = 300, ok: bool = True) -> subprocess.CompletedProcess[str]:
        """Run the documented command ``key`` (its placeholders filled) in bash; ``ok``: it must exit 0."""
        assert key in RUN, key
        command = self.fill(key)
        done = subprocess.run(["bash", "-c", command], cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout, check=False)
        if ok:
            assert done.returncode == 0, f"$ {command}\nexit {done.returncode}\n{done.stdout}\n{done.stderr}"
        return done

    def start(self, command: str, *, cwd: Path = REPO) -> subprocess.Popen[str]:
        """Start a documented command in the background, in its own process group."""
        command = self.fill(command)
        return subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=cwd, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _stop(process: subprocess.Popen[str], timeout: float = 30) -> str:
    """SIGINT (as Ctrl-C), then SIGKILL; returns what it printed."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
    return process.stdout.read() if process.stdout and not process.stdout.closed else ""


@pytest.fixture(scope="module")
def reader(tmp_path_factory) -> Reader:
    """A fresh HOME and HORIZON_HOME (``~/.horizon``), ``agent`` on PATH, the reader's repository."""
    root = tmp_path_factory.mktemp("newcomer")
    home, bin_dir = root / "home", root / "bin"
    home.mkdir()
    bin_dir.mkdir()
    agent = bin_dir / "agent"  # what .venv/bin/agent is: the console script of core.cli:main
    agent.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -c "from core.cli import main; main()" "$@"\n')
    agent.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORIZON_") or k in ("HORIZON_SOURCES_CACHE", "HORIZON_TEST_ENV")}
    env.update(HOME=str(home), HORIZON_HOME=str(home / ".horizon"), PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p), COLUMNS="200", NO_COLOR="1")
    repo = Path(shutil.copytree(REPO / "examples" / "python-user-service", root / "your-repo"))
    examples = root / "checkout"
    for name in ("java-user-service", "scripts"):
        shutil.copytree(REPO / "examples" / name, examples / "examples" / name)
    return Reader(home=home, env=env, repo=repo, exchange=root / "ex", examples=examples)


def _pattern(shown: str) -> re.Pattern[str]:
    """A documented output line as a regex: ``...`` (the docs leave out) is anything; seconds, sizes,
    run ids and the Horizon home's path may differ; the printer's own ``…`` must be where it is."""
    out = []
    for piece in re.split(r"(\.\.\.|\d+(?:\.\d+)? ?s\b|\(\d+ bytes\)|\d{8}-\d{6}-[0-9a-f]{4}|~/\.horizon)", shown.strip()):
        if piece == "...":
            out.append(".*")
        elif re.fullmatch(r"\d+(?:\.\d+)? ?s", piece):
            out.append(r"\d+(?:\.\d+)? ?s")
        elif re.fullmatch(r"\(\d+ bytes\)", piece):
            out.append(r"\(\d+ bytes\)")
        elif RUN_ID.fullmatch(piece):
            out.append(RUN_ID.pattern)
        elif piece == "~/.horizon":
            out.append(r"\S*\.horizon")
        elif piece.strip():
            lead, trail = (r"\s+" if piece[:1].isspace() else ""), (r"\s+" if piece[-1:].isspace() else "")
            out.append(lead + r"\s+".join(re.escape(word) for word in piece.split()) + trail)
        elif piece:
            out.append(r"\s+")
    return re.compile("".join(out))


def test_the_readme_scripted_run_prints_what_the_readme_shows(reader):
    """The README's captured scripted run: it exits 0 and prints each shown line, in order."""
    (command,) = [c for c in documented_commands() if c.page == "README.md" and "--policy scripted" in c.key]
    assert len(command.output) >= 10, command.output
    done = reader.sh(command.key, cwd=reader.examples)
    printed = done.stdout.splitlines()
    at = 0
    for shown in command.output:
        pattern = _pattern(shown)
        for index in range(at, len(printed)):
            if pattern.search(printed[index]):
                at = index + 1
                break
        else:
            raise AssertionError(f"README.md:{command.line}: the run no longer prints (after line {at}):\n  {shown}\n"
                                 f"as /{pattern.pattern}/; it printed:\n" + done.stdout)
    reader.run_id = RUN_ID.search(done.stdout).group(0)
    assert (reader.home / ".horizon" / "runs" / reader.run_id / "patch.diff").is_file()  # where the README's last line says


@pytest.fixture(scope="module")
def a_run(reader) -> str:
    """The README's scripted run, made if its own test did not run first (``-k``)."""
    if not reader.run_id:
        test_the_readme_scripted_run_prints_what_the_readme_shows(reader)
    return reader.run_id


def test_runs_show_resume_plugins(reader, a_run):
    reader.sh("cd path/to/your/repo")
    listed = reader.sh("agent runs").stdout
    assert a_run in listed and "submitted" in listed and "coding" in listed
    shown = reader.sh("agent show RUN_ID").stdout
    assert "edit_file" in shown and f"reward 1.000 ({REWARD_VERSION}, scored)" in shown
    resumed = reader.sh("agent resume RUN_ID", ok=False)  # a finished run: nothing to continue, and it says so
    assert "has already finished" in resumed.stdout, resumed.stdout + resumed.stderr
    plugins = reader.sh("agent plugins").stdout
    assert all(name in plugins for name in ("coding", "threed", "finance")), plugins


def test_apply_asks_at_a_terminal_and_applies(reader, a_run):
    """``agent apply RUN_ID`` at a terminal (a pty): the review, the question, "y", applied to the
    run's repository (the copy of examples/java-user-service the README's command named)."""
    target = reader.examples / "examples" / "java-user-service"
    source = target / "src/main/java/com/example/users/UserService.java"
    before = source.read_text()
    leader, follower = pty.openpty()
    process = subprocess.Popen(["bash", "-c", reader.fill("agent apply RUN_ID")], cwd=reader.examples, stdin=follower, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=reader.env)
    os.close(follower)
    try:
        os.write(leader, b"y\n")
        said, _ = process.communicate(timeout=120)
    finally:
        os.close(leader)
    assert "UserService.java" in said and "apply these changes" in said, said
    assert process.returncode == 0 and "applied" in said, said
    assert source.read_text() != before


def test_export_serve_dry_run_and_the_addon(reader, a_run, tmp_path):
    reader.sh("agent export --all --format sft-jsonl --out data.jsonl", cwd=tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "data.jsonl").read_text().splitlines()]
    assert rows and all(row["messages"] for row in rows)
    served = reader.sh("agent serve Qwen/Qwen3-8B --fast --dry-run").stdout  # the engine command, with or without vLLM installed
    assert served.startswith("vllm serve Qwen/Qwen3-8B ") and "--enable-auto-tool-choice" in served and "--speculative-config" in served, served
    reader.sh("agent threed build-addon", cwd=tmp_path)
    assert list(tmp_path.glob("*.zip")), list(tmp_path.iterdir())


def test_eval_of_terminal_bench(reader):
    done = reader.sh("agent eval coding suites/terminal-bench --policy reference", timeout=400)
    assert "3/3 tasks" in done.stdout and "summary (JSON)" in done.stdout, done.stdout


def test_you_play_the_model(reader):
    """``agent run ... --policy human`` in one terminal, ``agent human wait``/``answer`` in another."""
    run = reader.start("agent run coding \"...\" --policy human --exchange /tmp/ex", cwd=reader.repo)
    try:
        waited = reader.sh("agent human wait /tmp/ex", timeout=200).stdout
        assert "=== request 1:" in waited and "* tool view_file:" in waited and "* tool finish:" in waited, waited
        reader.sh("agent human answer /tmp/ex --tool view_file --args '{\"path\": \"a.py\"}'")
        again = reader.sh("agent human wait /tmp/ex", timeout=120).stdout
        assert "=== request 2:" in again and "a.py" in again and "* tool" not in again, again  # only what was added: that call's observation
        finish = subprocess.run(["agent", "human", "answer", str(reader.exchange), "--tool", "finish", "--args", '{"summary": "looked"}'],
                                env=reader.env, capture_output=True, text=True, timeout=60, check=True)
        assert finish.returncode == 0
        out, _ = run.communicate(timeout=200)
    finally:
        said = _stop(run)
    assert run.returncode == 0, out + said
    assert "finish" in out and "submitted" in out, out


def test_mcp_over_stdio(reader):
    """``agent mcp coding --repo .`` in the reader's repository: initialize, then the tool list,
    each answer read before the next message is sent (as an MCP client does)."""
    import threading

    server = subprocess.Popen(["bash", "-c", reader.fill("agent mcp coding --repo .")], cwd=reader.repo, env=reader.env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(120, server.kill)  # a server that stops answering fails the test, not the suite
    watchdog.start()

    def ask(message: dict) -> dict:
        server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()
        while line := server.stdout.readline():
            answer = json.loads(line)
            if answer.get("id") == message["id"]:
                return answer
        raise AssertionError(f"agent mcp ended without answering {message['method']}: {server.stderr.read()}")

    try:
        started = ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "readme-test", "version": "1"}}})
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        listed = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    finally:
        watchdog.cancel()
        server.stdin.close()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
    assert started["result"]["serverInfo"]["name"], started
    tools = {t["name"] for t in listed["result"]["tools"]}
    assert {"view_file", "edit_file", "run_tests", "finish"} <= tools, tools


def test_agent_ui_serves_the_runs(reader, a_run):
    port = _free_port(8765)
    ui = reader.start("agent ui" + ("" if port == 8765 else f" --port {port}"))
    try:
        page = _get(f"http://127.0.0.1:{port}/", timeout=60)
        assert a_run in page and "Horizon" in page
        assert "Evaluations" in _get(f"http://127.0.0.1:{port}/evals")
    finally:
        _stop(ui)


def _get(url: str, timeout: float = 10, headers: dict[str, str] | None = None) -> str:
    """GET ``url``, retrying until ``timeout`` while the server is starting."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as answer:
                return answer.read().decode()
        except (ConnectionError, urllib.error.URLError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def test_the_service_block(reader, tmp_path):
    """docs/service.md's block, line by line: the server, the token, submit, list, read, events, cancel, metrics."""
    if not shutil.which("curl"):
        pytest.fail("curl is not installed (apt-get install curl): docs/service.md's block uses it")
    port = str(_free_port(8766))
    keys = [c.key for c in documented_commands() if c.page == "docs/service.md"]
    assert keys[0] == "agent server --workers 2 --port 8766" and keys[1].startswith("H=")
    server = reader.start(keys[0].replace("8766", port))
    try:
        token = reader.home / ".horizon" / "server.token"
        deadline = time.monotonic() + 120
        while not token.exists() or not _listening(int(port)):
            assert server.poll() is None, _stop(server)
            assert time.monotonic() < deadline, "agent server did not start in 120 s: " + _stop(server)
            time.sleep(0.5)
        prelude = keys[1] + "\n"

        def curl(key: str, run_id: str = "") -> str:
            script = prelude + reader.fill(key.replace("RUN_ID", run_id)).replace("8766", port)
            done = subprocess.run(["bash", "-c", script], cwd=REPO, env=reader.env, capture_output=True, text=True, timeout=120, check=False)
            assert done.returncode == 0, f"{key}\n{done.stdout}\n{done.stderr}"
            return done.stdout

        submitted = json.loads(curl(keys[2]))
        assert submitted["state"] == "queued" and RUN_ID.fullmatch(submitted["run_id"]), submitted  # as the block's comment shows
        run_id = submitted["run_id"]
        listed = json.loads(curl(keys[3]))
        assert run_id in json.dumps(listed)
        deadline = time.monotonic() + 240
        while (state := json.loads(curl(keys[4], run_id))).get("state") not in ("done", "failed", "cancelled"):
            assert time.monotonic() < deadline, state
            time.sleep(1)
        assert state["state"] == "done" and state["detail"].startswith("submitted"), state
        events = curl(keys[5], run_id)  # a finished run's events: every message, then the end
        assert "event: end" in events, events[-500:]
        cancelled = json.loads(curl(keys[6], run_id))  # a finished run cannot be cancelled: said (409), not a crash
        assert cancelled == {"run_id": run_id, "state": "done", "error": f"run {run_id} has already ended (done)"}, cancelled
        metrics = curl(keys[7])
        assert re.search(r'^horizon_runs\{status="finished"\} [1-9]', metrics, re.MULTILINE), metrics[:800]
    finally:
        said = _stop(server, timeout=60)
    assert "Traceback" not in said, said


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0
