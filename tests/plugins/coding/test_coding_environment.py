"""The environment a repository's Python tests run in (plugins.coding.environment), on real files,
the real bwrap sandbox and real uv builds.

Builds are offline and deterministic: uv installs from a local wheel folder (``UV_NO_INDEX``,
``UV_FIND_LINKS``) holding pytest and its dependencies repacked from Horizon's own installation
and tiny wheels made here; the test projects build with a PEP 517 backend that ships in the
project itself (``backend-path``), so no build backend is downloaded either. One test reaches
PyPI (CI has it) and is skipped where PyPI cannot be resolved.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import json
import shutil
import socket
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from core.plugin import Task
from core.sandbox import open_sandbox
from core.tools import ToolContext
from plugins.coding import environment as envmod
from plugins.coding.environment import ENVIRONMENT_FILE, load_environment
from plugins.coding.environment.declared import cache_key, read_declaration, source_roots
from plugins.coding.environment.uv_build import build_or_reuse, env_cache_root
from plugins.coding.plugin import CodingPlugin
from plugins.coding.testing import format_test_run, run_test_suite
from plugins.coding.tools import shell

#: Pure-Python distributions pytest needs, repacked from Horizon's environment into the wheel folder.
PYTEST_DISTRIBUTIONS = ("pytest", "pluggy", "iniconfig", "packaging", "pygments")


# --------------------------------------------------------------------------- wheels, made offline


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def write_wheel(
    folder: Path, name: str, version: str, files: dict[str, bytes], metadata: str = "", tag: str = "py3-none-any"
) -> Path:
    """A wheel (PEP 427) with ``files`` and a dist-info holding ``metadata`` lines after Name/Version."""
    stem = f"{name.replace('-', '_')}-{version}"
    # the dist-info folder of a repacked distribution keeps its own spelling (pygments-2.21.0, not Pygments-2.21.0)
    info = next((arc.split("/")[0] for arc in files if arc.endswith(".dist-info/METADATA")), f"{stem}.dist-info")
    entries = dict(files)
    entries.setdefault(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{metadata}".encode())
    entries[f"{info}/WHEEL"] = f"Wheel-Version: 1.0\nGenerator: horizon-test\nRoot-Is-Purelib: true\nTag: {tag}\n".encode()
    record = [_record_line(arc, data) for arc, data in entries.items()] + [f"{info}/RECORD,,"]
    path = folder / f"{stem}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as out:
        for arc, data in entries.items():
            out.writestr(arc, data)
        out.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


def repack_installed(folder: Path, name: str) -> Path:
    """A wheel of an installed pure-Python distribution, from the files its RECORD lists."""
    dist = importlib.metadata.distribution(name)
    files = {}
    for item in dist.files or []:
        rel = str(item)
        if (
            rel.startswith("..")
            or "__pycache__" in rel
            or rel.endswith((".pyc", "/RECORD", "/INSTALLER", "/REQUESTED", "/direct_url.json"))
        ):
            continue
        files[rel] = Path(item.locate()).read_bytes()
    return write_wheel(folder, dist.metadata["Name"], dist.version, files)


#: A PEP 517 build backend shipped in a test project (``backend-path = ["_backend"]``): builds a wheel
#: of the packages under ``src/`` with the ``[project]`` table's name, version, dependencies and extras.
TINY_BACKEND = """
import base64, hashlib, os, tomllib, zipfile

