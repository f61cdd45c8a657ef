"""External MCP servers that Horizon starts run under the episode's sandbox limits.

A task names a stdio MCP server (``mcp_hog_server.py``, copied into the folder the run works on)
whose tools allocate 4 GiB or start 10,000 processes. A real episode of the test plugin
(``notes``) calls them through a scripted policy: the server must be stopped at its limit, the
call's observation and the run store must say which limit stopped it, later calls of its tools
must say it is stopped, the episode must go on to its own end, and nothing of the server may be
left on the host. The server's limits are lowered with its spec's ``limits`` (256 MiB, 32
processes) so that each bomb stays cheap on a shared machine.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from contextlib import closing
from pathlib import Path

import pytest

from core.plugin import Task
from core.policy import ScriptedPolicy
from core.runner import Run
from core.runs import open_store
from core.sandbox import SandboxLimits
from core.sandbox.limits import Confinement
from core.state import Limits, Pricing
from tests.security.processes import alive_with

MiB = 1 << 20
SERVER = Path(__file__).resolve().parent / "mcp_hog_server.py"



def _cgroup_limits() -> tuple[bool, bool]:
    """(memory, processes): whether a cgroup limits each here, as the episode's sandbox would make it."""
    with Confinement(SandboxLimits()) as probe:
        cgroup = probe.cgroup
        return cgroup is not None and cgroup.limits_memory, cgroup is not None and cgroup.limits_pids


def _episode(home: Path, folder: Path, calls: list[dict], **limits: int) -> tuple[object, list[dict], list[str], str]:
    """Run a notes episode with the hog server (its limits lowered to 256 MiB and 32 processes,
    and ``limits``); returns (result, tool call records, observations, marker)."""
    marker = f"horizon-hog-{uuid.uuid4().hex[:8]}"
    shutil.copy(SERVER, folder / SERVER.name)
    spec = {"name": "hog", "command": [sys.executable, SERVER.name, marker], "timeout_s": 60,
            "limits": {"memory_bytes": 256 * MiB, "max_processes": 32, **limits}}  # fmt: skip
    run = Run.start(Task(plugin="notes", instruction="use the hog server, then answer", repo=folder, metadata={"mcp_servers": [spec]}),
                    ScriptedPolicy(calls, name="mcp-hog"), policy_config={"kind": "scripted", "script": "mcp-hog"},
                    limits=Limits(max_steps=10), pricing=Pricing(), home=home)  # fmt: skip
    try:
        result = run.execute()
    finally:
        run.close()
    with closing(open_store(result.run_id, home)) as store:
        records = store.tool_call_records()
        seen = [m.content for m in store.messages() if m.role == "tool"]
    return result, records, seen, marker


def _after(tool: str, arguments: dict) -> list[dict]:
    return [{"tool": tool, "arguments": arguments},
            {"tool": "hog__ping", "arguments": {}},
            {"tool": "write_file", "arguments": {"path": "ANSWER.txt", "text": "done\n"}},
            {"tool": "finish", "arguments": {"summary": "the hog server was stopped; answered anyway"}}]  # fmt: skip


@pytest.mark.attack(
    "MC01",
    "an MCP server the task names allocates and touches 4 GiB in one tool call (its limit: 256 MiB)",
    "memory cgroup: the server is OOM-killed and stopped; the call's observation and the run store say it ran into "
    "its memory limit, later calls say it is stopped, the episode ends normally, nothing of the server is left",
)
def test_an_mcp_server_past_its_memory_limit_is_stopped_and_the_run_says_so(horizon_home, notes_plugin, notes_folder, observe):
    memory_cgroup, _ = _cgroup_limits()
    if not memory_cgroup:
        pytest.skip("no memory cgroup here: RLIMIT_AS refuses the allocation, but cannot tell Horizon to stop the server")
    result, records, seen, marker = _episode(horizon_home, notes_folder, _after("hog__allocate", {"mib": 4096}))
    observe(f"observation: {seen[0][:160]}; next call: {seen[1][:80]}; run {result.exit_status.value}, reward {result.reward}")
    assert [r["tool"] for r in records] == ["hog__allocate", "hog__ping", "write_file", "finish"]
    assert records[0]["is_error"] and "the MCP server hog was stopped during allocate: it ran into its memory limit (268,435,456 bytes)" in seen[0]
    assert "holding" not in seen[0]
    assert records[1]["is_error"] and "the MCP server hog was stopped" in seen[1] and "pong" not in seen[1]
    assert result.status == "finished" and result.reward == 1.0  # the episode went on to its own end
    assert not alive_with(marker)
    log = (horizon_home / "runs" / result.run_id / "scratch" / "mcp-hog.stderr.log").read_text()
    assert "horizon: the MCP server hog was stopped" in log  # kept with the run


@pytest.mark.attack(
    "MC02",
    "an MCP server the task names forks 10,000 processes that sleep (its limit: 32 processes)",
    "pids cgroup (root) / RLIMIT_NPROC: forks fail at the limit and the server is stopped (cgroup); the observation "
    "and the run store say it ran into its process limit, the episode ends normally, none of its processes is left",
)
def test_an_mcp_server_past_its_process_limit_is_stopped_and_the_run_says_so(horizon_home, notes_plugin, notes_folder, observe):
    _, pids_cgroup = _cgroup_limits()
    if os.getuid() == 0 and not pids_cgroup:
        pytest.skip("running as root without a pids cgroup: a fork bomb would not be bounded (documented limitation)")
    result, records, seen, marker = _episode(horizon_home, notes_folder, _after("hog__fork", {"count": 10_000}))
    observe(f"observation: {seen[0][:160]}; run {result.exit_status.value}, reward {result.reward}; left alive: {len(alive_with(marker))}")
    assert [r["tool"] for r in records] == ["hog__fork", "hog__ping", "write_file", "finish"]
    assert records[0]["is_error"] and "started 10000 processes" not in seen[0]
    if pids_cgroup:
        assert "the MCP server hog was stopped during fork: it ran into its process limit (32 processes)" in seen[0]
        assert records[1]["is_error"] and "the MCP server hog was stopped" in seen[1]
    else:  # an ordinary user without a cgroup: RLIMIT_NPROC refused the forks; the server goes on
        assert "Resource temporarily unavailable" in seen[0]
    assert result.status == "finished" and result.reward == 1.0
    assert not alive_with(marker)


@pytest.mark.attack(
    "MC03",
    "an MCP server the task names keeps a CPU busy for 60 s in one tool call (its CPU-time limit: 4 s)",
    "RLIMIT_CPU: SIGXCPU ends the server after 4 s of CPU time; the observation says it ran into its CPU-time "
    "limit, later calls say it is stopped, the episode ends normally",
)
def test_an_mcp_server_past_its_cpu_time_limit_is_stopped_and_the_run_says_so(horizon_home, notes_plugin, notes_folder, observe):
    result, records, seen, marker = _episode(horizon_home, notes_folder, _after("hog__spin", {"seconds": 60}), cpu_s=4)
    observe(f"observation: {seen[0][:160]}; run {result.exit_status.value}, reward {result.reward}")
    assert [r["tool"] for r in records] == ["hog__spin", "hog__ping", "write_file", "finish"]
    assert records[0]["is_error"] and "the MCP server hog was stopped during spin: it ran into its CPU-time limit (4 s)" in seen[0]
    assert records[1]["is_error"] and "the MCP server hog was stopped" in seen[1]
    assert result.status == "finished" and result.reward == 1.0
    assert not alive_with(marker)
