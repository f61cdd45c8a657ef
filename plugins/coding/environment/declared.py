"""What a Python repository declares about its test environment, read from its files (never run).

``read_declaration`` looks at, in this order:

* ``pyproject.toml``: ``[project] dependencies`` (installed with the project), ``requires-python``,
  the test extras of ``[project.optional-dependencies]``, PEP 735 ``[dependency-groups]``, and
  Poetry's ``[tool.poetry.group.*.dependencies]`` / ``[tool.poetry.dev-dependencies]``;
* ``setup.cfg``: ``[options] install_requires`` / ``python_requires`` and the test extras of
  ``[options.extras_require]``; ``setup.py`` is not parsed: installing the project runs it (in
  the sandbox) and so brings its dependencies;
* ``tox.ini``: ``[testenv] deps`` and ``extras`` (the lines without a factor condition);
* requirement files: the ones ``tox.ini`` names, else the first of ``TEST_REQUIREMENTS`` that
  exist (``requirements/tests.txt``, ``requirements-test.txt``, ...; a dev file only when there is
  no test file), plus ``requirements.txt``;
* ``uv.lock`` and ``poetry.lock``: the versions to install (see ``plugins.coding.environment.uv_build``).

Extras and groups: the test ones (``test``, ``tests``, ``testing``) when any exists, else
``dev``. Taking both would also pull in linters, type checkers and documentation tools, which
are slower to install and more likely to conflict (click 8.1's ``requirements/dev.txt`` pins
Sphinx and mypy; its ``tests37.txt`` pins a pytest for Python 3.7 only, which is why only the
first matching file name is taken).

``source_roots`` tells where the project's importable code lies (``src`` for a src layout), so
that the tests import the workspace's code, not an installed copy.
"""

from __future__ import annotations

import configparser
import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

#: Extras and dependency groups that hold what a test suite needs, taken when any exists.
TEST_EXTRAS = ("test", "tests", "testing")
#: Taken only when none of ``TEST_EXTRAS`` exists.
DEV_EXTRAS = ("dev",)
#: Requirement files for tests, by precedence: the first one that exists is taken (then the
#: dev ones only when no test one exists).
TEST_REQUIREMENTS = (
    "requirements/tests.txt", "requirements/test.txt", "requirements/testing.txt",
    "requirements-test.txt", "requirements-tests.txt", "requirements_test.txt", "requirements_tests.txt",
    "test-requirements.txt", "tests-requirements.txt", "test_requirements.txt", "tests/requirements.txt",
)  # fmt: skip
DEV_REQUIREMENTS = ("requirements/dev.txt", "requirements-dev.txt", "requirements_dev.txt", "dev-requirements.txt")
BASE_REQUIREMENTS = ("requirements.txt", "requirements/base.txt")
#: Files that are read whole into the cache key when present (requirement files are added as found).
#: Files whose contents decide the environment (its cache key); an sdist's ``PKG-INFO`` gives the
#: version a project without ``.git`` is built with (hatch-vcs, setuptools-scm).
DECLARING_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "uv.lock", "poetry.lock", "PKG-INFO")
_REQ_INCLUDE = re.compile(r"^\s*(?:-r|--requirement|-c|--constraint)\s*=?\s*(\S+)")
_TOX_FACTOR = re.compile(r"^[\w.,!{}-]+:\s")  # "py38: pytest<8", "tests: tests"


class DeclarationError(ValueError):
    """A declaring file cannot be read (invalid TOML, a link, not UTF-8); the message names it."""


