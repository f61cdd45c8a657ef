"""Build benchmark task folders from two releases of a package on PyPI.

For one recipe (package, buggy version, fixed version, instruction; optionally the source and
test files to take) this script:

1. finds both source distributions through PyPI's JSON simple API (PEP 691,
   https://peps.python.org/pep-0691/), downloads them into Horizon's sources cache and checks
   their SHA-256 (``core.eval.sources``);
2. writes the starting tree's recipe (``start`` in ``task.json``): the buggy release's files,
   without documentation, CI files and packaging metadata (``STRIP``), plus the test files that
   changed in the fixed release (its new tests), and the SHA-256 of the tree they make. The tree
   itself is not written into the suite: ``agent eval`` builds it from the recipe into the cache;
3. makes ``fix.diff``: ``git diff`` of the source files that changed (version-string lines left
   as they were in the buggy release: a version bump is no part of a fix);
4. runs the whole test suite before and after the fix in Horizon's sandbox and writes
   ``task.json`` with the fail-to-pass and pass-to-pass tests. A recipe whose fix breaks a test,
   or leaves one failing, is refused (``drop`` removes test files that cannot run here).

Usage::

    .venv/bin/python suites/build_task.py suites/coding/recipes.json            # every recipe
    .venv/bin/python suites/build_task.py suites/coding/recipes.json parse-...  # some by name

Recipes (a JSON list of objects): ``name``, ``package``, ``buggy``, ``fixed``, ``instruction``,
``changelog``; optional ``src`` and ``tests`` (paths in the sdist; default: every changed
source / test file), ``drop`` (gitignore-style patterns of files to leave out of the tree),
``src_dir`` (a ``src/`` layout: a root ``conftest.py`` puts that folder on the import path, as
an editable install would); ``hidden`` (true: the bug report comes without a failing test. The
starting tree is the buggy sdist alone; the fixed release's changed tests become the task's
``hidden_tests``, a second recipe the grader writes into its copy of the final workspace; the
tests run in the project's own environment, built from its declared dependencies as they were
when the fixed release was uploaded: ``dependencies_as_of``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checking import classify, run_before_after

from core.eval.sources import ArchiveLayer, build_tree, fetch_archive, select_files, tree_digest, unpack
from plugins.coding.testing import test_files

SIMPLE_API = "https://pypi.org/simple/{name}/"
#: Never part of a task's repository (gitignore-style patterns, ``sources.ArchiveLayer.exclude``):
#: documentation, CI, packaging metadata, editor files (top-level entries: ``/name``), and caches
#: or build metadata (at any depth).
STRIP = [
    "/docs", "/doc", "/.github", "/.circleci", "/.gitlab-ci.yml", "/.travis.yml", "/.readthedocs.yaml", "/.readthedocs.yml",
    "/PKG-INFO", "/.pre-commit-config.yaml", "/.coveragerc", "/azure-pipelines.yml", "/appveyor.yml", "/.gitattributes",
    "/.editorconfig", "/Makefile", "/bin", "/scripts", "/artwork", "/examples", "/ez_setup.py", "/.mailmap", "/.flake8", "/.tox",
    "*.egg-info", ".git", "__pycache__", "*.pyc", ".pytest_cache",
]  # fmt: skip
def stripped(recipe: dict[str, Any]) -> list[str]:
    """``STRIP`` plus the recipe's ``drop``; a hidden-tests task keeps the sdist's ``PKG-INFO``: its
    tests run in the project's built environment, and a version from version control (hatch-vcs,
    setuptools-scm) can only come from there in a tree without ``.git``."""
    strip = [p for p in STRIP if p != "/PKG-INFO"] if recipe.get("hidden") else STRIP
    return strip + recipe.get("drop", [])


#: Root conftest.py written for a recipe with ``src_dir``: what ``pip install -e .`` would give.
SRC_SHIM = """\
# Added by Horizon's suites/build_task.py (not part of the package): the package is not
# installed, so its source folder is put first on the import path for the tests.
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent / "{src_dir}"))
"""
#: Changed in every release, never part of a fix.
NOT_SOURCE = {"setup.py", "_version.py", "__about__.py", "__meta__.py", "_meta.py", "conf.py"}
#: A line that only states the package's version.
VERSION_LINE = re.compile(r"^[ \t]*(__version__|VERSION|version|__version_info__|version_info)\s*[:=]", re.MULTILINE)


def normalize(name: str) -> str:
    """PEP 503 normalized project name (``Markdown`` -> ``markdown``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def sdist_file(package: str, version: str) -> dict[str, Any]:
    """The simple API's entry (``url``, ``hashes``, ``filename``) for a release's sdist.

    Raises:
        SystemExit: the release has no ``.tar.gz``/``.zip`` sdist on PyPI.
    """
    request = urllib.request.Request(SIMPLE_API.format(name=normalize(package)), headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        files = json.load(reply)["files"]
    stems = {f"{normalize(package)}-{version}", f"{normalize(package).replace('-', '_')}-{version}"}
    for entry in files:
        name = entry["filename"]
        for suffix in (".tar.gz", ".zip"):
            if name.endswith(suffix) and normalize(name[: -len(suffix)]).replace("_", "-") in {normalize(s) for s in stems}:
                return entry
    raise SystemExit(f"{package} {version}: no source distribution on PyPI")


def layer(entry: dict[str, Any], **rules: Any) -> ArchiveLayer:
    """An archive layer of a task's starting tree from a simple-API entry (its URL and PyPI's SHA-256)."""
    return ArchiveLayer(url=entry["url"], sha256=entry["hashes"]["sha256"], **rules)


def unpacked(entry: dict[str, Any], exclude: list[str], dest: Path) -> tuple[Path, dict[str, Path]]:
    """A release's sdist, downloaded into Horizon's sources cache once (checked against PyPI's
    SHA-256) and unpacked into ``dest``: ``(top folder, {relative path: file} without exclude)``."""
    archive, _ = fetch_archive(layer(entry))
    root = unpack(archive, dest, entry["url"])
    return root, select_files(root, exclude, label=entry["url"])


def without_version_change(buggy: str, fixed: str) -> str:
    """``fixed`` with its version lines replaced by ``buggy``'s (same count and order), so a fix
    never carries the release's version bump."""
    old = [m for m in VERSION_LINE.finditer(buggy)]
    new = [m for m in VERSION_LINE.finditer(fixed)]
    if len(old) != len(new):
        return fixed
    out = fixed
    for o, n in reversed(list(zip(old, new))):
        old_line = buggy[o.start() : buggy.find("\n", o.start()) if "\n" in buggy[o.start() :] else len(buggy)]
        end = fixed.find("\n", n.start())
        end = len(fixed) if end == -1 else end
        out = out[: n.start()] + old_line + out[end:]
    return out


def git_diff(pairs: dict[str, tuple[str | None, str]]) -> str:
    """A git unified diff (paths ``a/…``, ``b/…``) of ``{path: (old text or None, new text)}``."""
    chunks = []
    with tempfile.TemporaryDirectory() as tmp:
        for rel, (old, new) in sorted(pairs.items()):
            a, b = Path(tmp, "a", rel), Path(tmp, "b", rel)
            b.parent.mkdir(parents=True, exist_ok=True)
            b.write_text(new, encoding="utf-8", newline="")
            if old is not None:
                a.parent.mkdir(parents=True, exist_ok=True)
                a.write_text(old, encoding="utf-8", newline="")
            proc = subprocess.run(
                ["git", "diff", "--no-index", "--no-color", "--", f"a/{rel}" if old is not None else "/dev/null", f"b/{rel}"],
                cwd=tmp, capture_output=True, text=True, check=False,
            )  # fmt: skip
            if proc.returncode not in (0, 1):
                raise SystemExit(f"git diff failed for {rel}: {proc.stderr}")
            text = proc.stdout.replace(f"a/a/{rel}", f"a/{rel}").replace(f"b/b/{rel}", f"b/{rel}")
            chunks.append(text.replace(f"a/b/{rel}", f"a/{rel}"))  # a new file: /dev/null -> b/…
    return "".join(chunks)


def start_recipe(recipe: dict[str, Any], buggy: dict[str, Any], fixed: dict[str, Any], tests: list[str]) -> dict[str, Any]:
    """A task's ``start`` (``core.eval.sources.StartRecipe``) without its ``tree_sha256``: the buggy
    sdist without ``STRIP`` and the recipe's ``drop``, the fixed sdist's ``tests``, and the
    ``src_dir`` shim.

    Args:
        recipe: the recipe (``drop``, ``src_dir`` are read).
        buggy, fixed: the two sdists' simple-API entries (``sdist_file``).
        tests: the test files taken from the fixed release.
    """
    archives = [layer(buggy, exclude=stripped(recipe))]
    if not recipe.get("hidden"):
        archives.append(layer(fixed, include=sorted(tests)))
    return {"archives": archives, "files": {"conftest.py": SRC_SHIM.format(src_dir=recipe["src_dir"])} if recipe.get("src_dir") else {}}


def hidden_recipe(fixed: dict[str, Any], tests: list[str]) -> dict[str, Any]:
    """A hidden-tests task's ``hidden_tests`` recipe without its ``tree_sha256``: the fixed sdist's ``tests`` only."""
    return {"archives": [layer(fixed, include=sorted(tests))], "files": {}}


def uploaded_at(entry: dict[str, Any]) -> str:
    """A simple-API entry's upload time (PEP 700 ``upload-time``) to the second, ``2023-11-21T13:23:27Z``.

    Raises:
        SystemExit: the index gives no upload time.
    """
    stamp = entry.get("upload-time") or ""
    if not stamp:
        raise SystemExit(f"{entry.get('filename')}: the index gives no upload time (PEP 700), needed for dependencies_as_of")
    return stamp.split(".")[0].rstrip("Z") + "Z"


def recipe_json(start: dict[str, Any], tree_sha256: str) -> dict[str, Any]:
    """``start`` as ``task.json`` holds it (defaults left out), with the tree's digest."""
    archives = [a.model_dump(exclude_defaults=True) for a in start["archives"]]
    return {"archives": archives, "files": start["files"], "tree_sha256": tree_sha256}


def build(recipe: dict[str, Any], out: Path) -> dict[str, Any]:
    """Build (or rebuild) the task folder ``out/<name>`` from a recipe; return a report row.

    Raises:
        SystemExit: no source change, or the fix does not behave (the message says how).
        UserError: a download fails or is not what PyPI lists (``core.eval.sources.fetch_archive``).
    """
    name, package = recipe["name"], recipe["package"]
    exclude = stripped(recipe)
    buggy_entry = sdist_file(package, recipe["buggy"])
    fixed_entry = sdist_file(package, recipe["fixed"])
    task_dir = out / name
    with tempfile.TemporaryDirectory(prefix=f"build-{name}-") as tmp:
        buggy_root, buggy = unpacked(buggy_entry, exclude, Path(tmp, "buggy"))
        fixed_root, fixed = unpacked(fixed_entry, exclude, Path(tmp, "fixed"))
        tests_in_fixed = set(test_files(fixed_root)) | set(test_files(buggy_root))

        def changed(rel: str) -> bool:
            return rel not in buggy or buggy[rel].read_bytes() != fixed[rel].read_bytes()

        def is_test(rel: str) -> bool:  # test sources, and data files in test folders
            return rel in tests_in_fixed or any(part in ("tests", "test", "testing") for part in rel.split("/")[:-1])

        tests = recipe.get("tests") or [r for r in fixed if is_test(r) and changed(r)]
        src_candidates = recipe.get("src") or [
            r for r in fixed if r.endswith(".py") and not is_test(r) and Path(r).name not in NOT_SOURCE and changed(r)
        ]
        pairs: dict[str, tuple[str | None, str]] = {}
        for rel in src_candidates:  # bytes decoded as they are: a CRLF file's diff keeps its CRs, or it would not apply
            new = fixed[rel].read_bytes().decode("utf-8")
            old = buggy[rel].read_bytes().decode("utf-8") if rel in buggy else None
            new = without_version_change(old, new) if old is not None else new
            if new != old:
                pairs[rel] = (old, new)
        if not pairs:
            raise SystemExit(f"{name}: no source file changed between {recipe['buggy']} and {recipe['fixed']}")
        if recipe.get("src_dir") and "conftest.py" in buggy:
            raise SystemExit(f"{name}: the repository has a conftest.py already; cannot add the src_dir shim")
        if recipe.get("hidden") and not tests:
            raise SystemExit(f"{name}: no test file changed between {recipe['buggy']} and {recipe['fixed']}; nothing to hide")
        start = start_recipe(recipe, buggy_entry, fixed_entry, tests)
        repo = Path(tmp, "repo")  # the starting tree, as agent eval will build it from the recipe
        build_tree(start["archives"], start["files"], repo)
        digest = tree_digest(repo)
        extra: dict[str, Any] = {}
        hidden_tree = None
        if recipe.get("hidden"):
            hidden = hidden_recipe(fixed_entry, tests)
            hidden_tree = Path(tmp, "hidden")
            build_tree(hidden["archives"], hidden["files"], hidden_tree)
            extra = {"hidden_tests": recipe_json(hidden, tree_digest(hidden_tree)), "dependencies_as_of": uploaded_at(fixed_entry)}
        task_dir.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(task_dir / "repo", ignore_errors=True)  # a tree an older builder wrote into the suite
        (task_dir / "fix.diff").write_text(git_diff(pairs), encoding="utf-8")
        check = run_before_after(repo, task_dir / "fix.diff", hidden_tests=hidden_tree,
                                 dependencies_as_of=extra.get("dependencies_as_of", ""))  # fmt: skip
    f2p, p2p, broken, still = classify(check)
    spec = {
        "instruction": recipe["instruction"],
        "language": "python",
        "source": {
            "package": package, "buggy_version": recipe["buggy"], "fixed_version": recipe["fixed"],
            "buggy_sdist_url": buggy_entry["url"], "buggy_sdist_sha256": buggy_entry["hashes"]["sha256"],
            "fixed_sdist_url": fixed_entry["url"], "fixed_sdist_sha256": fixed_entry["hashes"]["sha256"],
            "changelog": recipe.get("changelog", ""),
        },
        "fail_to_pass": f2p,
        "pass_to_pass": p2p,
        "test_command": "python -m pytest -p no:cacheprovider",
        "test_files": sorted(tests),
        "start": recipe_json(start, digest),
        **extra,
    }  # fmt: skip
    (task_dir / "task.json").write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
    problems = []
    if not f2p:
        problems.append("no test fails without the fix and passes with it")
    if broken:
        problems.append(f"the fix breaks {broken[:5]}")
    if still:
        problems.append(f"tests fail even with the fix: {still[:5]}")
    if recipe.get("hidden") and check.environment.kind == "horizon":
        problems.append(f"the tests did not run in the project's own environment: {check.environment.summary}")
    return {"name": name, "f2p": len(f2p), "p2p": len(p2p), "seconds": round(check.seconds, 1), "problems": problems,
            "environment": check.environment.summary}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Build the recipes named on the command line (all when none); print one line per task.

    Returns:
        0 when every task built cleanly, 1 otherwise.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recipes", type=Path, help="JSON list of recipes")
    parser.add_argument("names", nargs="*", help="recipe names to build (default: all)")
    parser.add_argument("--out", type=Path, default=None, help="suite folder (default: the recipes file's folder)")
    parser.add_argument("--jobs", type=int, default=2, help="tasks built at once")
    args = parser.parse_args(argv)
    recipes = json.loads(args.recipes.read_text())
    if args.names:
        recipes = [r for r in recipes if r["name"] in set(args.names)]
    out = (args.out or args.recipes.parent).resolve()

    def one(recipe: dict[str, Any]) -> dict[str, Any]:
        try:
            return build(recipe, out)
        except (SystemExit, Exception) as exc:  # noqa: BLE001 - one bad recipe must not stop the others
            return {"name": recipe["name"], "f2p": 0, "p2p": 0, "seconds": 0, "problems": [str(exc)]}

    ok = True
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for row in pool.map(one, recipes):
            ok &= not row["problems"]
            status = "ok" if not row["problems"] else "PROBLEM: " + "; ".join(row["problems"])
            print(f"{row['name']:<34} f2p {row['f2p']:>3}  p2p {row['p2p']:>5}  {row['seconds']:>6} s  {status}", flush=True)
            if row.get("environment"):
                print(f"{'':<34} test environment: {row['environment']}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
