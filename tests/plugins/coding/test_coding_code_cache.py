"""The code index cache (``plugins/coding/code_cache.py``): file indexes persist per content hash
across processes and repositories, an edit re-indexes only the edited file, a damaged or foreign
cache is rebuilt, and the results are those of parsing every file afresh."""

import json
import shutil
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from plugins.coding import code_cache, repomap, symbols
from plugins.coding.languages import SUFFIX_LANGUAGE, grammar

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
SITE_PACKAGES = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"

pytestmark = pytest.mark.skipif(grammar("python") is None or grammar("java") is None, reason="tree-sitter grammars not installed")


@pytest.fixture(autouse=True)
def fresh_process():
    """Each test starts, and ends, as a new process would: nothing indexed in memory."""
    symbols.forget_in_memory()
    repomap._last_inputs = None
    yield
    symbols.forget_in_memory()
    repomap._last_inputs = None


@pytest.fixture
def parses(monkeypatch):
    """The files parsed (by their first line), recorded as ``symbols._index_source`` is called."""
    seen: list[str] = []
    real = symbols._index_source

    def counting(source: bytes, language: str):
        seen.append(source.decode(errors="replace").splitlines()[0] if source.strip() else "")
        return real(source, language)

    monkeypatch.setattr(symbols, "_index_source", counting)
    return seen


def _repo(tmp_path: Path, name: str = "repo") -> Path:
    root = tmp_path / name
    shutil.copytree(EXAMPLES / "python-user-service", root / "py")
    shutil.copytree(EXAMPLES / "java-user-service", root / "java")
    return root


def _source_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in SUFFIX_LANGUAGE)


def _new_process() -> None:
    symbols.forget_in_memory()
    repomap._last_inputs = None