@dataclass
class Declaration:
    """What the repository declares for its test environment.

    Attributes:
        files: declaring files present, relative POSIX paths, sorted: they make the cache key.
        project: the repository is an installable project (``pyproject.toml`` with a
            ``[project]`` or ``[build-system]`` table, or a ``setup.py``).
        name: the project's distribution name when static (``[project] name``), else "".
        extras: extras to install with the project (e.g. ``["tests"]``).
        groups: PEP 735 dependency groups to install.
        requirements: requirement files to install (``-r``), relative paths.
        tox_deps: lines of ``tox.ini`` ``[testenv] deps`` that are not ``-r`` files.
        poetry_names: distribution names of the Poetry test/dev groups.
        lock: ``uv`` or ``poetry`` when such a lock file exists, else None.
        requires_python: the declared ``requires-python`` / ``python_requires``, or "".
        source_roots: folders with the importable code, relative (``.`` or ``src``).
        static: the project's metadata is in ``pyproject.toml`` (a ``[project]`` or Poetry table).
    """

    files: list[str] = field(default_factory=list)
    project: bool = False
    name: str = ""
    extras: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    requirements: list[str] = field(default_factory=list)
    tox_deps: list[str] = field(default_factory=list)
    poetry_names: list[str] = field(default_factory=list)
    lock: str | None = None
    requires_python: str = ""
    source_roots: list[str] = field(default_factory=lambda: ["."])
    static: bool = False

    @property
    def empty(self) -> bool:
        """Nothing to install: no project, requirement file, tox deps or lock."""
        return not (self.project or self.requirements or self.tox_deps or self.groups or self.lock or self.poetry_names)

    def summary(self) -> str:
        """Where the dependencies come from, e.g. ``pyproject.toml[tests] + requirements/tests.txt``."""
        parts = []
        if self.lock:
            parts.append(f"{self.lock}.lock")
        if self.project:
            base = "pyproject.toml" if self.static else "setup.py" if "setup.py" in self.files else "setup.cfg"
            parts.append(base + (f"[{','.join(self.extras)}]" if self.extras else ""))
        if self.groups:
            parts.append("dependency groups " + ", ".join(self.groups))
        parts += self.requirements
        if self.tox_deps or self.poetry_names:
            parts.append("tox.ini deps" if self.tox_deps else "Poetry groups")
        return " + ".join(parts) or "nothing"


def _read_text(root: Path, rel: str) -> str | None:
    path = root / rel
    if path.is_symlink() or not path.is_file():
        return None  # a link could point anywhere on the host: not read, not declared
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DeclarationError(f"cannot read {rel}: {exc}") from None


def _toml(root: Path, rel: str) -> dict[str, Any]:
    text = _read_text(root, rel)
    if text is None:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DeclarationError(f"{rel} is not valid TOML ({exc}); fix it to have its dependencies installed") from None