def _project():
    with open("pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]

def _metadata(project):
    lines = [f"Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, deps in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    return "\\n".join(lines) + "\\n"

def get_requires_for_build_wheel(config_settings=None):
    return []

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _project()
    stem = f"{project['name'].replace('-', '_')}-{project['version']}"
    entries = {}
    for folder, _, names in os.walk("src"):
        for name in names:
            if not name.endswith(".pyc"):
                path = os.path.join(folder, name)
                entries[os.path.relpath(path, "src")] = open(path, "rb").read()
    entries[f"{stem}.dist-info/METADATA"] = _metadata(project).encode()
    entries[f"{stem}.dist-info/WHEEL"] = b"Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
    record = []
    for arc, data in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(data)}")
    record.append(f"{stem}.dist-info/RECORD,,")
    filename = f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w") as out:
        for arc, data in entries.items():
            out.writestr(arc, data)
        out.writestr(f"{stem}.dist-info/RECORD", "\\n".join(record) + "\\n")
    return filename
"""


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    """pytest and its dependencies (repacked) and ``demodep`` 1.0 (a module ``demodep`` with ``ANSWER = 42``)."""
    folder = tmp_path_factory.mktemp("wheelhouse")
    for name in PYTEST_DISTRIBUTIONS:
        repack_installed(folder, name)
    write_wheel(folder, "demodep", "1.0", {"demodep.py": b"ANSWER = 42\n"})
    return folder


@pytest.fixture
def offline_index(monkeypatch, wheelhouse):
    """uv installs only from the wheel folder; the real choice, not the test suite's default."""
    monkeypatch.delenv("HORIZON_TEST_ENV", raising=False)
    monkeypatch.delenv("HORIZON_TEST_PYTHON", raising=False)
    monkeypatch.setenv("UV_NO_INDEX", "1")
    monkeypatch.setenv("UV_FIND_LINKS", str(wheelhouse))
    return wheelhouse


def make_project(
    root: Path, *, extras: dict[str, list[str]] | None = None, requires_python: str = ">=3.8", tests: str = ""
) -> Path:
    """A src-layout project ``demo`` built by its own backend; ``demo`` asks importlib.metadata for
    its version at import, and its tests check that the workspace's copy is the one imported."""
    (root / "_backend").mkdir(parents=True)
    (root / "_backend" / "tinybackend.py").write_text(TINY_BACKEND)
    optional = "".join(f"{name} = {json.dumps(deps)}\n" for name, deps in (extras or {}).items())
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "tinybackend"\nbackend-path = ["_backend"]\n\n'
        f'[project]\nname = "demo"\nversion = "1.2.3"\nrequires-python = "{requires_python}"\n\n'
        f"[project.optional-dependencies]\n{optional}"
    )
    (root / "src" / "demo").mkdir(parents=True)
    (root / "src" / "demo" / "__init__.py").write_text(
        'import importlib.metadata\n__version__ = importlib.metadata.version("demo")\n\ndef double(x):\n    return 2 * x\n'
    )
    (root / "tests").mkdir()
    (root / "tests" / "test_demo.py").write_text(
        "import os\nimport demo\n\n"
        "def test_double():\n    assert demo.double(2) == 4\n\n"
        "def test_metadata():\n    assert demo.__version__ == '1.2.3'\n\n"
        "def test_the_workspace_copy_is_imported():\n    assert demo.__file__.startswith(os.getcwd() + os.sep)\n" + tests
    )
    return root


def context(root: Path, scratch: Path) -> ToolContext:
    scratch.mkdir(parents=True, exist_ok=True)
    return ToolContext(workspace=root, sandbox=open_sandbox(root, scratch), scratch=scratch)


def setup_text(root: Path, scratch: Path, repo: Path | None = None, metadata: dict | None = None) -> tuple[str, ToolContext]:
    ctx = context(root, scratch)
    text = CodingPlugin().setup(Task(plugin="coding", instruction="check", repo=repo, metadata=metadata or {}), ctx)
    return text, ctx


# --------------------------------------------------------------------------- declarations (files only)


def test_declaration_prefers_test_extras_and_the_first_test_requirements_file(tmp_path):
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "tests.txt").write_text("-r base.in\npytest==8.3.4\n")
    (tmp_path / "requirements" / "base.in").write_text("six\n")
    (tmp_path / "requirements" / "tests37.txt").write_text("pytest==7.4.4\n")  # for Python 3.7 only: not taken
    (tmp_path / "requirements" / "dev.txt").write_text("sphinx\n")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "1"\n[project.optional-dependencies]\ntests = ["a"]\ndev = ["b"]\n'
        '[dependency-groups]\ndev = ["c"]\ndocs = ["d"]\n'
    )
    found = read_declaration(tmp_path)
    assert (found.extras, found.groups, found.requirements) == (["tests"], ["dev"], ["requirements/tests.txt"])
    assert found.files == ["pyproject.toml", "requirements/base.in", "requirements/tests.txt"]
    assert found.summary() == "pyproject.toml[tests] + dependency groups dev + requirements/tests.txt"


