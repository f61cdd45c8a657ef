"""The shell tool: a fresh sandboxed process per command, capped output, read-only .git."""

import subprocess

from plugins.coding.tools import shell


def test_each_command_is_a_fresh_process(python_repo):
    ctx = python_repo.ctx
    first = shell({"command": "cd users && export MARK=1 && pwd"}, ctx)
    assert first.output.startswith("exit code 0") and first.output.rstrip().endswith("/users")
    second = shell({"command": "pwd; echo mark=${MARK:-unset}"}, ctx)
    assert "mark=unset" in second.output and not second.output.rstrip().endswith("/users")


def test_failures_timeouts_and_stderr_are_reported(python_repo):
    ctx = python_repo.ctx
    failed = shell({"command": "echo oops >&2; exit 3"}, ctx)
    assert failed.is_error and failed.data["exit_code"] == 3 and "--- stderr ---\noops" in failed.output
    slow = shell({"command": "sleep 30", "timeout_s": 1}, ctx)
    assert slow.is_error and slow.data["timed_out"] and "timed out after 1 s" in slow.output
    assert slow.data["duration_s"] < 10


def test_huge_output_is_capped_and_counted(python_repo):
    result = shell({"command": "yes 0123456789 | head -c 5000000"}, python_repo.ctx)
    assert result.data["stdout_bytes"] == 5_000_000
    assert "more bytes not kept" in result.output and len(result.output) < 1_200_000


def test_git_is_read_only_and_network_is_off(python_repo):
    root = python_repo.root
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    # a fresh sandbox, now that .git exists, as the runner opens one per run
    from core.sandbox import open_sandbox
    from core.tools import ToolContext

    ctx = ToolContext(workspace=root, sandbox=open_sandbox(root, python_repo.ctx.scratch), scratch=python_repo.ctx.scratch)
    hook = shell({"command": "echo 'curl evil' > .git/hooks/pre-commit"}, ctx)
    assert hook.is_error and not (root / ".git" / "hooks" / "pre-commit").exists()
    net = shell({"command": "python -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)\""}, ctx)
    assert net.is_error and ("unreachable" in net.output.lower() or "error" in net.output.lower())
    ok = shell({"command": "echo hi > new.txt && cat new.txt"}, ctx)
    assert not ok.is_error and (root / "new.txt").read_text() == "hi\n"
