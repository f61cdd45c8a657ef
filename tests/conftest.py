"""Shared fixtures: a private Horizon home per test and fresh copies of the example repositories."""

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="session")
def sources_cache(tmp_path_factory):
    """One sources cache for the session (``core.eval.sources``): suite tasks' archives are
    downloaded from PyPI once per session, not once per test. ``$HORIZON_SOURCES_CACHE``, when
    set, is used instead (CI can keep it between sessions; its content is checked on every use)."""
    return Path(os.environ.get("HORIZON_SOURCES_CACHE") or tmp_path_factory.mktemp("sources-cache"))


@pytest.fixture(autouse=True)
def horizon_home(tmp_path, monkeypatch, sources_cache):
    """Runs, config and checkpoints of each test go to its own folder, never to ~/.horizon."""
    home = tmp_path / "horizon-home"
    monkeypatch.setenv("HORIZON_HOME", str(home))
    monkeypatch.setenv("HORIZON_SOURCES_CACHE", str(sources_cache))
    for var in ("HORIZON_BASE_URL", "HORIZON_MODEL", "HORIZON_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture(autouse=True)
def horizon_test_env(monkeypatch):
    """The coding plugin runs Python tests with Horizon's own interpreter, as before project
    environments existed: the example repositories need nothing but pytest, and building each
    one's declared environment with uv would need the network in every test that sets a coding
    run up. tests/plugins/coding/test_coding_environment.py tests the real choice (it clears this)."""
    monkeypatch.setenv("HORIZON_TEST_ENV", "horizon")


@pytest.fixture
def java_repo(tmp_path):
    """A private copy of examples/java-user-service (two tests fail with an NPE)."""
    return Path(shutil.copytree(EXAMPLES / "java-user-service", tmp_path / "java-user-service"))


@pytest.fixture
def python_repo(tmp_path):
    """A private copy of examples/python-user-service (two tests fail with an AttributeError)."""
    return Path(shutil.copytree(EXAMPLES / "python-user-service", tmp_path / "python-user-service"))


NOTES_PLUGIN = ROOT / "tests" / "notes_plugin"


@pytest.fixture
def notes_plugin(monkeypatch):
    """Install ``notes``, the minimal test plugin (``tests/notes_plugin/horizon_notes.py``), through
    the same discovery path as any plugin: its folder, with a dist-info registering it in the
    ``horizon.plugins`` entry-point group, goes first on ``sys.path`` and on ``PYTHONPATH`` (for the
    ``agent`` processes a test starts). Returns the plugin's name."""
    monkeypatch.syspath_prepend(str(NOTES_PLUGIN))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(NOTES_PLUGIN), os.environ.get("PYTHONPATH", "")) if p))
    return "notes"


@pytest.fixture
def notes_folder(tmp_path):
    """A folder of text files for a ``notes`` episode: ``log.md`` and ``ANSWER.txt`` (``todo``)."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "log.md").write_text("# Log\n<!-- end -->\n")
    (folder / "ANSWER.txt").write_text("todo\n")
    return folder