def test_declaration_reads_tox_deps_setup_cfg_and_layouts(tmp_path):
    (tmp_path / "tox.ini").write_text(
        "[testenv]\ndeps =\n    -r{toxinidir}/ci/reqs.txt\n    hypothesis\n    py38: mock\nextras =\n    testing\n    docs: docs\n"
    )
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "reqs.txt").write_text("pytest\n")
    (tmp_path / "requirements-test.txt").write_text("never\n")  # tox names its own file
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    (tmp_path / "setup.cfg").write_text(
        "[metadata]\nname = legacy\n[options]\npackage_dir =\n    =lib\npython_requires = >=3.9\n"
        "[options.extras_require]\ntesting = pytest\ndocs = sphinx\n"
    )
    (tmp_path / "lib" / "legacy").mkdir(parents=True)
    (tmp_path / "lib" / "legacy" / "__init__.py").write_text("")
    found = read_declaration(tmp_path)
    assert found.requirements == ["ci/reqs.txt"] and found.tox_deps == ["hypothesis"]
    assert found.extras == ["testing"] and found.requires_python == ">=3.9" and found.name == "legacy"
    assert found.source_roots == ["lib"] and found.summary().startswith("setup.py[testing]")
    assert source_roots(make_project(tmp_path / "p")) == ["src"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert read_declaration(empty).empty and source_roots(empty) == ["."]


def test_cache_key_follows_the_declaring_files_contents(tmp_path):
    project = make_project(tmp_path / "p", extras={"test": ["demodep"]})
    decl = read_declaration(project)
    first = cache_key(project, decl.files, ["python=3.11"])
    (project / "src" / "demo" / "__init__.py").write_text("changed = True\n")  # code is not part of the key
    assert cache_key(project, decl.files, ["python=3.11"]) == first
    assert cache_key(project, decl.files, ["python=3.12"]) != first
    (project / "pyproject.toml").write_text((project / "pyproject.toml").read_text().replace("demodep", "demodep>=1"))
    assert cache_key(project, read_declaration(project).files, ["python=3.11"]) != first


# --------------------------------------------------------------------------- built environments


def test_test_extra_is_installed_the_workspace_is_imported_and_the_cache_is_reused(tmp_path, offline_index):
    tests = "\nimport demodep\n\ndef test_dependency():\n    assert demodep.ANSWER == 42\n"
    first = make_project(tmp_path / "one" / "ws", extras={"test": ["demodep"]}, tests=tests)
    text, ctx = setup_text(first, tmp_path / "one" / "scratch")
    assert "Test environment: built with uv from pyproject.toml[test] in " in text, text
    assert "The pytest test suite has 4 tests; 0 fail now." in text, text
    chosen = load_environment(ctx.scratch)
    assert chosen is not None and chosen.kind == "built" and chosen.source_roots == ["src"]
    env = Path(chosen.prefix)
    assert env.parent == env_cache_root() and not list(env_cache_root().glob(".build-*"))
    site = next(env.glob("lib/python3*/site-packages"))
    assert (site / "demodep.py").is_file() and list(site.glob("demo-1.2.3.dist-info"))
    assert not (site / "demo").exists(), "the project's own files are removed: the workspace's are imported"

    # shell commands run in it too: its python imports the dependency and the workspace's copy of the project
    assert "shell tool run in it too" in text, text
    probe = shell({"command": "python -c 'import demodep, demo; print(demodep.ANSWER, demo.__file__)'; which pytest"}, ctx)
    assert f"42 {first.resolve()}/src/demo/__init__.py" in probe.output and f"{env}/bin/pytest" in probe.output, probe.output

    # run_tests reads the choice from scratch; a copy at another path (as the grader makes) imports its own files
    assert run_test_suite(ctx.sandbox, first, ctx.scratch).count("passed") == 4
    copy = tmp_path / "grading-copy"
    shutil.copytree(first, copy)
    graded = run_test_suite(open_sandbox(copy, tmp_path / "g-scratch"), copy, tmp_path / "g-scratch", environment=chosen)
    assert graded.count("passed") == 4, format_test_run(graded)

    # the same declaring files in another run: the cached environment is used, nothing is built
    second = make_project(tmp_path / "two" / "ws", extras={"test": ["demodep"]}, tests=tests)
    text, ctx2 = setup_text(second, tmp_path / "two" / "scratch")
    assert "Test environment: reused the environment built earlier with uv from pyproject.toml[test]" in text, text
    assert load_environment(ctx2.scratch).prefix == chosen.prefix and load_environment(ctx2.scratch).kind == "cached"
    assert not list((ctx2.scratch / "runs").glob("*-environment")), "no build ran the second time"


def test_a_uv_lock_gives_the_locked_versions(tmp_path, offline_index):
    tests = "\nimport demodep\n\ndef test_locked_version():\n    assert demodep.ANSWER == 42\n"
    project = make_project(tmp_path / "ws", extras={"test": ["demodep"]}, tests=tests)
    subprocess.run([envmod.find_uv(), "lock", "--no-index", "--find-links", str(offline_index)], cwd=project, check=True,
                   capture_output=True)  # fmt: skip
    assert 'name = "demodep"' in (project / "uv.lock").read_text()
    write_wheel(offline_index, "demodep", "2.0", {"demodep.py": b"ANSWER = 2\n"})  # newer, not in the lock
    try:
        text, ctx = setup_text(project, tmp_path / "scratch")
    finally:
        (offline_index / "demodep-2.0-py3-none-any.whl").unlink()
    assert "Test environment: built with uv from uv.lock + pyproject.toml[test]" in text, text
    assert "The pytest test suite has 4 tests; 0 fail now." in text, text  # demodep 1.0, as locked
    log = next((ctx.scratch / "runs").glob("*-environment/build.log")).read_text()
    assert f"{envmod.find_uv()} export --frozen" in log


def test_concurrent_builds_of_one_key_give_one_complete_environment(tmp_path, offline_index):
    project = make_project(tmp_path / "ws", extras={"test": ["demodep"]})
    decl = read_declaration(project)
    key = cache_key(project, decl.files, ["concurrency-test"])
    results = []

    def build(n: int) -> None:
        scratch = tmp_path / f"scratch{n}"
        scratch.mkdir()
        results.append(build_or_reuse(open_sandbox(project, scratch), project, scratch, decl, key, envmod.find_uv()))

    threads = [threading.Thread(target=build, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.error for r in results] == ["", ""]
    assert {r.path for r in results} == {env_cache_root() / key[:32]}
    assert sorted(p.name for p in env_cache_root().iterdir()) == [key[:32]], "no half-built folder is left"
    assert json.loads((env_cache_root() / key[:32] / "horizon-env.json").read_text())["project"]["name"] == "demo"


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"extras": {"test": ["no-such-dependency-xyz"]}}, "failed after"),
        ({"requires_python": "<3.0"}, "the project requires Python <3.0 and Horizon runs"),
    ],
)
def test_a_build_that_cannot_work_falls_back_to_horizon_and_says_why(tmp_path, offline_index, change, said):
    project = make_project(tmp_path / "ws", **change)
    text, ctx = setup_text(project, tmp_path / "scratch")
    line = text.splitlines()[0]
    assert line.startswith("Test environment: Horizon's own Python") and said in text, text
    if "extras" in change:
        assert "no-such-dependency-xyz" in text and "Tests that need the project's dependencies will fail to import" in text
    assert load_environment(ctx.scratch).kind == "horizon"
    # the tests still run, with the workspace's src layout imported; without the project's metadata
    # (never built), demo's importlib.metadata.version("demo") fails, and the run says so
    shown = format_test_run(run_test_suite(ctx.sandbox, project, ctx.scratch))
    assert "ERROR tests/test_demo.py (could not be imported: importlib.metadata.PackageNotFoundError: " in shown, shown


