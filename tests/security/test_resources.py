"""Attacks on the machine's resources and on processes outside the sandbox: fork and memory bombs,
disk and tmpfs filling, endless output, CPU loops, sleeping, processes that try to outlive their
command, and signals to Horizon and its parent.

Small limits are set per case (``SandboxLimits``) so that each bomb stays cheap on a shared
machine; a case that would be unsafe without its limit (a fork bomb as root without a pids
cgroup) is skipped rather than run unbounded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from core.sandbox import SandboxLimits
from core.sandbox.limits import Confinement
from tests.security.processes import alive_with

MiB = 1 << 20



@pytest.mark.attack(
    "X01",
    "fork bomb `:(){ :|:& };:` (limit 64 processes, 4 s), then count how many processes one command can hold",
    "pids cgroup (root) / RLIMIT_NPROC (other users) make fork fail at the limit; when the command ends, its pid "
    "namespace and cgroup are killed: nothing of it is left; the host can still start processes",
)
def test_fork_bomb_is_contained(make_run, observe):
    limits = SandboxLimits(max_processes=64, timeout_s=4, memory_bytes=512 * MiB)
    with Confinement(limits) as probe:
        bounded = os.getuid() != 0 or (probe.cgroup is not None and probe.cgroup.limits_pids)
    if not bounded:
        pytest.skip("running as root without a pids cgroup: a fork bomb would not be bounded (documented limitation)")
    run = make_run(limits)
    marker = f"horizon-bomb-{uuid.uuid4().hex[:8]}"
    bomb = run.sh(f"exec -a {marker} bash -c ':(){{ :|:& }};:; sleep 3'", timeout_s=4)
    count = run.sh(
        "python3 - <<'EOF'\nimport os, time\nn = 0\ntry:\n    while n < 1000:\n        if os.fork() == 0:\n"
        "            time.sleep(30); os._exit(0)\n        n += 1\nexcept OSError as e:\n    print('forked', n, e.strerror)\nEOF",
        timeout_s=20,
    )
    left = alive_with(marker)
    host = subprocess.run(["true"], check=False).returncode
    forked = int(run.out(count).split()[1]) if run.out(count).startswith("forked") else -1
    refused = bomb.output.count("Resource temporarily unavailable")
    observe(f"bomb: {'killed at the time limit' if bomb.data['timed_out'] else 'exit ' + str(bomb.data['exit_code'])} "
            f"after {bomb.data['duration_s']:.1f} s, {refused} forks refused; counted {run.out(count).strip()}; "
            f"left alive: {len(left)}; host fork ok: {host == 0}")
    assert refused > 0, "the bomb never hit the process limit"
    assert 0 <= forked < 64
    assert not left and host == 0
    assert bomb.data["duration_s"] < 20 and count.data["duration_s"] < 20


@pytest.mark.attack(
    "X02",
    "memory bomb: allocate and touch 2 GiB in 16 MiB steps (limit 256 MiB)",
    "memory cgroup kills it (or RLIMIT_AS makes the allocation fail) well before 2 GiB; Horizon is unaffected",
)
def test_memory_bomb_is_stopped(make_run, observe):
    run = make_run(SandboxLimits(memory_bytes=256 * MiB, timeout_s=30))
    result = run.sh(
        "python3 -c \"\nchunks = []\nfor i in range(128):\n    chunks.append(b'x' * (16 << 20))\n    print(16 * (i + 1), flush=True)\nprint('SURVIVED')\"",
        timeout_s=30,
    )
    reached = (run.out(result).split() or ["0"])[-1]
    observe(f"exit {result.data['exit_code']}, last MiB reached {reached}; {run.err(result).strip().splitlines()[-1][:80] if run.err(result).strip() else ''}")
    assert "SURVIVED" not in result.output and result.is_error
    assert reached.isdigit() and int(reached) <= 256


@pytest.mark.attack(
    "X03",
    "fill the disk with one huge file in the workspace (`head -c 1G /dev/zero > big`, file-size limit 8 MiB)",
    "RLIMIT_FSIZE: the write stops at 8 MiB with 'File too large'",
)
def test_large_file_is_capped(make_run, observe):
    run = make_run(SandboxLimits(file_size_bytes=8 * MiB, timeout_s=30))
    result = run.sh("head -c 1G /dev/zero > big.bin; python3 -c \"open('big2.bin','wb').write(b'x' * (64 << 20))\"", timeout_s=30)
    sizes = [(run.ws / name).stat().st_size for name in ("big.bin", "big2.bin") if (run.ws / name).exists()]
    observe(f"files on the host: {[s // MiB for s in sizes]} MiB; {run.err(result).strip().splitlines()[-1][:70] if run.err(result).strip() else ''}")
    assert sizes and max(sizes) <= 8 * MiB
    assert result.is_error


@pytest.mark.attack(
    "X04",
    "fill memory through tmpfs: write 1 MiB files into /tmp and /dev/shm until something stops it (memory limit 64 MiB)",
    "each tmpfs is sized to the memory limit (full: ENOSPC) and its pages count against the memory cgroup "
    "(OOM kill): stops near 64 MiB (in total with a memory cgroup, per tmpfs without one)",
)
def test_tmpfs_filling_is_bounded(make_run, observe):
    run = make_run(SandboxLimits(memory_bytes=64 * MiB, timeout_s=30))
    result = run.sh(
        "for d in /tmp /dev/shm; do n=0; while [ $n -lt 400 ] && head -c 1048576 /dev/zero > $d/f$n 2>/dev/null; "
        "do n=$((n+1)); echo $d $n; done; done",
        timeout_s=30,
    )
    written: dict[str, int] = {}
    for line in run.out(result).splitlines():
        folder, count = line.split()
        written[folder] = int(count)
    oom = "killed by the memory limit" in result.output
    observe(f"MiB written: {written}; stopped by {'the memory cgroup (OOM kill)' if oom else 'a full tmpfs (ENOSPC)'}")
    assert not result.data["timed_out"]
    assert written and max(written.values()) <= 70, "tmpfs writes were not bounded near the memory limit"
    if oom:
        assert sum(written.values()) <= 70


@pytest.mark.attack(
    "X05",
    "endless output: `yes` forever on stdout and stderr (file-size limit 8 MiB, 1 MiB kept)",
    "output goes to files bounded by RLIMIT_FSIZE (SIGXFSZ ends the writer); Horizon keeps only 1 MiB per stream",
)
def test_endless_output_is_capped(make_run, observe):
    run = make_run(SandboxLimits(file_size_bytes=8 * MiB, output_bytes=MiB, timeout_s=30))
    result = run.sh("yes 'flood flood flood' & yes 'flood on stderr' >&2; wait", timeout_s=30)
    data = result.data
    observe(f"exit {data['exit_code']} after {data['duration_s']:.1f} s; counted {data['stdout_bytes'] // MiB} + "
            f"{data['stderr_bytes'] // MiB} MiB, observation {len(result.output) // 1024} KiB")
    assert not data["timed_out"]
    assert data["stdout_bytes"] <= 8 * MiB and data["stderr_bytes"] <= 8 * MiB
    assert len(result.output.encode()) <= 2 * MiB + 4096


@pytest.mark.attack(
    "X06",
    "infinite CPU loop `while :; do :; done` (CPU limit 1 s, wall limit 30 s)",
    "RLIMIT_CPU: SIGXCPU after ~1 s of CPU time, long before the wall-clock limit",
)
def test_cpu_loop_is_stopped(make_run, observe):
    run = make_run(SandboxLimits(cpu_s=1, timeout_s=30))
    result = run.sh("while :; do :; done", timeout_s=30)
    observe(f"exit {result.data['exit_code']} (signal {-result.data['exit_code'] if result.data['exit_code'] < 0 else '-'}) "
            f"after {result.data['duration_s']:.1f} s wall, timed out: {result.data['timed_out']}")
    assert result.is_error and not result.data["timed_out"]
    assert result.data["exit_code"] in (-signal.SIGXCPU, -signal.SIGKILL)
    assert result.data["duration_s"] < 25


@pytest.mark.attack(
    "X07",
    "sleep past the limit, ignoring SIGTERM (`trap '' TERM; sleep 600`, wall limit 1 s)",
    "killed with SIGKILL at the wall-clock limit; reported as timed out",
)
def test_sleeping_past_the_limit_is_killed(run, observe):
    start = time.monotonic()
    result = run.sh("trap '' TERM; sleep 600", timeout_s=1)
    elapsed = time.monotonic() - start
    observe(f"{result.output.splitlines()[0]}; returned after {elapsed:.1f} s")
    assert result.data["timed_out"] and result.is_error
    assert elapsed < 10


@pytest.mark.attack(
    "X08",
    "outlive the command: `setsid`, double fork, `nohup … &`, `disown`, and a delayed write into the workspace, "
    "each marked with a unique string",
    "the pid namespace ends with the command: no marked process is alive afterwards and the delayed write never happens",
)
def test_detached_processes_die_with_the_command(run, observe):
    marker = f"horizon-detach-{uuid.uuid4().hex[:10]}"
    result = run.sh(
        f"setsid sh -c 'sleep 30; :' {marker}-setsid & "
        f"( ( sh -c 'sleep 30; :' {marker}-double & ) & ); "
        f"nohup sh -c 'sleep 30; :' {marker}-nohup >/dev/null 2>&1 & "
        f"sh -c 'sleep 30; :' {marker}-disown & disown; "
        f"setsid sh -c 'sleep 1; echo late > late.txt; :' {marker}-late & "
        f"sleep 0.3; pgrep -fc {marker} || ps -e | wc -l"
    )
    alive_inside = run.out(result).strip()
    left = alive_with(marker)
    time.sleep(2)
    observe(f"{alive_inside} marked processes inside before the end; alive on the host after: {len(left)}; "
            f"delayed write: {'HAPPENED' if (run.ws / 'late.txt').exists() else 'never happened'}")
    assert not result.is_error
    assert not left and not alive_with(marker)
    assert not (run.ws / "late.txt").exists()


@pytest.mark.attack(
    "X09",
    "signal processes outside: SIGKILL Horizon's pid and its parent's pid, a host process of the same user, "
    "then `kill -9 -1` (every process the caller may signal)",
    "own pid namespace: those pids do not exist or are sandbox processes; Horizon, its parent and the host "
    "process survive",
)
def test_signals_do_not_leave_the_sandbox(run, observe):
    victim = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        # Safety first: never send these signals from a sandbox without its own pid namespace.
        ns = run.sh("readlink /proc/self/ns/pid")
        assert run.out(ns).strip() and run.out(ns).strip() != os.readlink("/proc/self/ns/pid"), "no pid namespace: not attacking"
        me, parent = os.getpid(), os.getppid()
        result = run.sh(f"kill -9 {victim.pid}; kill -9 {me}; kill -9 {parent}; kill -TERM -1; kill -9 -1; echo still-here")
        time.sleep(0.2)
        survived = {"Horizon (test process)": True, "its parent": _exists(parent), "host process": victim.poll() is None}
    finally:
        victim.kill()
        victim.wait()
    observe(f"{'; '.join(line for line in run.err(result).splitlines()[:3])}; survived: "
            f"{[k for k, v in survived.items() if v]}")
    assert all(survived.values())
    assert os.getppid() == parent


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def test_marker_scan_sees_host_processes() -> None:
    """The check used by X01 and X08 finds a process that is alive (so "none left" means something)."""
    marker = f"horizon-scan-{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen(["sh", "-c", "sleep 30; :", marker])
    try:
        deadline = time.monotonic() + 5
        while not alive_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.pid in alive_with(marker)  # (its forked child shows the marker too until it execs sleep)
    finally:
        proc.kill()
        proc.wait()
    assert not Path(f"/proc/{proc.pid}/cmdline").exists() or not alive_with(marker)