def _ini(root: Path, rel: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    text = _read_text(root, rel)
    if text is not None:
        try:
            parser.read_string(text, source=rel)
        except configparser.Error as exc:
            raise DeclarationError(f"{rel} cannot be parsed ({exc.message if hasattr(exc, 'message') else exc})") from None
    return parser


def _pick(available: list[str]) -> list[str]:
    """The test extras (or groups) present, else the dev ones."""
    normal = {re.sub(r"[-_.]+", "-", name).lower(): name for name in available}
    chosen = [normal[n] for n in TEST_EXTRAS if n in normal] or [normal[n] for n in DEV_EXTRAS if n in normal]
    return chosen


def _inside(rel: str) -> bool:
    path = PurePosixPath(rel)
    return bool(rel) and not path.is_absolute() and ".." not in path.parts


def _requirement_closure(root: Path, start: list[str]) -> list[str]:
    """``start`` and the files they include with ``-r``/``-c`` (paths relative to the including
    file, as pip reads them), inside the repository only."""
    seen: list[str] = []
    stack = list(reversed(start))
    while stack:
        rel = stack.pop()
        if rel in seen or not _inside(rel):
            continue
        text = _read_text(root, rel)
        if text is None:
            continue
        seen.append(rel)
        folder = PurePosixPath(rel).parent
        for line in text.splitlines():
            match = _REQ_INCLUDE.match(line)
            if match:
                stack.append(str(PurePosixPath(folder, match.group(1))).removeprefix("./"))
    return seen


def _tox(root: Path) -> tuple[list[str], list[str], list[str]]:
    """``(requirement files, other deps lines, extras)`` of ``tox.ini`` ``[testenv]``."""
    parser = _ini(root, "tox.ini")
    if not parser.has_section("testenv"):
        return [], [], []
    files, deps = [], []
    for line in parser.get("testenv", "deps", fallback="").splitlines():
        line = line.split(" #", 1)[0].strip().replace("{toxinidir}/", "").replace("{toxinidir}", ".")
        if not line or line.startswith("#") or _TOX_FACTOR.match(line) or "{" in line:
            continue  # a factor-conditional line or another substitution: for some environments only
        match = _REQ_INCLUDE.match(line) or re.match(r"^-r(\S+)", line)
        if match and line.startswith(("-r", "--requirement")):
            files.append(match.group(1).removeprefix("./"))
        elif not line.startswith("-"):
            deps.append(line)
    extras = []
    for line in parser.get("testenv", "extras", fallback="").splitlines():
        if not _TOX_FACTOR.match(line.strip() + " "):
            extras += [e for e in re.split(r"[,\s]+", line) if e]
    return files, deps, extras


def _poetry_names(poetry: dict[str, Any]) -> list[str]:
    tables = [poetry.get("dev-dependencies", {})]
    groups = poetry.get("group", {})
    chosen = _pick(list(groups))
    tables += [groups[g].get("dependencies", {}) for g in chosen]
    names = []
    for table in tables:
        for name, spec in table.items():
            if name.lower() == "python" or (isinstance(spec, dict) and ({"path", "git", "url"} & set(spec))):
                continue  # the interpreter itself, or a dependency that is not on an index
            names.append(name)
    return sorted(set(names))


def read_declaration(workspace: Path) -> Declaration:
    """Read what ``workspace`` declares (module docstring); reads files only, runs nothing.

    Args:
        workspace: repository root.

    Returns:
        A ``Declaration``; ``empty`` when nothing is declared.

    Raises:
        DeclarationError: a declaring file is not valid TOML / INI or not UTF-8 (named).
    """
    root = workspace.resolve()
    found = Declaration()
    pyproject = _toml(root, "pyproject.toml")
    project = pyproject.get("project", {}) if isinstance(pyproject.get("project"), dict) else {}
    poetry = pyproject.get("tool", {}).get("poetry", {}) if isinstance(pyproject.get("tool"), dict) else {}
    has_setup_py = (root / "setup.py").is_file() and not (root / "setup.py").is_symlink()
    found.project = bool(project) or "build-system" in pyproject or has_setup_py or bool(poetry.get("name"))
    found.static = bool(project) or bool(poetry.get("name"))
    found.name = str(project.get("name") or poetry.get("name") or "")
    found.requires_python = str(project.get("requires-python") or "")
    extras = list((project.get("optional-dependencies") or {}).keys()) + list((poetry.get("extras") or {}).keys())
    setup_cfg = _ini(root, "setup.cfg")
    if setup_cfg.has_section("options.extras_require"):
        extras += list(setup_cfg.options("options.extras_require"))
    if setup_cfg.has_section("options"):
        found.requires_python = found.requires_python or setup_cfg.get("options", "python_requires", fallback="").strip()
        found.name = found.name or (
            setup_cfg.get("metadata", "name", fallback="").strip() if setup_cfg.has_section("metadata") else ""
        )
    tox_files, found.tox_deps, tox_extras = _tox(root)
    if found.project:
        found.extras = sorted(set(_pick(extras)) | {e for e in tox_extras if e in extras})
        if not extras and has_setup_py and not project:
            found.extras = list(TEST_EXTRAS)  # setup.py is not read: ask for them; uv warns about missing ones
    groups = pyproject.get("dependency-groups") or {}
    found.groups = _pick(list(groups)) if isinstance(groups, dict) else []
    if poetry:
        found.poetry_names = _poetry_names(poetry)
    if tox_files:
        chosen = tox_files
    else:
        chosen = next(([f] for f in TEST_REQUIREMENTS if _read_text(root, f) is not None), [])
        chosen = chosen or next(([f] for f in DEV_REQUIREMENTS if _read_text(root, f) is not None), [])
    base = [f for f in BASE_REQUIREMENTS if _read_text(root, f) is not None][:1]
    found.requirements = [f for f in dict.fromkeys(base + chosen) if _inside(f) and _read_text(root, f) is not None]
    found.lock = (
        "uv" if _read_text(root, "uv.lock") is not None else "poetry" if _read_text(root, "poetry.lock") is not None else None
    )
    present = [f for f in DECLARING_FILES if _read_text(root, f) is not None]
    found.files = sorted(set(present) | set(_requirement_closure(root, found.requirements)))
    found.source_roots = source_roots(root, pyproject, setup_cfg)
    return found


def source_roots(
    workspace: Path, pyproject: dict[str, Any] | None = None, setup_cfg: configparser.ConfigParser | None = None
) -> list[str]:
    """Folders (relative POSIX paths) that hold the project's importable packages.

    From the build configuration when it says (setuptools ``package-dir``/``packages.find.where``,
    ``setup.cfg`` ``package_dir``/``where``, Poetry ``packages[].from``, Hatch wheel ``packages``),
    else ``src`` when it holds a package or module, else the repository root (``.``).

    Args:
        workspace: repository root.
        pyproject, setup_cfg: the parsed files when the caller has them (else read here;
            unreadable ones count as absent).

    Returns:
        Existing folders inside the workspace, never through a link; ``["."]`` at least.
    """
    root = workspace.resolve()
    if pyproject is None:
        try:
            pyproject = _toml(root, "pyproject.toml")
        except DeclarationError:
            pyproject = {}
    if setup_cfg is None:
        try:
            setup_cfg = _ini(root, "setup.cfg")
        except DeclarationError:
            setup_cfg = configparser.ConfigParser()
    tool = pyproject.get("tool") if isinstance(pyproject.get("tool"), dict) else {}
    candidates: list[str] = []
    setuptools = tool.get("setuptools", {}) if isinstance(tool.get("setuptools"), dict) else {}
    package_dir = setuptools.get("package-dir")
    if isinstance(package_dir, dict) and isinstance(package_dir.get(""), str):
        candidates.append(package_dir[""])
    find = setuptools.get("packages", {})
    if isinstance(find, dict) and isinstance(find.get("find"), dict):
        candidates += [w for w in find["find"].get("where", []) if isinstance(w, str)]
    for item in (tool.get("poetry", {}) or {}).get("packages", []) or []:
        if isinstance(item, dict) and isinstance(item.get("from"), str):
            candidates.append(item["from"])
    wheel = ((tool.get("hatch", {}) or {}).get("build", {}) or {}).get("targets", {}).get("wheel", {})
    for item in (wheel or {}).get("packages", []) or []:
        if isinstance(item, str) and "/" in item.strip("/"):
            candidates.append(str(PurePosixPath(item.strip("/")).parent))
    if setup_cfg.has_section("options"):
        for line in setup_cfg.get("options", "package_dir", fallback="").splitlines():
            key, _, value = line.partition("=")
            if not key.strip() and value.strip():
                candidates.append(value.strip())
    if setup_cfg.has_section("options.packages.find"):
        candidates.append(setup_cfg.get("options.packages.find", "where", fallback="").strip())
    if not candidates and _holds_code(root / "src"):
        candidates.append("src")
    roots = []
    for rel in candidates:
        rel = str(PurePosixPath(rel.strip() or ".")).removeprefix("./") or "."
        path = (root / rel).resolve()
        if (rel == "." or _inside(rel)) and path.is_dir() and path.is_relative_to(root) and not (root / rel).is_symlink():
            roots.append(rel)
    return list(dict.fromkeys(roots)) or ["."]


def _holds_code(folder: Path) -> bool:
    if folder.is_symlink() or not folder.is_dir():
        return False
    try:
        return any(
            (e.is_dir() and (e / "__init__.py").is_file()) or (e.suffix == ".py" and e.is_file()) for e in folder.iterdir()
        )
    except OSError:
        return False


def cache_key(workspace: Path, files: list[str], settings: list[str]) -> str:
    """SHA-256 (hex) of the declaring files' paths and contents plus ``settings`` (Python version,
    index options, the recipe's version), so equal inputs share one environment.

    Args:
        workspace: repository root.
        files: the declaring files, relative to ``workspace`` (``Declaration.files``,
            ``package.json`` and its lockfile); a missing one is hashed as unreadable.
        settings: other inputs of the build, one string each.
    """
    digest = hashlib.sha256()
    for item in settings:
        digest.update(b"setting\0" + item.encode() + b"\0")
    for rel in files:
        path = workspace / rel
        digest.update(b"file\0" + rel.encode() + b"\0")
        try:
            digest.update(hashlib.sha256(path.read_bytes()).digest() if not path.is_symlink() else b"link")
        except OSError:
            digest.update(b"unreadable")
    return digest.hexdigest()
