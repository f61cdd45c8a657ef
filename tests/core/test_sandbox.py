"""The process sandbox, with real bwrap and real processes.

Each test states what must hold and fails if the isolation or a limit is missing. Run as root
(cgroups) and as an ordinary user (RLIMIT_NPROC, RLIMIT_AS on cgroup v2 without delegation).
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from core.errors import SandboxUnavailable
from core.sandbox import (
    BwrapSandbox,
    ProcessResult,
    Sandbox,
    SandboxLimits,
    UnconfinedSandbox,
    open_sandbox,
    self_check,
)
from core.sandbox import limits as limits_module
from core.sandbox.bwrap import build_bwrap_argv
from core.sandbox.limits import CgroupMounts, Confinement, count_user_tasks, parse_cgroup_mounts
from core.sandbox.process import decode_head

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")

FAST = SandboxLimits(timeout_s=20)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    return tmp_path / "scratch"


@pytest.fixture
def sandbox(workspace: Path, scratch: Path) -> BwrapSandbox:
    return BwrapSandbox(workspace, scratch, limits=FAST)


def sh(sandbox: Sandbox, script: str, **kwargs) -> ProcessResult:
    return sandbox.run(["bash", "-c", script], **kwargs)


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains ``marker`` (like ``pgrep -f``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


# --- the basics ------------------------------------------------------------------------------


def test_protocol_and_flags(sandbox: BwrapSandbox, workspace: Path, scratch: Path) -> None:
    assert isinstance(sandbox, Sandbox)
    assert sandbox.isolated is True
    assert UnconfinedSandbox(workspace, scratch).isolated is False


def test_exit_code_and_output(sandbox: BwrapSandbox, workspace: Path) -> None:
    result = sh(sandbox, "echo out; echo err >&2; pwd; exit 3")
    assert result.exit_code == 3 and not result.ok and not result.timed_out
    assert result.stdout == f"out\n{workspace}\n"
    assert result.stderr == "err\n"
    assert result.stdout_bytes == len(result.stdout.encode())
    assert result.argv == ["bash", "-c", "echo out; echo err >&2; pwd; exit 3"]
    assert sandbox.run(["true"]).ok


def test_cwd_inside_workspace(sandbox: BwrapSandbox, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    assert sandbox.run(["pwd"], cwd=Path("sub")).stdout.strip() == str(workspace / "sub")
    with pytest.raises(ValueError):
        sandbox.run(["pwd"], cwd=Path("/etc"))


def test_signalled_process_has_negative_exit_code(sandbox: BwrapSandbox) -> None:
    assert sh(sandbox, "kill -TERM $$").exit_code == -15


def test_missing_program_is_127_not_an_exception(sandbox: BwrapSandbox) -> None:
    result = sandbox.run(["nonexistent-cmd"])
    assert result.exit_code == 127
    assert "nonexistent-cmd" in result.stderr and "No such file" in result.stderr


def test_stdin_text_or_nothing(sandbox: BwrapSandbox) -> None:
    assert sandbox.run(["cat"], stdin="hello\nworld").stdout == "hello\nworld"
    started = time.monotonic()
    result = sandbox.run(["cat"])  # /dev/null: ends at once instead of waiting for input
    assert result.ok and result.stdout == "" and time.monotonic() - started < 5


def test_output_cap_keeps_head_and_counts_total(sandbox: BwrapSandbox) -> None:
    limits = FAST.model_copy(update={"output_bytes": 1000})
    result = sandbox.run(
        ["python3", "-c", "import sys; sys.stdout.write('a' * 300000); sys.stderr.write('é' * 5000)"], limits=limits
    )
    assert result.ok
    assert result.stdout == "a" * 1000 and result.stdout_bytes == 300000
    assert result.stderr == "é" * 500 and result.stderr_bytes == 10000  # no half character kept
    assert result.truncated


def test_decode_head_drops_split_character() -> None:
    data = "aé".encode()[:2]  # the cut split é
    assert decode_head(data, total=3) == "a"
    assert decode_head("aé".encode(), total=3) == "aé"


# --- isolation -------------------------------------------------------------------------------


def test_host_environment_is_not_inherited(sandbox: BwrapSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "secret-host-key")
    result = sandbox.run(["env"], env={"GIVEN": "yes"})
    assert "secret-host-key" not in result.stdout and "OPENAI_API_KEY" not in result.stdout
    env = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert env["GIVEN"] == "yes"
    assert env["HOME"] == "/tmp" and env["TMPDIR"] == "/tmp" and env["LANG"] == "C.UTF-8"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["PATH"].split(":")[0] == str(Path(sys.prefix) / "bin")


def test_python_environment_is_usable_inside(sandbox: BwrapSandbox) -> None:
    result = sandbox.run(["python", "-c", "import sys, pytest, pydantic; print(sys.prefix)"])
    assert result.ok, result.stderr
    assert result.stdout.strip() == sys.prefix


def test_network_is_refused_unless_allowed(workspace: Path, scratch: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[bytes] = []

    def accept() -> None:
        server.settimeout(15)
        try:
            conn, _ = server.accept()
            accepted.append(conn.recv(100))
            conn.close()
        except OSError:
            pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    client = (
        f"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=5); s.sendall(b'hi'); print('connected')"
    )
    try:
        closed = BwrapSandbox(workspace, scratch, limits=FAST).run(["python3", "-c", client])
        assert not closed.ok and "connected" not in closed.stdout
        assert "ConnectionRefused" in closed.stderr or "unreachable" in closed.stderr.lower()
        # The same command reaches the server when the network is allowed: the test can fail.
        opened = BwrapSandbox(workspace, scratch, limits=FAST, allow_network=True).run(["python3", "-c", client])
        assert opened.ok and "connected" in opened.stdout
        thread.join(10)
        assert accepted == [b"hi"]
    finally:
        server.close()


def test_writes_outside_the_workspace_do_not_reach_the_host(sandbox: BwrapSandbox, workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "link-out").symlink_to(outside)
    (workspace / "link-etc").symlink_to("/etc")
    var_tmp = Path("/var/tmp") / f"horizon-escape-{uuid.uuid4().hex}"
    script = f"""
        echo x > {outside}/absolute
        echo x > ../escape-up
        echo x > link-out/through-link
        echo x > link-etc/horizon-escape
        echo x > {var_tmp}
        echo inside > ok.txt
    """
    result = sh(sandbox, script)
    assert (workspace / "ok.txt").read_text() == "inside\n"  # the workspace itself is writable
    assert not list(outside.iterdir())
    assert not (tmp_path / "escape-up").exists()
    assert not Path("/etc/horizon-escape").exists()
    assert not var_tmp.exists()
    assert "Read-only file system" in result.stderr  # /etc and /var/tmp: the host's / is read-only


def test_with_mounts_shows_a_host_folder_read_only_in_the_workspace_never_through_a_link(
    sandbox: BwrapSandbox, workspace: Path, tmp_path: Path
) -> None:
    installed = tmp_path / "cache" / "node_modules"
    (installed / "ms").mkdir(parents=True)
    (installed / "ms" / "index.js").write_text("module.exports = 42\n")
    mounted = sandbox.with_mounts({"node_modules": installed})
    result = sh(mounted, "cat node_modules/ms/index.js; touch node_modules/new; echo x > node_modules/ms/index.js")
    assert result.stdout == "module.exports = 42\n" and "Read-only file system" in result.stderr
    assert (installed / "ms" / "index.js").read_text() == "module.exports = 42\n" and not (installed / "new").exists()
    assert (workspace / "node_modules").is_dir() and not list((workspace / "node_modules").iterdir())  # only the mount point
    assert sh(sandbox, "ls node_modules").stdout == ""  # the sandbox it was copied from is unchanged
    # A node_modules the workspace's content made a link: nothing is mounted or made through it.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = tmp_path / "ws2"
    other.mkdir()
    (other / "node_modules").symlink_to(elsewhere)
    linked = BwrapSandbox(other, tmp_path / "scratch2", limits=FAST).with_mounts({"node_modules": installed})
    assert sh(linked, "ls node_modules/").stdout == "" and not list(elsewhere.iterdir())


def test_no_capabilities_so_no_remounting(sandbox: BwrapSandbox) -> None:
    # Run as root, bwrap would leave the command every capability: enough to remount / writable.
    result = sh(sandbox, "grep CapEff /proc/self/status; mount -o remount,rw,bind / && touch /etc/horizon-remounted")
    assert "CapEff:\t0000000000000000" in result.stdout
    assert not Path("/etc/horizon-remounted").exists()


def test_git_folder_is_read_only(sandbox: BwrapSandbox, workspace: Path) -> None:
    git = workspace / ".git"
    git.mkdir()
    (git / "config").write_text("[core]\n")
    result = sh(sandbox, "echo evil >> .git/config; rm -rf .git; touch .git/new; echo done")
    assert "done" in result.stdout
    assert (git / "config").read_text() == "[core]\n"
    assert not (git / "new").exists()


def test_home_folder_and_root_are_hidden(workspace: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A home outside /tmp (which is hidden anyway), so that only the home masking can hide it.
    home = Path(tempfile.mkdtemp(prefix="horizon-test-home-", dir="/var/tmp"))
    try:
        (home / ".ssh").mkdir()
        (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
        monkeypatch.setenv("HOME", str(home))
        sandbox = BwrapSandbox(workspace, scratch, limits=FAST)
        result = sandbox.run(["cat", str(home / ".ssh" / "id_ed25519")])
        assert result.exit_code != 0 and "PRIVATE KEY" not in result.stdout
        listing = sandbox.run(["ls", "-A", "/root"]).stdout.split()
    finally:
        shutil.rmtree(home)
    # /root holds nothing but the way to a re-bound Python installation (pyenv keeps it there).
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix)}
    for name in listing:
        assert any(Path("/root", name) in (p, *p.parents) for p in prefixes), name


# --- limits ----------------------------------------------------------------------------------


def test_timeout_kills_the_command(sandbox: BwrapSandbox) -> None:
    result = sandbox.run(["sleep", "60"], limits=FAST.model_copy(update={"timeout_s": 1.0}))
    assert result.timed_out and not result.ok and result.exit_code == -9
    assert result.duration_s < 5


def test_detached_processes_do_not_outlive_the_command(sandbox: BwrapSandbox) -> None:
    marker = f"{uuid.uuid4().int % 10**12:012d}"  # sleep 300.<marker>: a unique command line
    script = f"""
        setsid sleep 300.{marker} &
        nohup sleep 301.{marker} > /dev/null 2>&1 &
        ( ( sleep 302.{marker} & ) & )
        sleep 0.3
        ps -eo args | grep -c '^sleep 30[012].{marker}'
    """
    result = sh(sandbox, script)
    assert result.ok and result.stdout.strip() == "3", result  # they did start
    assert processes_with(f".{marker}") == []


def test_nothing_outlives_a_killed_agent(workspace: Path, scratch: Path) -> None:
    """SIGKILL the process that started a sandboxed command: bwrap and the command go with it."""
    marker = f"{uuid.uuid4().int % 10**12:012d}"
    agent = f"""
