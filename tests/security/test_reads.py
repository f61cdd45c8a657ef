"""Attacks that try to read what a command must not see: the home folder, password hashes, other
runs, the host's environment and processes, raw devices."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from core.sandbox.bwrap import python_prefixes


def _plant_home(home: Path, token: str) -> None:
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{token}\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(f"[default]\naws_secret_access_key = {token}\n")
    (home / ".horizon").mkdir()
    (home / ".horizon" / "config.toml").write_text(f'api_key = "{token}"\n')
    (home / ".bash_history").write_text(f"export OPENAI_API_KEY={token}\n")


@pytest.mark.attack(
    "R01",
    "read ~/.ssh, ~/.aws, ~/.horizon/config.toml, shell history of the user's home (a fake HOME planted "
    "outside /tmp) and list the real home and /root",
    "home folders are empty tmpfs: planted files unreadable, real /root shows only the Python install "
    "bound back; the same files in a visible folder ARE readable (control)",
)
def test_home_folder_is_hidden(make_run, monkeypatch, observe):
    homes: dict[str, Path] = {}

    def fake_home(case: Path) -> None:
        homes["fake"] = case / "home" / "alice"
        _plant_home(homes["fake"], run_token["token"])
        monkeypatch.setenv("HOME", str(homes["fake"]))  # read by the sandbox when it is opened

    run_token = {"token": f"HOME-SECRET-{os.urandom(8).hex()}"}
    run = make_run(before_open=fake_home)
    token, home = run_token["token"], homes["fake"]
    control = run.visible / "copied-home"
    shutil.copytree(home, control)

    stolen = run.sh(f"cat {home}/.ssh/id_ed25519 {home}/.aws/credentials {home}/.horizon/config.toml {home}/.bash_history; "
                    f"grep -rs {token} {home} /root; ls -A {home}")
    listed = run.sh("ls -A /root")
    missing = run.sh("ls -d /root/.ssh /root/.aws /root/.gitconfig /root/.bash_history")
    leaked = run.sh(f"cat {control}/.ssh/id_ed25519")

    # Entries of /root allowed inside: the Python installation (e.g. ~/.pyenv), bound back read-only.
    allowed = {p.relative_to("/root").parts[0] for p in python_prefixes() if p.is_relative_to("/root") and p != Path("/root")}
    root_entries = set(run.out(listed).split())
    observe(f"planted files: {'LEAKED' if token in stolen.output else 'not readable'} "
            f"({run.err(stolen).splitlines()[0] if run.err(stolen) else run.out(stolen)[:60]}); fake home lists "
            f"{run.out(stolen).split() or 'nothing'}; /root inside lists {sorted(root_entries) or 'nothing'}; "
            f"control copy in a visible folder: {'readable' if token in leaked.output else 'unreadable'}")
    assert token not in stolen.output
    assert not run.out(stolen).strip(), "the fake home must look empty"
    assert root_entries <= allowed, f"/root shows {root_entries - allowed}"
    assert run.err(missing).count("No such file") == 4
    assert token in leaked.output, "control: the planted secret must be readable when it is not under a hidden folder"


@pytest.mark.attack(
    "R02",
    "read the password hashes: /etc/shadow, /etc/gshadow (and /etc/shadow-, /var/backups/shadow.bak); "
    "as root, uid 0 owns them even without capabilities",
    "covered by an empty, unopenable file: no hash line comes out",
)
def test_password_hashes_are_masked(run, observe):
    files = "/etc/shadow /etc/gshadow /etc/shadow- /etc/gshadow- /var/backups/shadow.bak /var/backups/gshadow.bak"
    result = run.sh(f"for f in {files}; do [ -e $f ] && {{ cat $f || echo \"$f unreadable\"; }}; done 2>&1")
    host_lines: list[str] = []
    for name in files.split():
        try:
            host_lines += [line for line in Path(name).read_text().splitlines() if line.strip()]
        except OSError:
            pass
    leaked = [line for line in host_lines if line in result.output]
    hashes = re.findall(r"\$[0-9a-z]+\$\S+", result.output)
    inside = [line for line in run.out(result).splitlines() if line.strip()]
    observe(f"the test process (uid {os.getuid()}) reads {len(host_lines)} lines of them on the host; inside: "
            f"{len(leaked)} of those lines, {len(hashes)} hashes; {'; '.join(inside[:2])}")
    assert not leaked and not hashes
    assert "unreadable" in result.output or not host_lines


@pytest.mark.attack(
    "R03",
    "read another run's workspace and scratch (a sibling run folder under HORIZON_HOME outside the home) "
    "and this run's own baseline.git",
    "HORIZON_HOME is an empty tmpfs with only this run's workspace and scratch bound back; "
    "without that (control: HORIZON_HOME unset) the sibling would be readable",
)
def test_other_runs_are_hidden(run, monkeypatch, observe):
    from core.sandbox import open_sandbox
    from core.tools import ToolContext
    from plugins.coding.tools import shell

    runs = run.home / "runs"
    attack = (f"ls -A {runs}; cat {runs}/run-b/workspace/users/secret.py {runs}/run-b/scratch/baseline.json "
              f"{run.folder}/baseline.git/HEAD; grep -rs {run.token} {run.home}")
    result = run.sh(attack)
    listing = result.output.split("--- stdout ---\n", 1)[-1].split("---")[0].split()

    monkeypatch.delenv("HORIZON_HOME")  # control: the same attack without HORIZON_HOME hidden
    exposed = ToolContext(run.ws, open_sandbox(run.ws, run.scratch), run.scratch)
    control = shell({"command": f"cat {runs}/run-b/workspace/users/secret.py"}, exposed)

    observe(f"runs/ lists {listing}; sibling secret: {'LEAKED' if run.token in result.output else 'not readable'}; "
            f"control without hiding: {'readable' if run.token in control.output else 'unreadable'}")
    assert run.token not in result.output
    assert "run-b" not in listing
    assert run.token in control.output, "control: the sibling is readable when HORIZON_HOME is not hidden"


@pytest.mark.attack(
    "R04",
    "read API keys from the environment (OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY, HORIZON_API_KEY set in "
    "Horizon's own environment): env, /proc/self/environ, /proc/1/environ",
    "--clearenv and a fixed environment: no secret visible",
)
def test_environment_secrets_are_not_inherited(make_run, monkeypatch, observe):
    secrets = {name: f"{name}-{os.urandom(8).hex()}" for name in ("OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "HORIZON_API_KEY")}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    run = make_run()
    result = run.sh("env; for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done 2>/dev/null")
    names = sorted(line.split("=", 1)[0] for line in result.output.split("--- stdout ---\n", 1)[-1].splitlines() if "=" in line)
    found = [name for name, value in secrets.items() if value in result.output or f"{name}=" in result.output]
    observe(f"variables inside: {sorted(set(names))}; secrets found: {found or 'none'}")
    assert not result.is_error
    assert not found


@pytest.mark.attack(
    "R05",
    "read Horizon's own process: list host processes, /proc/<Horizon pid>/environ, /proc/<pid>/mem, /proc/<pid>/cmdline",
    "own pid namespace: only the command's processes exist; the host pid is absent or another sandbox process",
)
def test_host_processes_are_invisible(make_run, monkeypatch, observe):
    secret = f"SECRET-{os.urandom(8).hex()}"
    monkeypatch.setenv("HORIZON_TEST_SECRET", secret)
    run = make_run()
    pid = os.getpid()
    result = run.sh(f"ls -d /proc/[0-9]* | wc -l; cat /proc/{pid}/environ /proc/{pid}/cmdline 2>&1 | tr '\\0' ' '; "
                    f"head -c 64 /proc/{pid}/mem 2>&1 | od -c | head -2; ps -e 2>/dev/null | wc -l")
    count = int(result.output.split("--- stdout ---\n", 1)[-1].split()[0])
    observe(f"{count} processes visible inside; Horizon's environ/cmdline/mem: "
            f"{'LEAKED' if secret in result.output or 'pytest' in result.output else 'not reachable'}")
    assert secret not in result.output and "pytest" not in result.output
    assert count < 10


@pytest.mark.attack(
    "R06",
    "read the host's disks and kernel memory through device files (/dev/sda, /dev/nvme0n1, /dev/mem, /dev/kmsg, /dev/kvm)",
    "a fresh minimal /dev: no block devices, no memory or kernel log devices",
)
def test_no_raw_devices(run, observe):
    result = run.sh("ls -A /dev; head -c 16 /dev/sda /dev/vda /dev/nvme0n1 /dev/mem /dev/kmem /dev/kmsg /dev/port 2>&1 | head")
    entries = set(result.output.split("--- stdout ---\n", 1)[-1].split("head:")[0].split())
    minimal = {"console", "core", "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout",
               "tty", "urandom", "zero", "mqueue"}
    observe(f"/dev holds {sorted(entries)}")
    assert entries <= minimal, f"unexpected devices: {entries - minimal}"
    assert result.output.count("No such file") >= 7


@pytest.mark.attack(
    "L02",
    "LIMITATION: read a file the Horizon user can read (mode 0600, its owner) in a host folder that is not hidden",
    "readable (documented limitation: the host's / is visible read-only; as root that includes root-only files "
    "outside the hidden and masked paths)",
)
def test_limitation_user_readable_files_outside_hidden_folders(run, observe):
    secret = run.visible / "owner-only.txt"
    secret.write_text(run.token)
    secret.chmod(0o600)
    result = run.sh(f"cat {secret}")
    observe(f"uid {os.getuid()}: {'readable' if run.token in result.output else 'unreadable'}")
    assert run.token in result.output
