"""static_check, finish, and the tool list as the model sees it."""

from __future__ import annotations

import pytest

from core import workspace as ws
from plugins.coding.static_compare import split_findings
from plugins.coding.tools import CODING_TOOLS, finish, static_check


def test_static_check_python_clean_then_with_findings(python_repo):
    clean = static_check({}, python_repo.ctx)
    assert not clean.is_error, clean.output
    assert clean.output == "ruff: no findings in the repository"
    assert clean.data == {"findings": {"ruff": []}, "preexisting": {"ruff": []}, "compared": False}  # no starting files known

    (python_repo.root / "users" / "sloppy.py").write_text("import os\n\n\ndef f():\n    return undefined_name\n")
    dirty = static_check({"path": "users"}, python_repo.ctx)
    findings = dirty.data["findings"]["ruff"]
    assert any(f.startswith("users/sloppy.py:1:8: F401") for f in findings), findings
    assert any(f.startswith("users/sloppy.py:5:12: F821") for f in findings), findings
    assert dirty.output.splitlines()[0].startswith("ruff: ") and "finding" in dirty.output.splitlines()[0]
    assert "users/sloppy.py:1:8: F401" in dirty.output
    assert not (python_repo.root / ".ruff_cache").exists()

    one_file = static_check({"path": "users/models.py"}, python_repo.ctx)
    assert one_file.output == "ruff: no findings in users/models.py"


def test_static_check_java(java_repo):
    result = static_check({}, java_repo.ctx)
    assert not result.is_error, result.output
    findings = result.data["findings"]["javac"]
    assert findings == [
        (
            "src/main/java/com/example/users/UserNotFoundException.java:4: warning: [serial] serializable class "
            "UserNotFoundException has no definition of serialVersionUID"
        )
    ]
    assert result.output.splitlines()[0] == "javac -Xlint:all: 1 finding in the repository"

    clean_part = static_check({"path": "src/test"}, java_repo.ctx)
    assert clean_part.output == "javac -Xlint:all: no findings in src/test"

    service = java_repo.root / "src/main/java/com/example/users/UserService.java"
    service.write_text(service.read_text().replace("return nickname;", "return nickName;"))
    broken = static_check({"path": "src/main/java/com/example/users/UserService.java"}, java_repo.ctx)
    errors = broken.data["findings"]["javac"]
    assert len(errors) == 1
    assert errors[0].startswith("src/main/java/com/example/users/UserService.java:46: error: cannot find symbol | symbol:")
    assert not list(java_repo.root.rglob("*.class"))


LEGACY = "import os\n\n\ndef keep(items=[]):\n    unused = 1\n    return items\n"


def with_baseline(repo):
    """Record the repository's files as the run's starting files, as ``agent run`` does (``ToolContext.baseline``)."""
    repo.ctx.baseline = repo.ctx.scratch.parent / "baseline.git"
    ws.snapshot(repo.root, repo.ctx.baseline)
    return repo.ctx


def test_static_check_lists_only_what_the_run_introduced(python_repo):
    (python_repo.root / "ruff.toml").write_text('[lint]\nselect = ["F", "B"]\n')  # B006 is no default rule
    (python_repo.root / "users" / "legacy.py").write_text(LEGACY)
    ctx = with_baseline(python_repo)
    start = static_check({}, ctx)
    assert start.output.splitlines() == [
        "ruff: no new findings in the repository (compared with the files at the start of this run)",
        "ruff: 3 findings were already there before this run (static_check with all=true lists them)",
    ]
    assert start.data["compared"] and len(start.data["preexisting"]["ruff"]) == 3

    # two lines above every old finding, a new mistake among them, a new file, and an old line edited
    edited = LEGACY.replace("    unused = 1\n", "    unused = 2\n")
    (python_repo.root / "users" / "legacy.py").write_text("import json\n\n" + edited)
    (python_repo.root / "users" / "fresh.py").write_text("def f():\n    return missing_name\n")
    after = static_check({}, ctx)
    assert after.output.splitlines() == [
        "ruff: 3 new findings in the repository (compared with the files at the start of this run):",
        "users/fresh.py:2:12: F821 Undefined name `missing_name`",
        "users/legacy.py:1:8: F401 `json` imported but unused",
        "users/legacy.py:7:5: F841 Local variable `unused` is assigned to but never used",  # its line was edited: new
        "ruff: 2 findings were already there before this run (static_check with all=true lists them)",
    ]
    assert [f.split(": ")[1][:4] for f in after.data["preexisting"]["ruff"]] == ["F401", "B006"]  # found at lines 3 and 6 now
    assert after.data["preexisting"]["ruff"][0].startswith("users/legacy.py:3:8: F401 `os`")

    everything = static_check({"all": True}, ctx)
    lines = everything.output.splitlines()
    assert lines[4] == "ruff: 2 findings were already there before this run:"
    assert lines[5].startswith("users/legacy.py:3:8: F401") and lines[6].startswith("users/legacy.py:6:16: B006")
    assert not (python_repo.root / ".ruff_cache").exists()