from pathlib import Path
from core.sandbox import BwrapSandbox
BwrapSandbox(Path({str(workspace)!r}), Path({str(scratch)!r})).run(["bash", "-c", "touch started; exec sleep 300.{marker}"])
"""
    proc = subprocess.Popen([sys.executable, "-c", agent], cwd=Path(__file__).parents[2])
    deadline = time.monotonic() + 30
    while not (workspace / "started").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the sandboxed command did not start"
        time.sleep(0.05)
    assert processes_with(f"300.{marker}")  # running, inside bwrap
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 5
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker) == []  # neither the command nor bwrap (its argv names the command)


def test_process_limit(sandbox: BwrapSandbox) -> None:
    limits = FAST.model_copy(update={"max_processes": 40})
    forker = (
        "import os, time\n"
        "made = 0\n"
        "for _ in range(200):\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30)\n"
        "            os._exit(0)\n"
        "        made += 1\n"
        "    except OSError:\n"
        "        break\n"
        "print(made)\n"
    )
    result = sandbox.run(["python3", "-c", forker], limits=limits)
    assert result.ok, result.stderr
    # 40, give or take what the user runs meanwhile (RLIMIT_NPROC counts all of a user's tasks);
    # without a limit all 200 forks succeed.
    assert 10 < int(result.stdout) < 100


def test_fork_bomb_is_contained(sandbox: BwrapSandbox) -> None:
    limits = FAST.model_copy(update={"timeout_s": 3.0, "max_processes": 64})
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    started = time.monotonic()
    result = sandbox.run(["python3", "-c", bomb], limits=limits)
    assert result.timed_out and time.monotonic() - started < 10
    assert subprocess.run(["true"], check=False).returncode == 0  # this process can still fork


@pytest.mark.parametrize("use_cgroups", [True, False], ids=["cgroup", "rlimit"])
def test_memory_bomb_is_stopped(workspace: Path, scratch: Path, use_cgroups: bool) -> None:
    sandbox = BwrapSandbox(workspace, scratch, limits=FAST, use_cgroups=use_cgroups)
    hog = "chunks = []\nfor _ in range(64):\n    chunks.append(b'x' * (16 << 20))\nprint('survived')"
    result = sandbox.run(["python3", "-c", hog], limits=FAST.model_copy(update={"memory_bytes": 256 << 20}))
    assert not result.ok and "survived" not in result.stdout
    assert result.exit_code == -9 or "MemoryError" in result.stderr
    if result.exit_code == -9:  # the cgroup's OOM killer: the result says so
        assert "killed by the memory limit" in result.stderr


def test_file_size_limit(sandbox: BwrapSandbox, workspace: Path) -> None:
    limits = FAST.model_copy(update={"file_size_bytes": 1 << 20})
    result = sh(sandbox, "head -c 3000000 /dev/zero > big", limits=limits)
    assert not result.ok
    assert (workspace / "big").stat().st_size <= 1 << 20


@pytest.mark.skipif(shutil.which("javac") is None, reason="no JDK")
@pytest.mark.parametrize("use_cgroups", [True, False], ids=["cgroup", "rlimit"])
def test_jvm_runs_under_default_limits(workspace: Path, scratch: Path, use_cgroups: bool) -> None:
    sandbox = BwrapSandbox(workspace, scratch, use_cgroups=use_cgroups)  # the default limits
    (workspace / "Hello.java").write_text('class Hello { public static void main(String[] a) { System.out.println("hello"); } }')
    compiled = sandbox.run(["javac", "Hello.java"])
    assert compiled.ok, compiled.stderr
    ran = sandbox.run(["java", "-cp", ".", "Hello"])
    assert ran.ok and ran.stdout == "hello\n", ran.stderr


# --- setup -----------------------------------------------------------------------------------


def test_self_check_passes_here() -> None:
    self_check()
    self_check()  # cached


def test_self_check_failures_name_cause_and_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    import core.sandbox as sandbox_module
    from core.sandbox.bwrap import find_bwrap

    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(SandboxUnavailable) as missing:
        find_bwrap()
    assert "sudo apt-get install bubblewrap" in str(missing.value) and "--no-sandbox" in str(missing.value)
    monkeypatch.undo()
    message = sandbox_module._diagnose("bwrap: setting up uid map: Permission denied")
    assert "bwrap said: bwrap: setting up uid map: Permission denied" in message
    assert message.endswith("pass --no-sandbox to run without isolation, at your own risk.")


def test_open_sandbox_picks_the_implementation(workspace: Path, scratch: Path) -> None:
    assert isinstance(open_sandbox(workspace, scratch), BwrapSandbox)
    assert isinstance(open_sandbox(workspace, scratch, isolated=False), UnconfinedSandbox)


def test_broken_setup_raises_sandbox_unavailable(sandbox: BwrapSandbox) -> None:
    sandbox._python = [Path("/nonexistent-python-prefix")]  # bwrap cannot bind it: setup fails
    with pytest.raises(SandboxUnavailable, match="nonexistent-python-prefix"):
        sandbox.run(["true"])


def test_argv_builder_mount_order(tmp_path: Path) -> None:
    home, ws, scratch = Path("/home/user"), Path("/home/user/project"), Path("/var/horizon/scratch")
    python = Path("/home/user/.pyenv/versions/3.11.7")
    argv = build_bwrap_argv(
        ["python", "-m", "pytest"],
        bwrap="/usr/bin/bwrap",
        workspace=ws,
        scratch=scratch,
        cwd=ws,
        env={"PATH": "/usr/bin", "HOME": "/tmp"},
        readonly=[ws / ".git"],
        hidden=[home, Path("/root")],
        python=[python],
    )

    def at(*option: str) -> int:
        for i in range(len(argv) - len(option) + 1):
            if tuple(argv[i : i + len(option)]) == option:
                return i
        raise AssertionError(f"{option} not in {argv}")

    assert argv[0] == "/usr/bin/bwrap" and argv[-4:] == ["--", "python", "-m", "pytest"]
    assert "--share-net" not in argv and at("--unshare-all") < at("--ro-bind", "/", "/")
    assert at("--tmpfs", str(home)) < at("--ro-bind", str(python), str(python)) < at("--bind", str(ws), str(ws))
    assert at("--tmpfs", "/root") < at("--bind", str(ws), str(ws))
    assert at("--tmpfs", "/tmp") < at("--bind", str(scratch), str(scratch))
    assert at("--bind", str(ws), str(ws)) < at("--ro-bind", str(ws / ".git"), str(ws / ".git"))
    assert at("--clearenv") < at("--setenv", "PATH", "/usr/bin") < at("--", "python")
    assert at("--cap-drop", "ALL") and at("--die-with-parent") and at("--new-session")
    assert "--share-net" in build_bwrap_argv(
        ["true"], bwrap="bwrap", workspace=ws, scratch=scratch, cwd=ws, env={}, allow_network=True
    )


# --- helpers of the limits module ------------------------------------------------------------


def test_parse_cgroup_v2_and_v1() -> None:
    v2 = parse_cgroup_mounts(
        "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
        "0::/user.slice/user-1000.slice/session-2.scope\n",
    )
    assert v2.v1 == {} and v2.v2_root == Path("/sys/fs/cgroup")
    assert v2.v2_own == Path("/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope")
    v1 = parse_cgroup_mounts(
        "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
        "39 31 0:36 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n",
        "8:pids:/docker/abc\n4:memory:/x/y\n0::/\n",
    )
    assert v1.v1 == {"memory": Path("/sys/fs/cgroup/memory/x/y"), "pids": Path("/sys/fs/cgroup/pids")}


def test_without_a_usable_cgroup_rlimits_take_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # cgroup v2 where our cgroup offers no controllers (an ordinary user without delegation).
    (tmp_path / "cgroup.controllers").write_text("cpu io\n")
    monkeypatch.setattr(limits_module, "_mounts_cache", CgroupMounts(v2_own=tmp_path, v2_root=tmp_path))
    confinement = Confinement(SandboxLimits(memory_bytes=1 << 30, max_processes=50))
    assert confinement.cgroup is None and not confinement.memory_by_cgroup
    rlimits = dict(confinement.rlimits)
    assert rlimits[resource.RLIMIT_AS] == (1 << 30, 1 << 30)
    if os.getuid() != 0:  # RLIMIT_NPROC counts the user's tasks: what runs now plus the limit
        assert rlimits[resource.RLIMIT_NPROC][0] >= 50
    assert not [p for p in tmp_path.iterdir() if p.is_dir()]  # made nothing


def test_count_user_tasks_counts_this_process() -> None:
    threads = threading.active_count()
    assert count_user_tasks(os.geteuid()) >= threads


# --- the unconfined sandbox ------------------------------------------------------------------


def test_unconfined_runs_times_out_and_hides_host_env(workspace: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "secret-host-key")
    sandbox = UnconfinedSandbox(workspace, scratch, limits=FAST)
    result = sandbox.run(["bash", "-c", "pwd; env; echo err >&2; exit 4"], env={"GIVEN": "yes"})
    assert result.exit_code == 4 and result.stderr == "err\n"
    assert result.stdout.startswith(f"{workspace}\n")
    assert "secret-host-key" not in result.stdout and "GIVEN=yes" in result.stdout
    assert sandbox.run(["nonexistent-cmd"]).exit_code == 127
    timed = sandbox.run(["sleep", "60"], limits=FAST.model_copy(update={"timeout_s": 1.0}))
    assert timed.timed_out and timed.exit_code == -9 and timed.duration_s < 5
    assert sandbox.run(["cat"], stdin="in").stdout == "in"


def test_sweep_kills_only_sandboxes_whose_horizon_process_is_gone(workspace: Path, scratch: Path) -> None:
    """An orphaned sandbox (its owner's pid is dead) is killed; one whose owner lives is kept;
    and every sandbox carries its owner's pid, which is what the sweep reads."""
    from core.sandbox.bwrap import OWNER_VAR, sweep_orphans

    sandbox = BwrapSandbox(workspace, scratch)
    seen = sandbox.run(["sh", "-c", f"echo ${OWNER_VAR}"])
    assert seen.stdout.strip() == str(os.getpid())
    gone = subprocess.Popen(["true"])
    gone.wait()
    bwrap = shutil.which("bwrap")
    orphan = subprocess.Popen([bwrap, "--dev-bind", "/", "/", "--setenv", OWNER_VAR, str(gone.pid), "sleep", "600"])
    kept = subprocess.Popen([bwrap, "--dev-bind", "/", "/", "--setenv", OWNER_VAR, str(os.getpid()), "sleep", "600"])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not all(Path(f"/proc/{p.pid}/cmdline").read_bytes().count(OWNER_VAR.encode()) for p in (orphan, kept)):
            time.sleep(0.05)  # until both have their command lines
        killed = sweep_orphans()
        assert orphan.pid in killed and kept.pid not in killed
        assert orphan.wait(timeout=10) == -signal.SIGKILL
        assert kept.poll() is None
    finally:
        for p in (orphan, kept):
            p.kill()
            p.wait()


# --------------------------------------------------------------------------- inherited descriptors


@pytest.mark.parametrize("kind", ["bwrap", "unconfined"])
def test_a_passed_descriptor_reaches_the_command_and_others_do_not(kind, tmp_path):
    """``pass_fds``: the write end of a pipe reaches the command at its number (the coding
    reward's verdict stream, plugins.coding.verdict_stream); a descriptor not passed does not."""
    if kind == "bwrap" and shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    box = (BwrapSandbox if kind == "bwrap" else UnconfinedSandbox)(workspace, tmp_path / "scratch")
    read, write = os.pipe()
    kept_r, kept_w = os.pipe()  # not passed
    try:
        script = (f"import os\nos.write({write}, b'through\\n')\n"
                  f"try:\n    os.write({kept_w}, b'leaked')\nexcept OSError:\n    print('closed')\n")  # fmt: skip
        result = box.run([sys.executable, "-c", script], pass_fds=(write,))
    finally:
        os.close(write)
        os.close(kept_w)
    assert os.read(read, 100) == b"through\n"
    assert result.stdout.strip() == "closed"
    os.close(read)
    os.close(kept_r)
