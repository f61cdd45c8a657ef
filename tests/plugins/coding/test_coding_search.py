"""search_code and find_symbol on the example repositories."""

from __future__ import annotations

import os

import pytest

from plugins.coding import search, symbols
from plugins.coding.search import iter_files
from plugins.coding.tools import find_symbol, search_code

BUGGY_LINE = {
    "java-user-service": ("src/main/java/com/example/users/UserService.java", 44, "user.getNickname().trim()"),
    "python-user-service": ("users/service.py", 63, "user.nickname.strip()"),
}


def test_search_finds_the_buggy_line(repo):
    path, line, text = BUGGY_LINE[repo.name]
    pattern = r"getNickname\(\)\.trim" if repo.name.startswith("java") else r"nickname\.strip\(\)"
    result = search_code({"pattern": pattern}, repo.ctx)
    assert not result.is_error
    assert result.output.splitlines()[0] == f"search_code /{pattern}/ in the repository (max_results 50):"
    assert result.output.splitlines()[1] == f"{path}:{line}:         " + (
        "String nickname = user.getNickname().trim();" if repo.name.startswith("java") else "nickname = user.nickname.strip()"
    )
    assert text in result.output
    assert result.data == {"matches": 1, "truncated": False}


def test_search_within_a_subfolder_and_with_a_cap(java_repo):
    everywhere = search_code({"pattern": "getDisplayName"}, java_repo.ctx)
    in_tests = search_code({"pattern": "getDisplayName", "path": "src/test"}, java_repo.ctx)
    assert everywhere.data["matches"] > in_tests.data["matches"] > 0
    assert in_tests.output.splitlines()[0] == "search_code /getDisplayName/ in 'src/test' (max_results 50):"
    assert all(line.startswith("src/test/") for line in in_tests.output.splitlines()[1:-1])

    capped = search_code({"pattern": "User", "max_results": 3}, java_repo.ctx)
    assert capped.data == {"matches": 3, "truncated": True}
    assert len(capped.output.splitlines()) == 5 and "(max_results 3)" in capped.output.splitlines()[0]
    assert "narrow the pattern" in capped.output


