"""Build suites/threed/ from the scene examples in examples/threed/ (run from the repository root).

Each example scene becomes one task folder::

    suites/threed/<scene>/
        task.json         {"plugin": "threed", "instruction": the scene's request}
        repo/             the scene's task folder as it is (task.json with the checks, reference.stl)
        reference.jsonl   the example's scripted trajectory (examples/threed/<scene>.jsonl)

Usage: .venv/bin/python suites/threed/build.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "threed"
SCENES = ("low-table", "pen-holder", "bookshelf")


def build(scene: str, out: Path) -> Path:
    """Write the task folder of one example scene under ``out``; return it."""
    folder = out / scene
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(EXAMPLES / scene, folder / "repo")
    request = json.loads((folder / "repo" / "task.json").read_text(encoding="utf-8"))["request"]
    (folder / "task.json").write_text(json.dumps({"plugin": "threed", "instruction": request}, indent=1) + "\n", encoding="utf-8")
    shutil.copyfile(EXAMPLES / f"{scene}.jsonl", folder / "reference.jsonl")
    return folder


if __name__ == "__main__":
    for name in SCENES:
        print(build(name, Path(__file__).resolve().parent))