def test_a_second_process_reads_the_stored_indexes_without_parsing(tmp_path, parses, horizon_home):
    root = _repo(tmp_path)
    first = symbols.find_symbol(root, "UserService")
    files = _source_files(root)
    assert len(parses) == len(files) >= 10 and first
    database = horizon_home / "cache" / "code-index" / "index.sqlite"
    assert database.is_file()
    # A real second process: it counts its own parses.
    child = (
        "import json, sys; from pathlib import Path; from plugins.coding import symbols\n"
        "count = []; real = symbols._index_source\n"
        "symbols._index_source = lambda s, l: count.append(1) or real(s, l)\n"
        "hits = symbols.find_symbol(Path(sys.argv[1]), 'UserService')\n"
        "built = __import__('plugins.coding.repomap', fromlist=['x']).build_repo_map(Path(sys.argv[1]), 'UserService', 512)\n"
        "print(json.dumps({'parses': len(count), 'hits': [[h.path, h.line, h.kind] for h in hits], 'map': built.text}))\n"
    )
    out = subprocess.run([sys.executable, "-c", child, str(root)], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["parses"] == 0
    assert result["hits"] == [[h.path, h.line, h.kind] for h in first]
    assert result["map"] == repomap.build_repo_map(root, "UserService", 512).text
    # The same in this process with its memory dropped: nothing parsed, and the tree not walked
    # (its file list and folder stamps were stored too).
    _new_process()
    parses.clear()
    walked: list[Path] = []
    real_walk = symbols.iter_files
    symbols.iter_files = lambda root_, start=None, **kw: walked.append(start) or real_walk(root_, start, **kw)
    try:
        assert symbols.find_symbol(root, "UserService") == first
    finally:
        symbols.iter_files = real_walk
    assert parses == [] and walked == []
    # A vendored file is listed (and left out of the map) in a new process too, though never read.
    vendored = root / "py" / "vendor" / "six.py"
    vendored.parent.mkdir()
    vendored.write_text("def vendored_helper():\n    return 1\n")
    assert repomap.build_repo_map(root, "", 256).excluded == {"py/vendor/six.py": "vendored"}
    _new_process()
    assert repomap.build_repo_map(root, "", 256).excluded == {"py/vendor/six.py": "vendored"}


def test_an_edited_file_is_indexed_again_and_only_it(tmp_path, parses):
    root = _repo(tmp_path)
    symbols.find_symbol(root, "UserService")
    parses.clear()
    service = root / "py" / "users" / "service.py"
    service.write_text(service.read_text() + "\n\ndef freshly_added_helper(x):\n    return x\n")
    hits = symbols.find_symbol(root, "freshly_added_helper", "definition")
    assert [(h.path, h.kind) for h in hits] == [("py/users/service.py", "function")]
    assert len(parses) == 1
    # A new process after the edit parses nothing: the edit's index was stored.
    _new_process()
    parses.clear()
    assert symbols.find_symbol(root, "freshly_added_helper", "definition") == hits
    assert parses == []
    # A new file in a sub-folder: that folder is walked again, not the tree, and only it parsed.
    walked: list[Path] = []
    real_walk = symbols.iter_files
    symbols.iter_files = lambda root_, start=None, **kw: walked.append(start) or real_walk(root_, start, **kw)
    try:
        (root / "py" / "users" / "extra.py").write_text("class BrandNewThing:\n    pass\n")
        hits = symbols.find_symbol(root, "BrandNewThing", "definition")
    finally:
        symbols.iter_files = real_walk
    assert [h.path for h in hits] == ["py/users/extra.py"]
    assert walked == [(root / "py" / "users").resolve()] and len(parses) == 1
    (root / "py" / "users" / "extra.py").unlink()
    assert symbols.find_symbol(root, "BrandNewThing", "definition") == []


def test_the_same_files_in_another_repository_come_from_the_cache(tmp_path, parses):
    first = _repo(tmp_path, "first")
    symbols.find_symbol(first, "User")
    count = len(parses)
    copy = tmp_path / "elsewhere" / "second"
    shutil.copytree(first, copy)
    (copy / "py" / "users" / "models.py").write_text((copy / "py" / "users" / "models.py").read_text() + "\nTOUCHED = 1\n")
    _new_process()
    parses.clear()
    hits = symbols.find_symbol(copy, "User")
    assert parses and len(parses) == 1 < count  # only the file whose content differs
    assert {h.path for h in hits} == {h.path for h in symbols.find_symbol(first, "User")}


def test_a_corrupt_cache_file_is_set_aside_and_rebuilt(tmp_path, parses, horizon_home):
    root = _repo(tmp_path)
    expected = symbols.find_symbol(root, "UserService")
    database = horizon_home / "cache" / "code-index" / "index.sqlite"
    _new_process()
    for suffix in ("-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    database.write_bytes(b"this is not a database, " * 500)
    parses.clear()
    assert symbols.find_symbol(root, "UserService") == expected
    assert len(parses) == len(_source_files(root))
    with sqlite3.connect(database) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == (code_cache.SCHEMA,)
        assert con.execute("SELECT COUNT(*) FROM indexes").fetchone()[0] == len(_source_files(root))
    assert list(database.parent.glob("index.sqlite.bad-*"))
    # A row of another shape (valid zlib and JSON, not an index): dropped and parsed again.
    with sqlite3.connect(database) as con:
        con.execute("UPDATE indexes SET data = ?", (zlib.compress(json.dumps({"language": 1, "lines": "x"}).encode()),))
    _new_process()
    parses.clear()
    assert symbols.find_symbol(root, "UserService") == expected
    assert len(parses) == len(_source_files(root))
    # A database of someone else's layout is not read.
    _new_process()
    for path in database.parent.iterdir():
        path.unlink()
    with sqlite3.connect(database) as con:
        con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        con.execute("INSERT INTO meta VALUES ('schema', 'something-else-7')")
    parses.clear()
    assert symbols.find_symbol(root, "UserService") == expected
    assert len(parses) == len(_source_files(root))


def test_the_cache_stays_within_its_bound(tmp_path, monkeypatch, horizon_home):
    monkeypatch.setenv("HORIZON_CODE_INDEX_MAX_MB", "0.004")  # about 4 KB: a few indexes
    root = _repo(tmp_path)
    symbols.find_symbol(root, "UserService")
    with sqlite3.connect(horizon_home / "cache" / "code-index" / "index.sqlite") as con:
        stored, total = con.execute("SELECT COUNT(*), SUM(bytes) FROM indexes").fetchone()
    assert 0 < stored < len(_source_files(root)) and total <= 0.004 * (1 << 20)


@pytest.mark.skipif(not (SITE_PACKAGES / "rich").is_dir(), reason="rich is not installed in this environment")
def test_results_from_the_cache_are_those_of_parsing_afresh(tmp_path):
    """On a real package (rich, about 100 files): every stored index equals a fresh parse, and
    find_symbol and the map from a new process equal those of the first."""
    root = tmp_path / "rich-repo"
    shutil.copytree(SITE_PACKAGES / "rich", root / "rich", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    focus = "Console.print wraps Text badly in rich/console.py"
    first_map = repomap.build_repo_map(root, focus, 1024)
    first_hits = symbols.find_symbol(root, "Segment")
    _new_process()
    loaded = symbols.repository_indexes(root)
    assert len(loaded) >= 90
    for path, _rel, index in loaded:
        assert index == symbols._index_source(path.read_bytes(), SUFFIX_LANGUAGE[path.suffix]), path
    assert symbols.find_symbol(root, "Segment") == first_hits
    again = repomap.build_repo_map(root, focus, 1024)
    assert again.text == first_map.text and again.ranking == first_map.ranking


def test_the_key_does_not_depend_on_which_grammars_a_process_loaded():
    """Two processes that loaded different grammars first still share the cache's keys."""
    show = "from plugins.coding import code_cache; print(code_cache.content_key('python', b'x = 1\\n'))"
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    keys = {
        subprocess.run([sys.executable, "-c", f"{first}; {show}"], capture_output=True, text=True, check=True, cwd=ROOT, env=env).stdout
        for first in ("pass", "from plugins.coding.languages import grammar; grammar('java'); grammar('go')")
    }
    assert len(keys) == 1 and len(keys.pop().strip()) == 64
