"""What a task's test script (``tests/test.sh``; Terminal-Bench 1: ``run-tests.sh``) installs for
its tests, read without running it: the bubblewrap path never runs the script (Horizon's pytest
runs the task's pytest files with Horizon's Python), so a script that installs what the tests
import, or Debian packages, needs the container.

Read: every command of the script (``&&``, ``||``, ``;`` and ``|`` split commands, a trailing
``\\`` joins lines; here-documents are read like any other line, which is the cautious side).
Counted: ``pip install``/``pip3``/``python -m pip``/``uv pip install``/``uv add``/``uv tool install``
requirements and ``--with``/``-w`` of ``uvx``/``uv run``/``uv tool run`` (checked against Horizon's
Python as a Dockerfile's ``pip install`` is, ``dockerfile._check_installed``), and ``apt-get``/``apt``
``install``. Not counted: pytest and its plugins (``pytest-*``; the script's pin serves its own
pytest run, Horizon's pytest grades here), uv, pip, setuptools, wheel, and the Debian packages that
only fetch or run those (``SCRIPT_TOOLS``): every Terminal-Bench script installs them.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from core.api import UserError

#: Debian packages a test script installs only to fetch uv or run pytest (not what the tests import).
SCRIPT_TOOLS = frozenset({"curl", "wget", "ca-certificates", "python3", "python3-pip", "python3-venv", "python-is-python3"})
#: Python distributions a test script installs for its own pytest run.
_RUNNER = re.compile(r"^(pytest([-_].*)?|uv|pip|setuptools|wheel)$", re.IGNORECASE)
_SPLIT = re.compile(r"&&|\|\||;|\|")


def script_refusal(script: Path) -> str | None:
    """Why the bubblewrap sandbox cannot grade a task whose test script is ``script``: the first
    thing it installs that the tests may need and Horizon's Python or this machine lacks, as
    ``"SCRIPT:LINE: its tests need …"``; None when it installs only pytest, uv and their fetchers
    (or ``script`` is missing)."""
    if not script.is_file():
        return None
    from plugins.coding.terminal_bench.dockerfile import _check_installed, read_task_file

    lines = read_task_file(script).splitlines()
    joined: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, line in enumerate(lines, 1):
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined.append((start, pending + line))
        pending = ""
    if pending:
        joined.append((start, pending))
    for number, line in joined:
        if line.strip().startswith("#"):
            continue
        for part in _SPLIT.split(line):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                continue
            while words and (words[0] in ("sudo", "exec", "then", "else", "do") or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0])):
                words = words[1:]
            where = f"{script}:{number}"
            debian = _debian_packages(words)
            if debian:
                return f"{where}: its tests need the Debian packages {' '.join(debian)}, which its test script installs (only a container runs it)"
            requirements = _python_requirements(words)
            wanted = [r for r in requirements if not _RUNNER.match(re.split(r"[\[<>=!~ ;@]", r.strip("'\""), maxsplit=1)[0])]
            if wanted:
                try:
                    _check_installed(wanted, where)
                except UserError as exc:
                    why = str(exc).split("needs Docker: ", 1)[-1]
                    named = " ".join(w for w in wanted if not w.startswith("-")) or " ".join(wanted)
                    return f"{where}: its tests need {named} ({why}), which its test script installs (only a container runs it)"
    return None


def _debian_packages(words: list[str]) -> list[str]:
    """The packages of an ``apt-get install``/``apt install`` command, but ``SCRIPT_TOOLS``."""
    if len(words) < 2 or words[0] not in ("apt-get", "apt") or "install" not in words[1:]:
        return []
    after = words[words.index("install") + 1:]
    return [w for w in after if not w.startswith("-") and w not in SCRIPT_TOOLS]


def _python_requirements(words: list[str]) -> list[str]:
    """The requirements (and ``-r FILE`` options, kept for ``_check_installed`` to refuse) a
    command installs: ``pip install``, ``uv pip install``, ``uv add``, ``uv tool install``, and the
    ``--with``/``-w`` of ``uvx``, ``uv run``, ``uv tool run``."""
    if not words:
        return []
    head = words[0].rsplit("/", 1)[-1]
    rest = words[1:]
    if head in ("python", "python3") and rest[:2] == ["-m", "pip"]:
        head, rest = "pip", rest[2:]
    if head == "uv" and rest[:1] == ["pip"]:
        head, rest = "pip", rest[1:]
    if head in ("pip", "pip3") and rest[:1] == ["install"]:
        return rest[1:]
    if head == "uv" and rest[:1] == ["add"]:
        return rest[1:]
    if head == "uv" and rest[:2] == ["tool", "install"]:
        return rest[2:]
    if head == "uvx" or (head == "uv" and (rest[:1] == ["run"] or rest[:2] == ["tool", "run"])):
        found: list[str] = []
        for i, word in enumerate(rest):
            if word in ("--with", "-w") and i + 1 < len(rest):
                found.append(rest[i + 1])
            elif word.startswith("--with="):
                found.append(word.split("=", 1)[1])
            elif word in ("--with-requirements",):
                found.append("-r")
        return found
    return []
