"""Fixtures for the coding plugin's tests: fresh copies of the example repositories and a real sandbox."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.sandbox import open_sandbox
from core.tools import ToolContext

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
JAVA_REPO = "java-user-service"
PYTHON_REPO = "python-user-service"

#: The fix each example repository needs (the same one-line change its scripted episode makes).
FIXES = {
    JAVA_REPO: (
        "src/main/java/com/example/users/UserService.java",
        "        String nickname = user.getNickname().trim();",
        '        String nickname = user.getNickname() == null ? "" : user.getNickname().trim();',
    ),
    PYTHON_REPO: (
        "users/service.py",
        "        nickname = user.nickname.strip()",
        '        nickname = (user.nickname or "").strip()',
    ),
}

#: The tests that fail before the fix, and how many tests each repository has.
KNOWN_FAILING = {
    JAVA_REPO: {
        "com.example.users.UserServiceTest#displayNameFallsBackToFullNameWhenNicknameMissing",
        "com.example.users.UserServiceTest#listActiveDisplayNamesIncludesUsersWithoutNickname",
    },
    PYTHON_REPO: {
        "tests/test_service.py::test_display_name_falls_back_to_full_name_when_nickname_missing",
        "tests/test_service.py::test_list_active_display_names_includes_users_without_nickname",
    },
}
TEST_COUNTS = {JAVA_REPO: 19, PYTHON_REPO: 26}


@dataclass
class Repo:
    """A writable copy of an example repository with a tool context around it."""

    name: str
    ctx: ToolContext

    @property
    def root(self) -> Path:
        return self.ctx.workspace

    @property
    def fix(self) -> tuple[str, str, str]:
        """(path, old text, new text) of the change that fixes the repository's bug."""
        return FIXES[self.name]

    @property
    def known_failing(self) -> set[str]:
        """Ids of the tests that fail before the fix."""
        return KNOWN_FAILING[self.name]

    @property
    def test_count(self) -> int:
        return TEST_COUNTS[self.name]

    def apply_fix(self) -> None:
        path, old, new = self.fix
        file = self.root / path
        text = file.read_text()
        assert text.count(old) == 1
        file.write_text(text.replace(old, new))


def copy_repo(name: str, base: Path) -> Repo:
    """Copy ``examples/<name>`` (without build leftovers) under ``base`` and open a sandbox on it."""
    workspace, scratch = base / "ws", base / "scratch"
    shutil.copytree(
        EXAMPLES / name,
        workspace,
        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".benchmarks", "target", "*.class"),
    )
    scratch.mkdir()
    sandbox = open_sandbox(workspace, scratch)
    return Repo(name, ToolContext(workspace=workspace, sandbox=sandbox, scratch=scratch))


@pytest.fixture(scope="session")
def copy_example():
    """``copy_example(name, base) -> Repo``: a fresh copy of an example repository under ``base``."""
    return copy_repo


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    """The checked-in example repositories (read-only: copy before changing anything)."""
    return EXAMPLES


@pytest.fixture(params=[JAVA_REPO, PYTHON_REPO])
def repo(request, tmp_path) -> Repo:
    """A fresh copy of each example repository in turn."""
    return copy_repo(request.param, tmp_path)


@pytest.fixture
def java_repo(tmp_path) -> Repo:
    return copy_repo(JAVA_REPO, tmp_path)


@pytest.fixture
def python_repo(tmp_path) -> Repo:
    return copy_repo(PYTHON_REPO, tmp_path)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its content, to check that nothing was written there."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def engine():
    """The container engine (Docker or Podman) for the container tests; they skip, saying why, where none answers."""
    from core.errors import UserError
    from core.sandbox.engine import engine_or_none, find_engine

    found = engine_or_none()
    if found is None:
        try:
            find_engine()
        except UserError as exc:
            pytest.skip(f"no container engine answers here: {exc}")
    return found
