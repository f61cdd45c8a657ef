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


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _map_files(built) -> list[str]:
    return [line[:-1] for line in built.text.splitlines() if line.endswith(":") and "│" not in line]


#: A helper module every other module uses (it tops a map with no focus), and the module a task is about.
DICTUTILS = "class OrderedMultiDict(dict):\n" + "".join(
    f"    def {m}(self):\n        return 1\n" for m in ("get", "values", "items", "add")
)
USER = "from pkg.dictutils import OrderedMultiDict\n\n\ndef use{i}():\n    d = OrderedMultiDict()\n    return d.get(), d.values(), d.items(), d.add()\n"
TABLEUTILS = (
    "class Table:\n    def __init__(self, data):\n        self.data = data\n\n    @classmethod\n    def from_dict(cls, data):\n"
    "        return cls(list(data.items()))\n\n    def __repr__(self):\n        return 'Table'\n"
)
OTHER_FROM_DICT = "class Frame:\n    @classmethod\n    def from_dict(cls, data):\n        return cls()\n"


@pytest.fixture
def boltons_like(tmp_path) -> Path:
    _write(
        tmp_path,
        {
            "pkg/dictutils.py": DICTUTILS,
            "pkg/tableutils.py": TABLEUTILS,
            "pkg/framework.py": OTHER_FROM_DICT,
            **{f"pkg/user{i}.py": USER.format(i=i) for i in range(8)},
        },
    )
    return tmp_path


def test_the_task_words_rank_their_file_first(boltons_like):
    plain = build_repo_map(boltons_like, "", 256)
    assert _map_files(plain)[0] == "pkg/dictutils.py"  # the most used module tops a map without focus

    by_member = build_repo_map(boltons_like, "Table.from_dict fails on a dict whose values are lists", 256)
    assert _map_files(by_member)[0] == "pkg/tableutils.py"
    assert by_member.mentioned_names == ["Table", "from_dict"]  # 'values' is a plain word, not the method
    assert by_member.mentioned_files == ["pkg/tableutils.py"]  # Frame.from_dict is not Table's
    assert [d.name for d in by_member.shown[:2]] == ["Table", "from_dict"]

    by_stem = build_repo_map(boltons_like, "tableutils: rows are lost", 256)
    assert by_stem.mentioned_files == ["pkg/tableutils.py"] and _map_files(by_stem)[0] == "pkg/tableutils.py"

    by_capital = build_repo_map(boltons_like, "A Table made from an empty dict has no headers", 256)
    assert "Table" in by_capital.mentioned_names and _map_files(by_capital)[0] == "pkg/tableutils.py"


def test_map_of_a_real_package_puts_the_named_class_first(rich_copy):
    built = build_repo_map(rich_copy, "Table.add_row drops the last cell when a row has more cells than columns", 1024)
    assert _map_files(built)[0] == "rich/table.py"
    assert ("rich/table.py", "add_row") in {(d.path, d.name) for d in built.shown[:3]}
    assert built.tokens <= 1024


def test_task_focus_splits_words_and_knows_code_from_prose():
    from plugins.coding.focus import subwords, task_focus

    assert subwords("GitIgnoreSpec") == ["git", "ignore", "spec"]
    assert subwords("from_dict") == ["from", "dict"] and subwords("HTTPError") == ["http", "error"]
    files = ["src/jinja2/filters.py", "src/jinja2/sandbox.py", "sqlparse/utils.py", "lib/utils.py", "a/utils.py"]
    defined = {"values", "do_attr", "Array", "remove_quotes", "format"}
    prose = task_focus("the values and the format are wrong", files, defined)
    assert prose.names == set() and prose.files == set()
    code = task_focus("`values` and format() and an Array", files, defined)
    assert code.names == {"values", "format", "Array"}
    stems = task_focus("the |attr filter in the sandbox", files, defined)
    assert stems.files == {"src/jinja2/filters.py", "src/jinja2/sandbox.py"} and "attr" in stems.words
    module = task_focus("sqlparse.utils.remove_quotes keeps backticks", files, defined)
    assert module.files == {"sqlparse/utils.py"} and module.names == {"remove_quotes"}
    assert task_focus("utils are slow", files, defined).files == set()  # a generic stem names no file


def test_vendored_test_data_and_generated_files_are_left_out(boltons_like):
    popular = "def helper():\n    return 1\n"
    uses = "from x import helper\n\n\ndef go{i}():\n    return helper() + helper()\n"
    _write(boltons_like, {
        "pkg/_vendor/six.py": popular, "vendor/github.com/x/y/y_test.go": "package y\n\nfunc TestY() {}\n",
        "third_party/lib.js": "export function helper() { return 1 }\n", "tests/fixtures/sample.py": popular,
        "tests/data/case.py": popular, "internal/testdata/prog.go": "package main\n\nfunc helper() int { return 1 }\n",
        "api/service_pb2.py": popular, "gen/models.py": "# Code generated by sqlc. DO NOT EDIT.\n" + popular,
        "web/app.min.js": "function helper(){return 1}\n", "tests/test_table.py": uses.format(i=0),
        **{f"pkg/uses{i}.py": uses.format(i=i) for i in range(6)},
    })  # fmt: skip
    built = build_repo_map(boltons_like, "", 1024)
    assert built.excluded == {
        "api/service_pb2.py": "generated", "gen/models.py": "generated", "internal/testdata/prog.go": "test data",
        "pkg/_vendor/six.py": "vendored", "tests/data/case.py": "test data", "tests/fixtures/sample.py": "test data",
        "third_party/lib.js": "vendored", "vendor/github.com/x/y/y_test.go": "vendored", "web/app.min.js": "generated",
    }  # fmt: skip
    assert not set(_map_files(built)) & set(built.excluded)
    assert "tests/test_table.py" in built.text  # test code stays (ranked low): only test data is left out
    assert _map_files(built)[-1] == "tests/test_table.py"