# --------------------------------------------------------------------------- repository environments and overrides


@pytest.fixture(scope="module")
def repo_venv(tmp_path_factory, wheelhouse) -> Path:
    """A virtual environment made with ``python -m venv`` holding pytest and demodep (from the wheel folder)."""
    venv = tmp_path_factory.mktemp("venv") / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run([envmod.find_uv(), "pip", "install", "--python", str(venv / "bin" / "python"), "--no-index",
                    "--find-links", str(wheelhouse), "pytest", "demodep"], check=True, capture_output=True)  # fmt: skip
    return venv


def _repo_needing_demodep(root: Path) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_dep.py").write_text(
        "import sys\nimport demodep\n\ndef test_dep():\n    assert demodep.ANSWER == 42\n"
        "\ndef test_interpreter():\n    assert '.venv' in sys.prefix\n"
    )
    (root / "requirements.txt").write_text("no-such-dependency-xyz\n")  # never built: the venv comes first
    return root


def test_the_repositorys_own_venv_is_used_in_the_workspace_or_the_original_repository(tmp_path, offline_index, repo_venv):
    workspace = _repo_needing_demodep(tmp_path / "ws")
    shutil.copytree(repo_venv, workspace / ".venv", symlinks=True)
    text, ctx = setup_text(workspace, tmp_path / "scratch")
    assert text.startswith("Test environment: the repository's .venv (Python "), text
    assert "2 tests; 0 fail now" in text, text
    assert load_environment(ctx.scratch).python == ".venv/bin/python"  # relative: the grading copy uses its own copy

    # a run's workspace is a copy without .venv: the original repository's is used, shown to the sandbox
    # (it lies under /tmp, which the sandbox replaces with an empty folder)
    copy = _repo_needing_demodep(tmp_path / "run-ws")
    original = tmp_path / "original"
    shutil.copytree(workspace, original, symlinks=True)
    text, ctx = setup_text(copy, tmp_path / "scratch2", repo=original)
    assert f"Test environment: the repository's .venv ({original / '.venv'}) (Python " in text, text
    assert "2 tests; 0 fail now" in text, text
    assert str(original / ".venv") in load_environment(ctx.scratch).visible


