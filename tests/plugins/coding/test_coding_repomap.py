"""The repository map (repomap.py, the repo_map tool, the map in the task message) on real code."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from core.plugin import Task
from plugins.coding import symbols
from plugins.coding.languages import grammar
from plugins.coding.plugin import SYSTEM_PROMPT, CodingPlugin
from plugins.coding.repomap import build_repo_map, estimate_tokens
from plugins.coding.tools import repo_map

SITE_PACKAGES = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
RICH = SITE_PACKAGES / "rich"


@pytest.fixture(scope="module")
def rich_copy(tmp_path_factory) -> Path:
    """A copy of the installed ``rich`` package (about 100 files, 38k lines) as a repository."""
    if not RICH.is_dir():
        pytest.skip(f"rich is not installed in this environment ({RICH} missing)")
    root = tmp_path_factory.mktemp("rich-repo")
    shutil.copytree(RICH, root / "rich", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return root


def _referencing_files(texts: list[str], name: str) -> int:
    """Files that use ``name`` as a call or a type, counted with a plain regex (independent of tree-sitter)."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}\b|\.{re.escape(name)}\(")
    definition = re.compile(rf"^\s*(class|def)\s+{re.escape(name)}\b", re.MULTILINE)
    return sum(1 for text in texts if name in text and pattern.search(definition.sub("", text)))


@pytest.mark.parametrize("budget", [128, 1024, 4096])
def test_map_of_a_real_package_stays_within_its_budget(rich_copy, budget):
    built = build_repo_map(rich_copy, "", budget)
    assert built.files_indexed >= 90 and built.definitions_total > 1000
    assert built.tokens == estimate_tokens(built.text) <= budget
    assert built.tokens > 0.85 * budget  # the budget is used, not wasted
    assert built.text.splitlines()[0].endswith(".py:")
    shown_lines = [line for line in built.text.splitlines() if "│" in line]
    assert len(shown_lines) == len({(d.path, d.line) for d in built.shown})


def test_top_of_the_map_is_the_most_referenced_definitions(rich_copy):
    built = build_repo_map(rich_copy, "", 1024)
    top = [d.name for d in built.ranking[:25]]
    for central in ("Console", "Text", "Segment", "Style"):  # rich's core types, used nearly everywhere
        assert central in top, (central, top)
    texts = [path.read_text(encoding="utf-8", errors="replace") for path in rich_copy.rglob("*.py")]
    top_uses = [_referencing_files(texts, d.name) for d in built.ranking[:20]]
    sample = built.ranking[200::40]  # a spread of lower-ranked definitions
    low_uses = [_referencing_files(texts, d.name) for d in sample]
    assert sum(top_uses) / len(top_uses) > 3 * (sum(low_uses) / len(low_uses)), (top_uses, low_uses)


def test_mentioned_files_and_names_come_first(rich_copy):
    plain = build_repo_map(rich_copy, "", 512)
    assert "rich/progress_bar.py" not in {d.path for d in plain.shown[:10]}

    by_file = build_repo_map(rich_copy, "The bar drawn by rich/progress_bar.py is one cell too wide.", 512)
    assert by_file.mentioned_files == ["rich/progress_bar.py"]
    assert by_file.text.splitlines()[0] == "rich/progress_bar.py:"

    by_name = build_repo_map(rich_copy, "Rule draws its title off-centre", 512)
    assert "Rule" in by_name.mentioned_names
    assert ("rich/rule.py", "Rule") in {(d.path, d.name) for d in by_name.shown[:3]}
    assert "rich/rule.py" not in {d.path for d in plain.shown[:10]}


def test_index_is_cached_per_file_by_mtime_and_size(rich_copy, monkeypatch, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(rich_copy, root)
    build_repo_map(root, "", 256)
    parsed: list[str] = []
    original = symbols._index_source

    def counting(source: bytes, language: str):
        parsed.append(language)
        return original(source, language)

    monkeypatch.setattr(symbols, "_index_source", counting)
    build_repo_map(root, "", 256)
    assert parsed == []  # nothing changed: everything from the cache
    path = root / "rich" / "rule.py"
    path.write_text(path.read_text() + "\n\ndef brand_new_helper():\n    return 1\n")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    again = build_repo_map(root, "brand_new_helper", 256)
    assert parsed == ["python"]
    assert any(d.name == "brand_new_helper" for d in again.ranking)


LANGUAGE_FILES = {
    "java": ("app/Util.java", "class Util { static int clamp(int x) { return x; } }\n",
             "app/Main{i}.java", "class Main{i} {{ int run() {{ return Util.clamp({i}); }} }}\n"),
    "javascript": ("lib/util.js", "export function clamp(x) { return x }\n",
                   "lib/main{i}.js", "import {{ clamp }} from './util.js'\nexport const run{i} = () => clamp({i})\n"),
    "typescript": ("src/util.ts", "export interface Range { lo: number }\nexport function clamp(x: number): number { return x }\n",
                   "src/main{i}.ts", "import {{ clamp, Range }} from './util'\nexport function run{i}(r: Range) {{ return clamp({i}) }}\n"),
    "go": ("pkg/util.go", "package pkg\n\ntype Range struct{ Lo int }\n\nfunc Clamp(x int) int { return x }\n",
           "pkg/main{i}.go", "package pkg\n\nfunc Run{i}(r Range) int {{ return Clamp({i}) }}\n"),
}  # fmt: skip


@pytest.mark.parametrize("language", sorted(LANGUAGE_FILES))
def test_map_ranks_the_shared_helper_first_in_each_language(tmp_path, language):
    if grammar(language) is None:
        pytest.skip(f"the tree-sitter grammar for {language} is not installed")
    util_path, util_source, main_path, main_source = LANGUAGE_FILES[language]
    (tmp_path / util_path).parent.mkdir(parents=True)
    (tmp_path / util_path).write_text(util_source)
    for i in range(4):
        (tmp_path / main_path.format(i=i)).write_text(main_source.format(i=i))
    built = build_repo_map(tmp_path, "", 512)
    assert built.files_indexed == 5
    assert built.ranking[0].path == util_path
    assert built.ranking[0].name in ("clamp", "Clamp", "Util", "Range")
    assert built.text.splitlines()[0] == f"{util_path}:"
    assert {d.path for d in built.shown} == {util_path, *(main_path.format(i=i) for i in range(4))}


def test_repo_map_tool_and_the_map_in_the_task_message(python_repo):
    result = repo_map({"focus": "display_name", "max_tokens": 200}, python_repo.ctx)
    assert not result.is_error
    assert result.output.startswith("[repository map: ")
    assert "users/service.py:" in result.output and "def display_name" in result.output
    assert result.data["tokens"] <= 200 and result.data["files"] == 8
    bad = repo_map({"max_tokens": 10}, python_repo.ctx)
    assert bad.is_error and "max_tokens" in bad.output

    plugin = CodingPlugin()
    task = Task(plugin="coding", instruction="display_name crashes when a user has no nickname", repo=python_repo.root)
    text = plugin.setup(task, python_repo.ctx)
    assert "2 fail now" in text
    map_part = text.split("Repository map", 1)[1]
    assert "users/service.py:" in map_part and "def display_name" in map_part
    assert estimate_tokens(map_part.split("\n", 1)[1]) <= 1024
    assert plugin.system_prompt(task) == SYSTEM_PROMPT  # the map is in the task message, never the prompt