def test_search_skips_gitignored_git_binary_and_huge_files(python_repo):
    root = python_repo.root
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "service.cpython-311.pyc").write_bytes(b"\0\0 NEEDLE")
    (root / "target").mkdir()  # ignored by the repository's .gitignore
    (root / "target" / "out.txt").write_text("NEEDLE in build output\n")
    (root / "notes.egg-info").mkdir()  # *.egg-info/ is ignored too
    (root / "notes.egg-info" / "PKG-INFO").write_text("NEEDLE\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("NEEDLE\n")
    (root / "blob.bin").write_bytes(b"NEEDLE\0\1\2")
    (root / "huge.txt").write_text("x\n" * 600_000 + "NEEDLE\n")
    (root / "users" / "found.txt").write_text("a\nthe NEEDLE\n")

    result = search_code({"pattern": "NEEDLE"}, python_repo.ctx)
    assert result.output.splitlines()[1:] == ["users/found.txt:2: the NEEDLE", "[1 matching lines in 1 files]"]


def test_search_honours_nested_gitignore_files(python_repo):
    root = python_repo.root
    (root / "users" / ".gitignore").write_text("generated_*.py\n")
    (root / "users" / "generated_x.py").write_text("NEEDLE = 1\n")
    (root / "users" / "kept.py").write_text("NEEDLE = 2\n")
    listed = {p.relative_to(root).as_posix() for p in iter_files(root)}
    assert "users/kept.py" in listed and "users/generated_x.py" not in listed
    assert search_code({"pattern": "NEEDLE"}, python_repo.ctx).data["matches"] == 1


def test_search_reports_bad_regex_and_missing_path(python_repo):
    bad = search_code({"pattern": "getNickname("}, python_repo.ctx)
    assert bad.is_error
    assert "invalid regular expression" in bad.output and "missing )" in bad.output

    missing = search_code({"pattern": "x", "path": "no/such/dir"}, python_repo.ctx)
    assert missing.is_error and "does not exist" in missing.output

    escape = search_code({"pattern": "x", "path": "../"}, python_repo.ctx)
    assert escape.is_error and "outside the repository" in escape.output


def test_search_with_no_match_says_so(python_repo):
    result = search_code({"pattern": "definitely_not_here_42"}, python_repo.ctx)
    assert not result.is_error
    assert result.output.splitlines() == [
        "search_code /definitely_not_here_42/ in the repository (max_results 50):",
        f"no matches for /definitely_not_here_42/ in the repository ({result.output.rsplit('(', 1)[1]}",
    ]
    assert "files searched)" in result.output


@pytest.mark.parametrize("backend", ["rg", "python"])
def test_search_warns_about_a_pattern_escaped_twice(java_repo, monkeypatch, backend):
    if backend == "python":
        monkeypatch.setenv(search.SEARCH_BACKEND_ENV, "python")
    elif search.ripgrep() is None:
        pytest.skip("ripgrep is not installed")
    twice = search_code({"pattern": r"getNickname\\(\\)\\.trim"}, java_repo.ctx)
    lines = twice.output.splitlines()
    assert lines[0] == r"search_code /getNickname\\(\\)\\.trim/ in the repository (max_results 50):"
    assert lines[1].startswith(r"[note: the pattern has \\(: 2 backslashes match a literal backslash")
    assert r"If you meant /getNickname\(\)\.trim/, send that pattern" in lines[1]
    assert r'"getNickname\\(\\)\\.trim"' in lines[1]  # the JSON spelling of what was meant
    assert twice.data["matches"] == 0 and lines[2].startswith("no matches")
    meant = search_code({"pattern": r"getNickname\(\)\.trim"}, java_repo.ctx)
    assert meant.data["matches"] == 1 and "[note:" not in meant.output
    # a literal backslash searched on purpose (an odd run escapes the next character) is no slip
    assert search.double_escape_hint(r"re\.compile\(r'\\\('") == ""
    assert search.double_escape_hint(r"'\\n'") == ""


def test_find_symbol_java_definition_and_references(java_repo):
    result = find_symbol({"name": "getDisplayName"}, java_repo.ctx)
    lines = result.output.splitlines()
    assert lines[0] == "src/main/java/com/example/users/UserService.java:42: method  public String getDisplayName(long id) {"
    assert "src/main/java/com/example/users/UserService.java:65: call" in result.output
    test_refs = [line for line in lines if line.startswith("src/test/java/com/example/users/UserServiceTest.java:")]
    assert [int(line.split(":")[1]) for line in test_refs] == [51, 58, 65, 70]
    assert result.data == {"definitions": 1, "references": 5}

    definitions = find_symbol({"name": "getDisplayName", "kind": "definition"}, java_repo.ctx)
    assert definitions.data == {"definitions": 1, "references": 0}
    references = find_symbol({"name": "getDisplayName", "kind": "reference"}, java_repo.ctx)
    assert references.data == {"definitions": 0, "references": 5}
    assert "method" not in references.output


def test_find_symbol_java_kinds(java_repo):
    user = find_symbol({"name": "User", "kind": "definition"}, java_repo.ctx).output.splitlines()
    assert user[0].startswith("src/main/java/com/example/users/User.java:9: class")
    assert user[1].startswith("src/main/java/com/example/users/User.java:18: constructor")
    repo_iface = find_symbol({"name": "UserRepository", "kind": "definition"}, java_repo.ctx).output
    assert "UserRepository.java:7: interface" in repo_iface
    field = find_symbol({"name": "nickname", "kind": "definition"}, java_repo.ctx).output
    assert "User.java:15: field" in field
    type_use = find_symbol({"name": "UserRepository", "kind": "reference"}, java_repo.ctx).output
    assert "UserService.java:11: reference" in type_use  # a type use: private final UserRepository repository;


def test_find_symbol_python(python_repo):
    result = find_symbol({"name": "display_name"}, python_repo.ctx)
    lines = result.output.splitlines()
    assert lines[0] == "users/service.py:56: method  def display_name(self, user_id: int) -> str:"
    assert "users/service.py:76: call" in result.output
    assert sum(line.startswith("tests/test_service.py:") for line in lines) == 4
    assert result.data == {"definitions": 1, "references": 5}

    kinds = {
        "UserService": "users/service.py:20: class",
        "is_valid_email": "users/validation.py:10: function",
        "_EMAIL": "users/validation.py:7: variable",
        "nickname": "users/models.py:16: field",
        "user_id": "users/service.py:17: attribute",
    }
    for name, expected in kinds.items():
        assert expected in find_symbol({"name": name, "kind": "definition"}, python_repo.ctx).output, name


def test_find_symbol_qualified_name_and_errors(python_repo):
    qualified = find_symbol({"name": "UserService.display_name", "kind": "definition"}, python_repo.ctx)
    assert qualified.data["definitions"] == 1
    wrong_class = find_symbol({"name": "InMemoryUserRepository.display_name", "kind": "definition"}, python_repo.ctx)
    assert wrong_class.data["definitions"] == 0 and wrong_class.output.startswith("no definition of")

    bad = find_symbol({"name": "display name("}, python_repo.ctx)
    assert bad.is_error and "not an identifier" in bad.output
    bad_kind = find_symbol({"name": "x", "kind": "usage"}, python_repo.ctx)
    assert bad_kind.is_error


def test_find_symbol_sees_edits_to_cached_files(python_repo):
    assert find_symbol({"name": "shout", "kind": "definition"}, python_repo.ctx).data["definitions"] == 0
    path = python_repo.root / "users" / "validation.py"
    path.write_text(path.read_text() + "\n\ndef shout(text):\n    return text.upper()\n")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a distinct mtime whatever the clock
    assert find_symbol({"name": "shout", "kind": "definition"}, python_repo.ctx).data["definitions"] == 1


@pytest.mark.parametrize(
    "source, language", [(b"def f(:\n    pass\nclass K:\n    x = 1\n", "python"), (b"class A { void m( }", "java")]
)
def test_symbol_index_survives_syntax_errors(source, language):
    index = symbols._index_source(source, language)
    assert index.definitions  # something was still recognised


@pytest.mark.skipif(search.ripgrep() is None, reason="ripgrep (rg) is not installed")
@pytest.mark.parametrize(
    "pattern", [r"def \w+\(self", r"(?i)NICKNAME", r"return (?!None)\w+", r"\A(import|from) ", r"f?\"\{", "no_such_text_anywhere"]
)
def test_ripgrep_and_python_backends_agree(python_repo, monkeypatch, pattern):
    root = python_repo.root
    (root / ".hidden.py").write_text("def hidden(self):\n    return value\n")  # hidden files are searched
    (root / "users" / ".gitignore").write_text("generated_*.py\n")
    (root / "users" / "generated_x.py").write_text("def ignored(self):\n    return value\n")
    fast = search.search_code(root, pattern, None, 500)
    monkeypatch.setenv(search.SEARCH_BACKEND_ENV, "python")
    slow = search.search_code(root, pattern, None, 500)
    key = lambda r: sorted((m.path, m.line, m.text) for m in r.matches)
    assert key(fast) == key(slow)
    assert not any(m.path == "users/generated_x.py" for m in fast.matches)
    if pattern.startswith("def"):
        assert any(m.path == ".hidden.py" for m in fast.matches)
    if pattern == "no_such_text_anywhere":
        assert fast.files_searched == slow.files_searched > 5
