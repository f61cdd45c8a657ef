"""Each plugin's packages are an extra: the coding agent runs without Blender, Ray or the finance
stack, and a plugin whose extra is missing says what to install.

The whole-install check (a fresh virtual environment with ``pip install -e '.[coding]'``) takes
minutes and the network; ``docs/architecture.md`` records it. Here the same is checked in seconds:
the other extras' top-level modules are made unimportable in a child process that runs the CLI.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The top-level modules of the threed, finance and rl extras that the coding extra does not
#: also install (it has networkx and scipy, for the repository map's PageRank).
OTHER_EXTRAS = ["bpy", "trimesh", "manifold3d", "pdfplumber", "pypdfium2", "yfinance", "bm25s", "Stemmer", "snowballstemmer",
                "matplotlib", "markdown_it", "ray"]  # fmt: skip
BLOCKER = """
import sys
from importlib.abc import MetaPathFinder

class Missing(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Missing())
from core.cli import main
main()
"""


def _extras() -> tuple[list[str], dict[str, list[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project["dependencies"], project["optional-dependencies"]


def _names(requirements: list[str]) -> set[str]:
    import re

    return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower() for r in requirements}


def test_core_installs_no_plugins_packages_and_all_installs_every_extra():
    core, extras = _extras()
    plugin_packages = _names(extras["coding"]) | _names(extras["threed"]) | _names(extras["finance"]) | _names(extras["rl"])
    assert {"bpy", "trimesh", "ray", "yfinance", "pdfplumber", "tree-sitter"} <= plugin_packages
    assert _names(extras["coding"]) & {"bpy", "trimesh", "ray", "yfinance", "pdfplumber", "matplotlib"} == set()
    assert _names(core) & plugin_packages == {"pyarrow"}  # the threed extra only caps core's pyarrow (below)
    assert extras["all"] == ["horizon-agents[coding,threed,finance,rl,service]"]
    assert "'.[all,dev,train,verl]'" in (ROOT / "setup.sh").read_text()  # CI runs the trainer tests too


def test_pyarrow_is_capped_only_where_bpy_is_installed_and_train_holds_the_trainers():
    """bpy 5.0 pins NumPy < 2 and pyarrow 22+ needs NumPy 2: the cap sits in the threed extra, so
    ``pip install horizon-agents[rl] trl datasets`` takes datasets 5.2 (pyarrow 24+) without bpy."""
    core, extras = _extras()
    assert [r for r in core if _names([r]) == {"pyarrow"}] == ["pyarrow>=15"]
    capped = [r for r in extras["threed"] if _names([r]) == {"pyarrow"}]
    assert len(capped) == 1 and "<22" in capped[0]
    assert {"trl", "transformers", "datasets", "accelerate", "torch"} <= _names(extras["train"])
    assert _names(extras["train"]) & {"bpy", "pyarrow"} == set()
    assert extras["verl"] == ["horizon-agents[train]", "verl>=0.5"]


def agent(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """``agent ARGS`` in a child whose other extras cannot be imported."""
    code = f"BLOCKED = {json.dumps(OTHER_EXTRAS)}\n{BLOCKER}"
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "HORIZON_HOME": str(tmp_path / "home"), "HORIZON_TEST_ENV": "horizon",
           "COLUMNS": "200", "NO_COLOR": "1"}  # fmt: skip
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600, check=False)


def test_the_coding_agent_runs_without_the_other_extras_and_a_missing_extra_names_its_install(tmp_path):
    done = agent(tmp_path, "run", "coding", "fix NPE in user module", "--repo", "examples/python-user-service",
                 "--policy", "scripted", "--script", "examples/scripts/fix-python-npe.jsonl")  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "reward 1.000" in done.stdout, done.stdout[-2000:]
    refused = agent(tmp_path, "run", "threed", "a chair")
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "the threed plugin cannot load: ModuleNotFoundError" in said
    assert "pip install 'horizon-agents[threed]'" in said, said
    listed = " ".join(agent(tmp_path, "plugins").stdout.split())  # the table's lines joined: a long cell wraps
    assert "finance" in listed and "pip install 'horizon-agents[finance]'" in listed, listed
    assert re.search(r"coding [\d.]+ \d+ Fix bugs in Python", listed) and "plugins.coding:CodingPlugin" in listed, listed  # its version, tools and what it does