def test_horizon_test_python_outside_the_sandboxs_view_is_shown_to_it(tmp_path, offline_index, repo_venv, monkeypatch):
    workspace = _repo_needing_demodep(tmp_path / "ws")
    monkeypatch.setenv("HORIZON_TEST_PYTHON", str(repo_venv / "bin" / "python"))
    text, _ = setup_text(workspace, tmp_path / "scratch")
    assert text.startswith(f"Test environment: HORIZON_TEST_PYTHON={repo_venv / 'bin' / 'python'} (Python "), text
    assert "2 tests; 0 fail now" in text, text

    monkeypatch.setenv("HORIZON_TEST_PYTHON", str(tmp_path / "missing" / "python"))
    text, _ = setup_text(_repo_needing_demodep(tmp_path / "ws2"), tmp_path / "scratch2")
    assert "Horizon's own Python" in text and "does not run in the sandbox" in text and "does not exist" in text, text


def test_a_src_layout_package_named_like_an_installed_one_is_imported_from_the_workspace(tmp_path, monkeypatch):
    monkeypatch.delenv("HORIZON_TEST_ENV", raising=False)
    workspace = tmp_path / "ws"
    (workspace / "src" / "click").mkdir(parents=True)  # Horizon's environment has click (typer's)
    (workspace / "src" / "click" / "__init__.py").write_text("WORKSPACE_COPY = True\n")
    # a source root is on PYTHONPATH, but pytest itself is imported before it is (PYTEST_LAUNCHER)
    (workspace / "src" / "pytest.py").write_text("import sys\nsys.exit(0)\n")
    (workspace / "tests").mkdir()
    (workspace / "tests" / "test_click.py").write_text(
        "import os, click\n\ndef test_workspace_copy():\n"
        "    assert click.__file__.startswith(os.getcwd() + os.sep) and click.WORKSPACE_COPY\n"
    )
    text, ctx = setup_text(workspace, tmp_path / "scratch")
    assert "because the repository declares no dependencies" in text.splitlines()[0], text
    assert "1 tests; 0 fail now" in text, text
    copy = tmp_path / "copy"
    shutil.copytree(workspace, copy)
    graded = run_test_suite(open_sandbox(copy, tmp_path / "g"), copy, tmp_path / "g", environment=load_environment(ctx.scratch))
    assert graded.count("passed") == 1, format_test_run(graded)


# --------------------------------------------------------------------------- missing dependencies are named


