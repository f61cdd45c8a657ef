"""Syntax-checked edits (syntax.py via edit_file) and atomic multi-file patches (patch.py, apply_patch)."""

from __future__ import annotations

import subprocess

import pytest

from plugins.coding.languages import grammar
from plugins.coding.syntax import first_syntax_problem
from plugins.coding.tools import apply_patch, edit_file
from tests.plugins.coding.conftest import snapshot

SERVICE = "users/service.py"


def test_edit_that_breaks_python_syntax_is_rejected_and_the_file_kept(python_repo):
    before = (python_repo.root / SERVICE).read_bytes()
    result = edit_file(
        {"path": SERVICE, "old_text": "        nickname = user.nickname.strip()", "new_text": "        nickname = (user.nickname or \"\".strip()"},
        python_repo.ctx,
    )
    assert result.is_error
    assert result.output.startswith("edit rejected: it would leave users/service.py with a python syntax error at line ")
    assert "The file is unchanged" in result.output
    assert "> " in result.output and "nickname = (user.nickname" in result.output  # the snippet marks the line
    assert (python_repo.root / SERVICE).read_bytes() == before

    fixed = edit_file(
        {"path": SERVICE, "old_text": "        nickname = user.nickname.strip()", "new_text": '        nickname = (user.nickname or "").strip()'},
        python_repo.ctx,
    )
    assert not fixed.is_error and fixed.data["line"] == 63


def test_edit_that_breaks_java_syntax_is_rejected(java_repo):
    path = "src/main/java/com/example/users/UserService.java"
    before = (java_repo.root / path).read_bytes()
    result = edit_file(
        {"path": path, "old_text": "        String nickname = user.getNickname().trim();", "new_text": "        String nickname = user.getNickname(.trim();"},
        java_repo.ctx,
    )
    assert result.is_error and "java syntax error at line 44" in result.output
    assert (java_repo.root / path).read_bytes() == before


def test_new_broken_file_is_refused_but_an_already_broken_file_can_be_edited(python_repo):
    created = edit_file({"path": "users/extra.py", "old_text": "", "new_text": "def f(:\n    pass\n"}, python_repo.ctx)
    assert created.is_error and "line 1" in created.output
    assert not (python_repo.root / "users" / "extra.py").exists()

    broken = python_repo.root / "users" / "broken.py"
    broken.write_text("def f(:\n    return 1\n\nVALUE = 1\n")
    still_broken = edit_file({"path": "users/broken.py", "old_text": "VALUE = 1", "new_text": "VALUE = 2"}, python_repo.ctx)
    assert not still_broken.is_error  # it was broken before: the edit may be the fix
    repaired = edit_file({"path": "users/broken.py", "old_text": "def f(:", "new_text": "def f():"}, python_repo.ctx)
    assert not repaired.is_error
    assert first_syntax_problem("users/broken.py", broken.read_text()) is None

    notes = edit_file({"path": "notes.txt", "old_text": "", "new_text": "def f(:\n"}, python_repo.ctx)
    assert not notes.is_error  # no grammar for .txt: not checked


@pytest.mark.parametrize(
    "name, good, bad",
    [
        ("a.js", "export function f(x) { return x + 1 }\n", "export function f(x) { return x + }\n"),
        ("a.ts", "export function f(x: number): number { return x }\n", "export function f(x: number): number { return x\n"),
        ("a.go", "package a\n\nfunc F(x int) int { return x }\n", "package a\n\nfunc F(x int) int { return x \n"),
    ],
)
def test_syntax_check_in_other_languages(name, good, bad):
    language = {"js": "javascript", "ts": "typescript", "go": "go"}[name.rsplit(".", 1)[1]]
    if grammar(language) is None:
        pytest.skip(f"the tree-sitter grammar for {language} is not installed")
    assert first_syntax_problem(name, good) is None
    problem = first_syntax_problem(name, bad)
    assert problem is not None and problem.line >= 1 and problem.errors >= 1


def test_did_you_mean_is_kept_for_a_search_text_that_does_not_match(python_repo):
    result = edit_file({"path": SERVICE, "old_text": "nickname = user.nick_name.strip()", "new_text": "x"}, python_repo.ctx)
    assert result.is_error and "most similar" in result.output and "63" in result.output


