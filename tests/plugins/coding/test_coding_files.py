"""view_file and edit_file on the example repositories."""

from __future__ import annotations

from plugins.coding.files import MAX_VIEW_LINES
from plugins.coding.tools import edit_file, view_file

SERVICE = {
    "java-user-service": "src/main/java/com/example/users/UserService.java",
    "python-user-service": "users/service.py",
}


def test_view_range_is_numbered(repo):
    path = SERVICE[repo.name]
    result = view_file({"path": path, "start_line": 42, "end_line": 44}, repo.ctx)
    lines = result.output.splitlines()
    file_lines = (repo.root / path).read_text().splitlines()
    assert lines[0] == f"{path} (lines 42-44 of {len(file_lines)})"
    assert lines[1:] == [f"{n}\t{file_lines[n - 1]}" for n in (42, 43, 44)]


def test_view_whole_small_file_and_end_past_eof(java_repo):
    result = view_file({"path": "src/main/java/com/example/users/UserRepository.java"}, java_repo.ctx)
    lines = result.output.splitlines()
    assert lines[0] == "src/main/java/com/example/users/UserRepository.java (lines 1-19 of 19)"
    assert lines[1] == " 1\tpackage com.example.users;"
    assert len(lines) == 20

    past = view_file(
        {"path": "src/main/java/com/example/users/UserRepository.java", "start_line": 18, "end_line": 500}, java_repo.ctx
    )
    assert past.output.splitlines()[-1] == "[end of file: src/main/java/com/example/users/UserRepository.java has 19 lines]"


def test_view_caps_long_files_and_says_how_to_see_more(python_repo):
    (python_repo.root / "long.py").write_text("".join(f"x{n} = {n}\n" for n in range(1, 501)))
    result = view_file({"path": "long.py", "start_line": 10}, python_repo.ctx)
    lines = result.output.splitlines()
    assert lines[0] == "long.py (lines 10-209 of 500)"
    assert len(lines) == MAX_VIEW_LINES + 2
    assert lines[-2] == "209\tx209 = 209"
    assert "start_line=210" in lines[-1]


def test_view_errors(python_repo):
    ctx = python_repo.ctx
    missing = view_file({"path": "users/servce.py"}, ctx)
    assert missing.is_error and "does not exist" in missing.output and "users/service.py" in missing.output

    same_name = view_file({"path": "service.py"}, ctx)
    assert same_name.is_error and "did you mean: users/service.py" in same_name.output

    directory = view_file({"path": "users"}, ctx)
    assert directory.is_error and "is a directory" in directory.output and "service.py" in directory.output

    (python_repo.root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    binary = view_file({"path": "logo.png"}, ctx)
    assert binary.is_error and "binary" in binary.output

    past_end = view_file({"path": "users/models.py", "start_line": 999}, ctx)
    assert past_end.is_error and "has 21 lines" in past_end.output

    reversed_range = view_file({"path": "users/models.py", "start_line": 10, "end_line": 5}, ctx)
    assert reversed_range.is_error and "before start_line" in reversed_range.output

    zero = view_file({"path": "users/models.py", "start_line": 0}, ctx)
    assert zero.is_error and "1 or more" in zero.output

    escape = view_file({"path": "../x"}, ctx)
    assert escape.is_error and "outside the repository" in escape.output


def test_edit_applies_the_fix_and_returns_a_diff(repo):
    path, old, new = repo.fix
    before = (repo.root / path).read_text()
    result = edit_file({"path": path, "old_text": old, "new_text": new}, repo.ctx)
    assert not result.is_error, result.output
    line = before[: before.index(old)].count("\n") + 1
    assert result.output.splitlines()[0] == f"edited {path} at line {line}"
    assert f"-{old}" in result.output and f"+{new}" in result.output
    assert f"--- a/{path}" in result.output
    assert result.data == {"path": path, "line": line, "created": False}
    assert (repo.root / path).read_text() == before.replace(old, new)


def test_edit_without_match_shows_the_nearest_region(java_repo):
    path = SERVICE["java-user-service"]
    before = (java_repo.root / path).read_bytes()
    result = edit_file(
        {"path": path, "old_text": "        String nickname = user.getNickName().trim();", "new_text": "x"}, java_repo.ctx
    )
    assert result.is_error
    assert "was not found" in result.output
    assert "--- lines 44-44" in result.output
    assert "44\t        String nickname = user.getNickname().trim();" in result.output
    assert (java_repo.root / path).read_bytes() == before


def test_edit_hint_for_pasted_line_numbers(python_repo):
    result = edit_file(
        {"path": "users/service.py", "old_text": "63\t        nickname = user.nickname.strip()", "new_text": "x"}, python_repo.ctx
    )
    assert result.is_error and "line numbers" in result.output and "--- lines 63-63" in result.output


def test_edit_with_several_matches_asks_for_more_context(python_repo):
    path = "users/service.py"
    before = (python_repo.root / path).read_text()
    result = edit_file({"path": path, "old_text": "user = self._get(user_id)", "new_text": "user = None"}, python_repo.ctx)
    assert result.is_error
    assert "occurs 2 times" in result.output
    assert "lines 62, 70" in result.output
    assert "more surrounding lines" in result.output
    assert (python_repo.root / path).read_text() == before


def test_edit_refuses_paths_outside_the_repository(python_repo, tmp_path):
    outside = tmp_path / "x"
    outside.write_text("secret\n")
    result = edit_file({"path": "../x", "old_text": "secret", "new_text": "changed"}, python_repo.ctx)
    assert result.is_error and "outside the repository" in result.output
    assert outside.read_text() == "secret\n"
    absolute = edit_file({"path": str(outside), "old_text": "secret", "new_text": "changed"}, python_repo.ctx)
    assert absolute.is_error and outside.read_text() == "secret\n"


def test_edit_creates_a_new_file_only_when_old_text_is_empty(python_repo):
    created = edit_file({"path": "users/extra/helpers.py", "old_text": "", "new_text": "X = 1\n"}, python_repo.ctx)
    assert not created.is_error, created.output
    assert created.data["created"] is True
    assert (python_repo.root / "users/extra/helpers.py").read_text() == "X = 1\n"
    assert "+X = 1" in created.output

    again = edit_file({"path": "users/extra/helpers.py", "old_text": "", "new_text": "Y = 2\n"}, python_repo.ctx)
    assert again.is_error and "already exists" in again.output

    missing = edit_file({"path": "users/nope.py", "old_text": "a", "new_text": "b"}, python_repo.ctx)
    assert missing.is_error and "does not exist" in missing.output

    git = edit_file({"path": ".git/config", "old_text": "", "new_text": "x"}, python_repo.ctx)
    assert git.is_error and not (python_repo.root / ".git").exists()


def test_edit_keeps_crlf_line_endings(python_repo):
    path = python_repo.root / "users" / "crlf.py"
    path.write_bytes(b"def f():\r\n    return 1\r\n\r\n\r\ndef g():\r\n    return 2\r\n")
    result = edit_file(
        {"path": "users/crlf.py", "old_text": "def f():\n    return 1\n", "new_text": "def f():\n    return 10\n"},
        python_repo.ctx,
    )
    assert not result.is_error, result.output
    assert path.read_bytes() == b"def f():\r\n    return 10\r\n\r\n\r\ndef g():\r\n    return 2\r\n"


def test_edit_that_changes_nothing_is_refused(python_repo):
    result = edit_file({"path": "users/models.py", "old_text": "id: int", "new_text": "id: int"}, python_repo.ctx)
    assert result.is_error and "identical" in result.output
