"""Starting trees made from published archives (core.eval.sources): real sdists from PyPI, the
cache, and refusals (a wrong SHA-256, unsafe archives, offline with an empty cache, a changed tree).

Archives a test makes itself are put where a download would have put them (the cache's
``archives/<sha256>``), with URLs on a closed local port, so any attempt to download fails.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import socket
import tarfile
import zipfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from core import eval as ev
from core.errors import UserError
from core.eval import sources

ROOT = Path(__file__).resolve().parents[3]
#: A small real task: two sdists of about 30 kB.
TASK = ROOT / "suites" / "coding" / "parse-1.20.2-hyphen-field-names"


def real_recipe() -> sources.StartRecipe:
    return sources.StartRecipe.model_validate(json.loads((TASK / "task.json").read_text())["start"])


@pytest.fixture
def closed_url():
    """An http:// URL on a local port nothing listens on: a download from it fails at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/packages"


def offline(recipe: sources.StartRecipe, base: str) -> sources.StartRecipe:
    """The recipe with every archive's URL moved to ``base`` (same SHA-256s and rules)."""
    moved = [a.model_copy(update={"url": f"{base}/{a.url.rsplit('/', 1)[-1]}"}) for a in recipe.archives]
    return recipe.model_copy(update={"archives": moved})