def _git_diff(root, edits: dict[str, str | None]) -> str:
    """Make real edits in a scratch git repository and return ``git diff`` (a real unified diff)."""
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"], cwd=root, check=True)
    for rel, text in edits.items():
        if text is None:
            (root / rel).unlink()
        else:
            (root / rel).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    diff = subprocess.run(["git", "diff", "--cached"], cwd=root, check=True, capture_output=True, text=True).stdout
    subprocess.run(["git", "reset", "-q", "--hard"], cwd=root, check=True)
    return diff


def test_git_diff_across_files_applies_with_creation_and_deletion(python_repo, tmp_path):
    root = python_repo.root
    service = (root / SERVICE).read_text()
    models = (root / "users" / "models.py").read_text()
    wanted = {
        SERVICE: service.replace("nickname = user.nickname.strip()", 'nickname = (user.nickname or "").strip()'),
        "users/models.py": models.replace("class User:", "class User:  # a person with an account"),
        "users/helpers.py": "def shout(text: str) -> str:\n    return text.upper()\n",
        "users/validation.py": None,
    }
    copy = tmp_path / "copy"
    import shutil

    shutil.copytree(root, copy)
    diff = _git_diff(copy, wanted)
    result = apply_patch({"patch": diff}, python_repo.ctx)
    assert not result.is_error, result.output
    assert [(f["path"], f["action"]) for f in result.data["files"]] == sorted(
        [(SERVICE, "modified"), ("users/helpers.py", "created"), ("users/models.py", "modified"), ("users/validation.py", "deleted")]
    )
    for rel, text in wanted.items():
        assert (root / rel).read_text() == text if text is not None else not (root / rel).exists()


def test_patch_with_one_bad_hunk_changes_nothing(python_repo):
    before = snapshot(python_repo.root)
    patch = (
        "--- a/users/models.py\n+++ b/users/models.py\n@@ -9,1 +9,1 @@\n-class User:\n+class Person:\n"
        "--- a/users/service.py\n+++ b/users/service.py\n@@ -63,1 +63,1 @@\n-        nickname = user.nick_name.strip()\n+        nickname = 1\n"
    )
    result = apply_patch({"patch": patch}, python_repo.ctx)
    assert result.is_error
    assert result.output.startswith("hunk 1 of users/service.py (@@ -63,1 +63,1 @@) does not apply")
    assert "Nothing was changed" in result.output and "most similar" in result.output and "63\t" in result.output
    assert snapshot(python_repo.root) == before


def test_patch_with_wrong_line_numbers_and_counts_still_applies(python_repo):
    patch = (
        "--- users/service.py\n+++ users/service.py\n@@ -1,99 +1,99 @@\n"
        "         user = self._get(user_id)\n"
        "-        nickname = user.nickname.strip()\n"
        "+        nickname = (user.nickname or '').strip()\n"
        "\n"
    )
    result = apply_patch({"patch": patch}, python_repo.ctx)
    assert not result.is_error, result.output
    assert result.output == "applied the patch to 1 file:\n  modified users/service.py (+1 -1)"
    assert "        nickname = (user.nickname or '').strip()\n        if nickname:" in (python_repo.root / SERVICE).read_text()


def test_patch_that_breaks_syntax_or_leaves_the_repository_is_refused(python_repo):
    before = snapshot(python_repo.root)
    broken = "--- a/users/models.py\n+++ b/users/models.py\n@@ -9,1 +9,1 @@\n-class User:\n+class User(\n"
    result = apply_patch({"patch": broken}, python_repo.ctx)
    assert result.is_error and "syntax error" in result.output and "users/models.py" in result.output
    outside = "--- a/../x.py\n+++ b/../x.py\n@@ -1 +1 @@\n-a\n+b\n"
    assert "outside the repository" in apply_patch({"patch": outside}, python_repo.ctx).output
    git = "--- /dev/null\n+++ b/.git/hooks/post-commit\n@@ -0,0 +1 @@\n+echo hi\n"
    assert "cannot be changed" in apply_patch({"patch": git}, python_repo.ctx).output
    assert "no file header" in apply_patch({"patch": "just some text\n"}, python_repo.ctx).output
    exists = "--- /dev/null\n+++ b/users/models.py\n@@ -0,0 +1 @@\n+x = 1\n"
    assert "exists already" in apply_patch({"patch": exists}, python_repo.ctx).output
    assert snapshot(python_repo.root) == before