def test_static_check_java_compares_with_the_starting_files(java_repo):
    ctx = with_baseline(java_repo)
    exception = java_repo.root / "src/main/java/com/example/users/UserNotFoundException.java"
    exception.write_text("// moved down two lines\n\n" + exception.read_text())  # the old [serial] warning is now at line 6
    service = java_repo.root / "src/main/java/com/example/users/UserService.java"
    service.write_text(service.read_text().replace("return nickname;", "return nickName;"))
    result = static_check({}, ctx)
    assert result.output.splitlines()[0] == "javac -Xlint:all: 1 new finding in the repository (compared with the files at the start of this run):"
    assert result.data["findings"]["javac"][0].startswith("src/main/java/com/example/users/UserService.java:46: error: cannot find symbol")
    assert result.data["preexisting"]["javac"] == [
        (
            "src/main/java/com/example/users/UserNotFoundException.java:6: warning: [serial] serializable class "
            "UserNotFoundException has no definition of serialVersionUID"
        )
    ]
    assert result.output.splitlines()[-1] == "javac -Xlint:all: 1 finding was already there before this run (static_check with all=true lists them)"
    assert not list(java_repo.root.rglob("*.class"))


def test_findings_match_by_message_and_line_text_not_line_number():
    start = ["a.py:3:1: F811 Redefinition of unused `f` from line 1", "a.py:5:1: E711 Comparison to `None`"]
    now = ["a.py:9:1: F811 Redefinition of unused `f` from line 7", "a.py:11:1: E711 Comparison to `None`",
           "a.py:12:1: E711 Comparison to `None`"]  # fmt: skip
    start_lines = {"a.py": ["def f(): ...", "", "def f(): ...", "", "x == None"]}
    now_lines = {"a.py": ["", "", "", "", "", "", "def f(): ...", "", "def f(): ...", "", "x == None", "x == None"]}
    new, old = split_findings(now, start, now_lines.__getitem__, start_lines.__getitem__)
    assert old == now[:2]  # moved six lines down, the message's own line number too
    assert new == now[2:]  # a second copy of an old mistake is new


def test_static_check_errors(python_repo):
    missing = static_check({"path": "nope"}, python_repo.ctx)
    assert missing.is_error and "does not exist" in missing.output
    nothing = static_check({"path": "README.md"}, python_repo.ctx)
    assert nothing.is_error and "no Python" in nothing.output
    outside = static_check({"path": "../.."}, python_repo.ctx)
    assert outside.is_error and "outside the repository" in outside.output


def test_finish_ends_the_episode(python_repo):
    done = finish({"summary": "Treat a missing nickname as empty."}, python_repo.ctx)
    assert done.done is True and not done.is_error
    assert "Treat a missing nickname as empty." in done.output
    assert done.data == {"summary": "Treat a missing nickname as empty."}

    empty = finish({"summary": "   "}, python_repo.ctx)
    assert empty.is_error and not empty.done
    missing = finish({}, python_repo.ctx)
    assert missing.is_error and "summary" in missing.output


def test_tool_list_and_schemas():
    names = [t.name for t in CODING_TOOLS]
    assert names == ["search_code", "find_symbol", "repo_map", "view_file", "edit_file", "apply_patch", "run_tests", "static_check", "shell", "finish"]
    for t in CODING_TOOLS:
        schema = t.schema()["function"]
        assert len(schema["description"]) > 40, t.name
        assert "Args:" not in schema["description"]
        for field, spec in schema["parameters"]["properties"].items():
            assert spec.get("description"), f"{t.name}.{field} has no description"
    required = {t.name: t.schema()["function"]["parameters"].get("required", []) for t in CODING_TOOLS}
    assert required["search_code"] == ["pattern"]
    assert required["edit_file"] == ["path", "old_text", "new_text"]
    assert required["run_tests"] == []
    assert CODING_TOOLS[1].schema()["function"]["parameters"]["properties"]["kind"]["enum"] == ["definition", "reference", "any"]


@pytest.mark.parametrize("arguments", ['{"pattern": "x", "max_results": 0}', '{"pattern": "x", "max_results": 100000}'])
def test_search_limits_are_validated(python_repo, arguments):
    result = CODING_TOOLS[0](arguments, python_repo.ctx)
    assert result.is_error and "max_results" in result.output