def tar_gz(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buffer.getvalue()


def member(
    name: str, data: bytes = b"", *, mode: int = 0o644, link: str = "", kind: bytes = tarfile.REGTYPE
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.mode, info.type, info.linkname = mode, kind, link
    return info, data


def prefetched(cache: Path, data: bytes, url: str, **rules) -> sources.ArchiveLayer:
    """An archive put in the cache as a download would leave it, and its layer."""
    sha = hashlib.sha256(data).hexdigest()
    (cache / "archives").mkdir(parents=True, exist_ok=True)
    (cache / "archives" / sha).write_bytes(data)
    return sources.ArchiveLayer(url=f"{url}/a-{sha[:8]}.tar.gz", sha256=sha, **rules)


# --------------------------------------------------------------------------- real sdists from PyPI


def test_a_real_task_is_built_from_pypi_and_then_comes_from_the_cache(tmp_path, closed_url):
    cache, recipe = tmp_path / "cache", real_recipe()
    tree = sources.materialise(recipe, name=TASK.name, cache=cache)
    assert tree.built and tree.path.is_relative_to(cache / "trees")
    sizes = [(cache / "archives" / a.sha256).stat().st_size for a in recipe.archives]
    assert tree.downloaded_bytes == sum(sizes) > 0
    assert sources.tree_digest(tree.path) == recipe.tree_sha256
    files = {p.relative_to(tree.path).as_posix() for p in tree.path.rglob("*") if p.is_file()}
    assert {"parse.py", "tests/test_parse.py"} <= files and "PKG-INFO" not in files  # PKG-INFO is excluded
    for archive in recipe.archives:  # cached under its SHA-256, and it is that file
        assert hashlib.sha256((cache / "archives" / archive.sha256).read_bytes()).hexdigest() == archive.sha256

    # the second time nothing is downloaded: the URLs now point at a closed port
    again = sources.materialise(offline(recipe, closed_url), name=TASK.name, cache=cache)
    assert again == sources.StartTree(tree.path, 0, built=False)
    # without the tree, it is built again from the cached archives, still without the network
    shutil.rmtree(cache / "trees")
    rebuilt = sources.materialise(offline(recipe, closed_url), name=TASK.name, cache=cache)
    assert rebuilt.built and rebuilt.downloaded_bytes == 0 and sources.tree_digest(rebuilt.path) == recipe.tree_sha256


def test_a_wrong_sha256_is_refused_and_nothing_is_kept(tmp_path):
    recipe = real_recipe()
    wrong = "0" * 64
    bad = recipe.model_copy(update={"archives": [recipe.archives[0].model_copy(update={"sha256": wrong}), *recipe.archives[1:]]})
    with pytest.raises(UserError) as caught:
        sources.materialise(bad, name=TASK.name, cache=tmp_path / "cache")
    message = str(caught.value)
    assert recipe.archives[0].url in message and f"has SHA-256 {recipe.archives[0].sha256}, not the {wrong}" in message
    assert "nothing was kept" in message
    assert list((tmp_path / "cache" / "archives").iterdir()) == [] and not any((tmp_path / "cache" / "trees").iterdir())


def test_a_damaged_cached_archive_is_downloaded_again(tmp_path):
    cache, recipe = tmp_path / "cache", real_recipe()
    layer = recipe.archives[1]
    sources.fetch_archive(layer, cache)
    (cache / "archives" / layer.sha256).write_bytes(b"not the archive")
    path, downloaded = sources.fetch_archive(layer, cache)
    assert downloaded > 0 and hashlib.sha256(path.read_bytes()).hexdigest() == layer.sha256


# --------------------------------------------------------------------------- offline


def test_offline_with_an_empty_cache_says_what_to_do(tmp_path, closed_url, monkeypatch):
    task = tmp_path / "suite" / TASK.name
    shutil.copytree(TASK, task)
    spec = json.loads((task / "task.json").read_text())
    spec["start"] = offline(real_recipe(), closed_url).model_dump()
    (task / "task.json").write_text(json.dumps(spec))
    monkeypatch.setenv("HORIZON_SOURCES_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(UserError) as caught:
        ev.load_task(task)
    message = str(caught.value)
    url = spec["start"]["archives"][0]["url"]
    assert message.startswith(f"task {TASK.name} (parse 1.20.1): cannot download {url} (")
    assert "agent eval PLUGIN SUITE --fetch-only" in message and str(tmp_path / "empty-cache" / "archives") in message

    from typer.testing import CliRunner

    from core.cli import app

    result = CliRunner().invoke(app, ["eval", "coding", str(task.parent), "--fetch-only"])
    assert result.exit_code == 2 and "cannot download" in result.output and "Traceback" not in result.output


def test_fetch_only_builds_the_trees_and_runs_nothing(horizon_home):
    from typer.testing import CliRunner

    from core.cli import app

    result = CliRunner().invoke(app, ["eval", "coding", str(TASK.parent), "--task", TASK.name, "--fetch-only"])
    assert result.exit_code == 0, result.output
    assert "1 tasks ready" in result.output and str(sources.sources_cache() / "trees") in result.output.replace("\n", "")
    assert not (horizon_home / "evals").exists() and not (horizon_home / "runs").exists()


# --------------------------------------------------------------------------- unsafe archives


UNSAFE = {
    "a path with ..": [member("pkg-1.0/ok.py", b"x = 1\n"), member("pkg-1.0/../../evil.txt", b"owned\n")],
    "a link to an absolute path": [
        member("pkg-1.0/ok.py", b"x = 1\n"),
        member("pkg-1.0/passwd", link="/etc/passwd", kind=tarfile.SYMTYPE),
    ],
    "a link out of the tree": [member("pkg-1.0/out", link="../../../../outside", kind=tarfile.SYMTYPE)],
    "a hard link out of the tree": [member("pkg-1.0/hard", link="../../etc/passwd", kind=tarfile.LNKTYPE)],
    "a device file": [member("pkg-1.0/fifo", kind=tarfile.FIFOTYPE)],
}


@pytest.mark.parametrize("case", sorted(UNSAFE))
def test_an_unsafe_tar_archive_is_refused(tmp_path, closed_url, case):
    cache = tmp_path / "cache"  # archives are unpacked beside the tree: cache/trees/.unpack-*/
    layer = prefetched(cache, tar_gz(UNSAFE[case]), closed_url)
    recipe = sources.StartRecipe(archives=[layer], tree_sha256="0" * 64)
    with pytest.raises(UserError, match=r"refused, the archive's member '[^']+' is unsafe"):
        sources.materialise(recipe, name="evil", cache=cache)
    assert not list(tmp_path.rglob("evil.txt"))
    assert not any((cache / "trees").iterdir())  # no tree, no partial one, nothing unpacked left


def test_an_unsafe_zip_archive_is_refused(tmp_path, closed_url):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("pkg-1.0/ok.py", "x = 1\n")
        z.writestr("pkg-1.0/../../evil.txt", "owned\n")
    cache = tmp_path / "cache"
    layer = prefetched(cache, buffer.getvalue(), closed_url)
    with pytest.raises(UserError, match=r"member 'pkg-1.0/../../evil.txt' is unsafe \(its path leaves the destination\)"):
        sources.materialise(sources.StartRecipe(archives=[layer], tree_sha256="0" * 64), cache=cache)
    assert not list(tmp_path.rglob("evil.txt")) and not any((cache / "trees").iterdir())


def test_an_archive_over_the_size_limit_is_refused(tmp_path, closed_url, monkeypatch):
    cache = tmp_path / "cache"
    layer = prefetched(cache, tar_gz([member("pkg-1.0/big.bin", b"\0" * 5000)]), closed_url)
    monkeypatch.setattr(sources, "MAX_UNPACKED_BYTES", 4096)
    with pytest.raises(UserError, match="5000 bytes unpacked, more than"):
        sources.materialise(sources.StartRecipe(archives=[layer], tree_sha256="0" * 64), cache=cache)


def test_recipe_paths_must_stay_in_the_tree():
    layer = {"url": "https://example.org/a.tar.gz", "sha256": "a" * 64}
    for bad in (
        {"files": {"../x.py": ""}},
        {"files": {"/etc/x": ""}},
        {"archives": [{**layer, "into": "a/../.."}]},
        {"archives": [{**layer, "include": ["tests/../../x"]}]},
        {"archives": [{**layer, "url": "file:///etc/passwd"}]},
    ):
        with pytest.raises(ValidationError):
            sources.StartRecipe.model_validate({"archives": [layer], "tree_sha256": "0" * 64, **bad})


# --------------------------------------------------------------------------- the recipe's rules, the digest


def test_layers_exclude_include_files_and_links(tmp_path, closed_url):
    cache = tmp_path / "cache"
    buggy = prefetched(cache, tar_gz([
        member("pkg-1.0/pkg/core.py", b"old\n"), member("pkg-1.0/pkg/docs/keep.txt", b"in the package\n"),
        member("pkg-1.0/docs/index.rst", b"top-level docs\n"), member("pkg-1.0/pkg/core.pyc", b"\0"),
        member("pkg-1.0/tests/test_core.py", b"old test\n"), member("pkg-1.0/run.sh", b"#!/bin/sh\n", mode=0o755),
        member("pkg-1.0/alias.py", link="pkg/core.py", kind=tarfile.SYMTYPE),
    ]), closed_url, exclude=["/docs", "*.pyc"])  # fmt: skip
    fixed = prefetched(cache, tar_gz([member("pkg-1.1/pkg/core.py", b"new\n"), member("pkg-1.1/tests/test_core.py", b"new test\n")]),
                       closed_url, include=["tests/test_core.py"])  # fmt: skip
    vendored = prefetched(cache, tar_gz([member("dep-2.0/dep.py", b"dep\n")]), closed_url, into="vendor")
    archives, files = [buggy, fixed, vendored], {"conftest.py": "import sys\n"}
    sources.build_tree(archives, files, tmp_path / "tree", cache)
    tree = tmp_path / "tree"
    got = {p.relative_to(tree).as_posix(): p.read_text() for p in tree.rglob("*") if p.is_file()}
    assert got == {
        "pkg/core.py": "old\n",  # only the fixed release's included test came from it
        "pkg/docs/keep.txt": "in the package\n",  # "/docs" is the top-level folder only
        "tests/test_core.py": "new test\n", "run.sh": "#!/bin/sh\n", "alias.py": "old\n",  # a link inside: a copy
        "vendor/dep.py": "dep\n", "conftest.py": "import sys\n",
    }  # fmt: skip
    assert (tree / "run.sh").stat().st_mode & 0o777 == 0o755 and (tree / "pkg/core.py").stat().st_mode & 0o777 == 0o644
    assert not (tree / "alias.py").is_symlink()
    # the digest is the documented manifest's
    manifest = "".join(
        f"{'100755' if rel == 'run.sh' else '100644'} {hashlib.sha256(text.encode()).hexdigest()} {rel}\n"
        for rel, text in sorted(got.items())
    )
    assert sources.tree_digest(tree) == hashlib.sha256(manifest.encode()).hexdigest()

    recipe = sources.StartRecipe(archives=archives, files=files, tree_sha256=sources.tree_digest(tree))
    made = sources.materialise(recipe, name="pkg", cache=cache)
    assert made.built and made.downloaded_bytes == 0 and sources.tree_digest(made.path) == recipe.tree_sha256
    # an include path the archive lacks is named
    missing = fixed.model_copy(update={"include": ["tests/test_gone.py"]})
    with pytest.raises(UserError, match="has no file tests/test_gone.py"):
        sources.build_tree([missing], {}, tmp_path / "other", cache)


def test_a_changed_tree_is_refused_and_an_edited_cached_tree_rebuilt(tmp_path, closed_url):
    cache = tmp_path / "cache"
    layer = prefetched(cache, tar_gz([member("pkg-1.0/a.py", b"a = 1\n")]), closed_url)
    sources.build_tree([layer], {}, tmp_path / "tree", cache)
    digest = sources.tree_digest(tmp_path / "tree")
    with pytest.raises(UserError, match=f"has digest {digest}, not the recorded tree_sha256 {'1' * 64}"):
        sources.materialise(sources.StartRecipe(archives=[layer], tree_sha256="1" * 64), cache=cache)
    assert not any((cache / "trees").iterdir())

    recipe = sources.StartRecipe(archives=[layer], tree_sha256=digest)
    made = sources.materialise(recipe, cache=cache)
    (made.path / "a.py").write_text("a = 2\n")  # someone edits the cached tree
    again = sources.materialise(recipe, cache=cache)
    assert again.built and again.path == made.path and (made.path / "a.py").read_text() == "a = 1\n"
    (made.path / "a.py").chmod(0o755)  # the executable bit is part of the digest
    assert sources.tree_digest(made.path) != digest


def test_an_unwritable_cache_is_one_line_naming_its_variable(tmp_path):
    (tmp_path / "a-file").write_text("not a folder\n")
    with pytest.raises(UserError, match=r"cannot write Horizon's data folder .*a-file/cache/trees .*HORIZON_SOURCES_CACHE"):
        sources.materialise(real_recipe(), name=TASK.name, cache=tmp_path / "a-file" / "cache")
