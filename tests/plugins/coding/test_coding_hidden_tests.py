"""Tasks graded by hidden tests (``hidden_tests`` in task.json): the starting tree has no failing
test, the fixed release's test is built into the sources cache beside it, hidden from the
episode's sandbox, and written into the grader's copy only. Real eval episodes (scripted
policies, the real sandbox, grader and store) on two local sdists of a src-layout package.

Moved from tests/core/eval/ (issue 17): hidden tests are graded by the coding plugin's reward.
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import tempfile
from pathlib import Path

import pytest

from core.eval.runner import episode_specs, run_episode
from core.eval.sources import tree_digest
from core.eval.tasks import load_task
from core.export.source import load_run

PYPROJECT = '[project]\nname = "mini"\nversion = "{v}"\n[tool.pytest.ini_options]\npythonpath = ["src"]\n'
BUGGY = "def clamp(x, low, high):\n    return max(low, x)\n"
FIXED = "def clamp(x, low, high):\n    return min(high, max(low, x))\n"
OLD_TEST = "from mini import clamp\n\n\ndef test_low():\n    assert clamp(-1, 0, 5) == 0\n"
NEW_TEST = OLD_TEST + "\n\ndef test_high():\n    assert clamp(9, 0, 5) == 5\n"
FIX_DIFF = """\
diff --git a/src/mini/__init__.py b/src/mini/__init__.py
--- a/src/mini/__init__.py
+++ b/src/mini/__init__.py
@@ -1,2 +1,2 @@
 def clamp(x, low, high):
-    return max(low, x)
+    return min(high, max(low, x))
"""


def sdist(version: str, source: str, test: str) -> bytes:
    files = {"pyproject.toml": PYPROJECT.format(v=version), "src/mini/__init__.py": source, "tests/test_clamp.py": test}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for rel, text in files.items():
            info = tarfile.TarInfo(f"mini-{version}/{rel}")
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    return buffer.getvalue()


@pytest.fixture
def visible():
    """Under /var/tmp: a folder the sandbox would show (it hides /tmp and homes anyway)."""
    folder = Path(tempfile.mkdtemp(prefix="horizon-hidden-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def task(visible, monkeypatch):
    """A hidden-tests task folder whose two archives lie in a sources cache the sandbox could see."""
    import hashlib

    cache = visible / "sources"
    monkeypatch.setenv("HORIZON_SOURCES_CACHE", str(cache))
    (cache / "archives").mkdir(parents=True)
    layers = []
    for version, source, test in (("1.0", BUGGY, OLD_TEST), ("1.1", FIXED, NEW_TEST)):
        data = sdist(version, source, test)
        sha = hashlib.sha256(data).hexdigest()
        (cache / "archives" / sha).write_bytes(data)
        layers.append({"url": f"http://127.0.0.1:9/mini-{version}.tar.gz", "sha256": sha})
    digests = {}
    for name, files in (("start", {"tests/test_clamp.py": OLD_TEST, "src/mini/__init__.py": BUGGY, "pyproject.toml": PYPROJECT.format(v="1.0")}),
                        ("hidden", {"tests/test_clamp.py": NEW_TEST})):  # fmt: skip
        tree = visible / f"digest-{name}"
        for rel, text in files.items():
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            (tree / rel).write_text(text)
        digests[name] = tree_digest(tree)
    folder = visible / "suite" / "mini-1.1-clamp-high"
    folder.mkdir(parents=True)
    (folder / "fix.diff").write_text(FIX_DIFF)
    (folder / "task.json").write_text(json.dumps({
        "instruction": "mini: clamp(9, 0, 5) returns 9; a value above the upper bound should come back as the bound.",
        "source": {"package": "mini", "buggy_version": "1.0", "fixed_version": "1.1"},
        "fail_to_pass": ["tests/test_clamp.py::test_high"], "pass_to_pass": ["tests/test_clamp.py::test_low"],
        "start": {"archives": [layers[0]], "tree_sha256": digests["start"]},
        "hidden_tests": {"archives": [{**layers[1], "include": ["tests/test_clamp.py"]}], "tree_sha256": digests["hidden"]},
        "dependencies_as_of": "2024-03-01T00:00:00Z",
    }))  # fmt: skip
    return folder


def specs_for(task_folder: Path, policy: str, tmp_path: Path):
    loaded = load_task(task_folder)
    return loaded, episode_specs([loaded], plugin="coding", attempts=1, policy=policy, policy_config=None, limits={"max_steps": 10},
                                 pricing={}, isolated=True, home=tmp_path / "home", scripts_dir=tmp_path / "scripts")  # fmt: skip


def test_the_hidden_test_is_outside_the_starting_tree_and_named_in_the_episode(task, tmp_path):
    loaded, specs = specs_for(task, "finish-only", tmp_path)
    hidden = Path(loaded.metadata["hidden_tests"])
    assert "test_high" in (hidden / "tests" / "test_clamp.py").read_text()
    assert "test_high" not in (loaded.repo / "tests" / "test_clamp.py").read_text()  # no failing test to start from
    assert specs[0].metadata["sandbox_hidden"] == [str(hidden)]
    assert specs[0].metadata["dependencies_as_of"] == "2024-03-01T00:00:00Z"


def test_reference_fix_resolves_and_finish_only_scores_nothing(task, tmp_path):
    _, [reference] = specs_for(task, "reference", tmp_path)
    done = run_episode(reference)
    assert done.resolved and done.reward == 1.0, done.summary
    assert done.fail_to_pass_passed == 1
    _, [finish] = specs_for(task, "finish-only", tmp_path)
    idle = run_episode(finish)
    assert not idle.resolved and idle.reward == 0.0, idle.summary


def test_a_command_in_the_episode_cannot_read_the_hidden_tests(task, tmp_path):
    loaded, [spec] = specs_for(task, "finish-only", tmp_path)
    hidden = Path(loaded.metadata["hidden_tests"])
    script = tmp_path / "peek.jsonl"
    peek = f"cat {hidden}/tests/test_clamp.py; ls -a {hidden} | wc -l"
    script.write_text("\n".join(json.dumps(c) for c in [
        {"tool": "shell", "arguments": {"command": peek, "timeout_s": 30}},
        {"tool": "finish", "arguments": {"summary": "looked"}},
    ]) + "\n")  # fmt: skip
    result = run_episode(spec.model_copy(update={"policy": {"kind": "scripted", "script": str(script)}}))
    output = load_run(result.run_id, tmp_path / "home").tool_calls[0]["output"]
    assert "test_high" not in output and "No such file" in output, output
    task_message = " ".join(str(m.content) for m in load_run(result.run_id, tmp_path / "home").messages if m.role == "user")
    assert "own tests, which you do not see" in task_message, task_message
