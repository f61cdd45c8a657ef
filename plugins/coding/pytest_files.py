"""Which file names a repository's pytest configuration collects as tests (``python_files``).

pytest collects ``test_*.py`` and ``*_test.py`` unless the project says otherwise; jsonpatch 1.44's
``pytest.ini`` says ``python_files = tests.py property_tests.py``. Horizon must count such files as
test files (``testing.test_files``): they are reset before grading, their edits are judged as test
edits, and the run's edits of them are its reproduction tests. Only patterns that name tests
(containing ``test``) are taken: a ``python_files = *.py`` would make every source file a test
file, and the grader would then reset the fix itself.
"""

from __future__ import annotations

import configparser
import fnmatch
import tomllib
from pathlib import Path

#: Where pytest reads ``python_files`` (the first file that configures pytest wins, as in pytest).
_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def _patterns(name: str, text: str) -> list[str] | None:
    """``python_files`` of one configuration file; None when the file does not configure pytest."""
    if name == "pyproject.toml":
        options = ((tomllib.loads(text).get("tool") or {}).get("pytest") or {}).get("ini_options")
        if not isinstance(options, dict):
            return None
        value = options.get("python_files", [])
        return [str(v) for v in value] if isinstance(value, list) else str(value).split()
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    parser.read_string(text)
    section = "tool:pytest" if name == "setup.cfg" else "pytest"
    if not parser.has_section(section):
        return [] if name in ("pytest.ini", ".pytest.ini") else None  # pytest.ini configures pytest even when empty
    return parser.get(section, "python_files", fallback="").split()


def configured_test_patterns(root: Path) -> tuple[str, ...]:
    """The repository's own ``python_files`` patterns that name tests; () when it sets none (or an
    unreadable file: pytest's defaults then)."""
    for name in _FILES:
        path = root / name
        if not path.is_file() or path.is_symlink():
            continue
        try:
            found = _patterns(name, path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, configparser.Error, ValueError, AttributeError):
            return ()
        if found is not None:
            return tuple(p for p in found if "test" in p.lower() and p.endswith(".py"))
    return ()


def matches(rel: str, patterns: tuple[str, ...]) -> bool:
    """Whether a repository path is collected by one of ``patterns`` (matched on the file name, as pytest does)."""
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(name, p) if "/" not in p else fnmatch.fnmatch(rel, p) for p in patterns)
