"""Each built-in plugin's manifest (``plugins/<name>/manifest.py``), which ``agent plugins`` lists
without loading the plugin (``core.plugin.describe_plugin``), says what the loaded plugin says:
its description, its tools in order, and the modules of its extra that loading it imports. Each
check runs in a fresh interpreter, so that what the manifest imports is seen alone."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = """
import importlib, json, sys
name = sys.argv[1]
before = set(sys.modules)
manifest = importlib.import_module(f"plugins.{name}.manifest")
alone = sorted(m for m in set(sys.modules) - before if m.split(".")[0] not in sys.stdlib_module_names)  # the standard library aside
from core.plugin import load_plugin
plugin = load_plugin(name)
tops = sorted({m.split(".")[0] for m in sys.modules})
print(json.dumps({"alone": alone, "description": plugin.description, "tools": [t.name for t in plugin.tools()],
                  "manifest": {"description": manifest.DESCRIPTION, "tools": list(manifest.TOOLS), "requires": list(manifest.REQUIRES)},
                  "loaded": tops}))
"""


def _extra_distributions(name: str) -> set[str]:
    """The distributions only the plugin's extra brings: one the core dependencies list too (the
    threed extra caps core's pyarrow for bpy) is installed without the extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def names(requirements: list[str]) -> set[str]:
        return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}

    return names(project["optional-dependencies"][name]) - names(project["dependencies"])


@pytest.mark.parametrize("name", ["coding", "threed", "finance"])
def test_a_plugins_manifest_says_what_the_loaded_plugin_says(name):
    from importlib.metadata import packages_distributions

    done = subprocess.run([sys.executable, "-c", CHECK, name], capture_output=True, text=True, cwd=ROOT, timeout=600, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["alone"] == ["plugins", f"plugins.{name}", f"plugins.{name}.manifest"]  # the manifest imports nothing of the plugin
    manifest = found["manifest"]
    assert manifest["description"] == found["description"]
    assert manifest["tools"] == found["tools"], f"the manifest's TOOLS differ from the plugin's tools(): update plugins/{name}/manifest.py"
    assert set(manifest["requires"]) <= set(found["loaded"]), "REQUIRES names a module loading the plugin does not import"
    extra = _extra_distributions(name)
    by_module = {m: {d.lower().replace("_", "-") for d in ds} for m, ds in packages_distributions().items()}
    loaded = {d for m in found["loaded"] for d in by_module.get(m, set()) & extra}  # the extra's distributions loading it imports
    required = {d for m in manifest["requires"] for d in by_module.get(m, set())}
    assert loaded <= required, f"loading {name} imports {sorted(loaded - required)} of its extra: add a module of each to REQUIRES"