def test_a_module_that_cannot_import_its_dependency_is_named_with_the_missing_module(tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    (workspace / "tests").mkdir(parents=True)
    (workspace / "tests" / "test_needs_dep.py").write_text("import nosuch_dep_xyz\n\ndef test_a():\n    pass\n")
    (workspace / "tests" / "test_ok.py").write_text("def test_b():\n    pass\n")
    text, ctx = setup_text(workspace, tmp_path / "scratch")
    assert "- tests/test_needs_dep.py (could not be imported: ModuleNotFoundError: No module named 'nosuch_dep_xyz')" in text, (
        text
    )
    assert "1 test module(s) could not be collected (importing them failed)" in text, text
    shown = format_test_run(run_test_suite(ctx.sandbox, workspace, ctx.scratch))
    assert "ERROR tests/test_needs_dep.py (could not be imported: ModuleNotFoundError: No module named 'nosuch_dep_xyz')" in shown
    assert "PASSED" not in shown and "1 passed, 1 error" in shown

    # a conftest.py that cannot import stops pytest before any test: never "0 tests; 0 fail"
    (workspace / "conftest.py").write_text("import nosuch_plugin_dep\n")
    text, _ = setup_text(workspace, tmp_path / "scratch2")
    assert "0 tests" not in text and "reported no test results (exit code 4)" in text, text
    assert "- conftest.py: ModuleNotFoundError: No module named 'nosuch_plugin_dep'" in text, text


def test_the_choice_is_saved_and_a_resumed_set_up_keeps_it(tmp_path, monkeypatch):
    monkeypatch.delenv("HORIZON_TEST_ENV", raising=False)
    workspace = tmp_path / "ws"
    (workspace / "tests").mkdir(parents=True)
    (workspace / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    ctx = context(workspace, tmp_path / "scratch")
    task = Task(plugin="coding", instruction="check")
    line = CodingPlugin()._environment(task, ctx)  # the set-up's first step, without the baseline run
    saved = json.loads((ctx.scratch / ENVIRONMENT_FILE).read_text())
    assert saved["kind"] == "horizon" and saved["python"] == sys.executable and line.startswith("Test environment: Horizon's")
    monkeypatch.setenv("HORIZON_TEST_ENV", "horizon")  # a different setting now: the saved choice still wins
    assert CodingPlugin()._environment(task, ctx) == line


# --------------------------------------------------------------------------- one build from PyPI


def _pypi_reachable() -> bool:
    try:
        socket.getaddrinfo("pypi.org", 443)
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _pypi_reachable(), reason="PyPI cannot be resolved here (CI has it)")
def test_a_real_project_builds_from_pypi_with_its_build_backend(tmp_path, monkeypatch):
    """flit_core (the build backend) and six (the test extra) come from PyPI, in the networked build sandbox."""
    for name in ("HORIZON_TEST_ENV", "HORIZON_TEST_PYTHON", "UV_NO_INDEX", "UV_FIND_LINKS", "UV_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "ws"
    (root / "src" / "tinyflit").mkdir(parents=True)
    (root / "src" / "tinyflit" / "__init__.py").write_text('"""A tiny package."""\n__version__ = "0.1"\n')
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["flit_core>=3.9,<4"]\nbuild-backend = "flit_core.buildapi"\n'
        '[project]\nname = "tinyflit"\ndynamic = ["version", "description"]\n'
        '[project.optional-dependencies]\ntest = ["six==1.17.0"]\n'
    )
    (root / "tests").mkdir()
    (root / "tests" / "test_it.py").write_text(
        "import importlib.metadata, six, tinyflit\n\ndef test_it():\n"
        "    assert six.__version__ == '1.17.0' and importlib.metadata.version('tinyflit') == tinyflit.__version__\n"
    )
    text, _ = setup_text(root, tmp_path / "scratch")
    assert "Test environment: built with uv from pyproject.toml[test]" in text, text
    assert "1 tests; 0 fail now" in text, text


@pytest.mark.skipif(not _pypi_reachable(), reason="PyPI cannot be resolved here (CI has it)")
def test_dependencies_as_of_a_date_install_what_pypi_had_then(tmp_path, monkeypatch):
    """A task's ``dependencies_as_of`` (an old release's date): six 1.17.0 (December 2024) is not
    taken for a 2024-01-01 build, 1.16.0 (May 2021) is; pytest too is of its time."""
    for name in ("HORIZON_TEST_ENV", "HORIZON_TEST_PYTHON", "UV_NO_INDEX", "UV_FIND_LINKS", "UV_OFFLINE", "UV_EXCLUDE_NEWER"):
        monkeypatch.delenv(name, raising=False)
    root = make_project(tmp_path / "ws", extras={"test": ["six"]},
                        tests="\nimport six, pytest\n\ndef test_old():\n    assert (six.__version__, pytest.__version__) == ('1.16.0', '7.4.4')\n")  # fmt: skip
    text, ctx = setup_text(root, tmp_path / "scratch", metadata={"dependencies_as_of": "2024-01-01T00:00:00Z"})
    assert "pyproject.toml[test] (distributions uploaded before 2024-01-01T00:00:00Z)" in text, text
    assert "fail now" in text and run_test_suite(ctx.sandbox, root, ctx.scratch).count("passed") == 4, text
