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
