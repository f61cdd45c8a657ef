"""Build benchmark task folders from two releases of a package on PyPI.

For one recipe (package, buggy version, fixed version, instruction; optionally the source and
test files to take) this script:

1. finds both source distributions through PyPI's JSON simple API (PEP 691,
   https://peps.python.org/pep-0691/), downloads them into a cache and checks their SHA-256;
2. makes ``repo/``: the buggy release's files, without documentation, CI files and packaging
   metadata, plus the test files that changed in the fixed release (its new tests);
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
source / test file), ``drop`` (globs of files to leave out of ``repo/``), ``src_dir`` (a
``src/`` layout: a root ``conftest.py`` puts that folder on the import path, as an editable
install would).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checking import classify, run_before_after

from plugins.coding.testing import test_files

SIMPLE_API = "https://pypi.org/simple/{name}/"
CACHE = Path(tempfile.gettempdir()) / "horizon-sdists"
#: Never part of a task's repository: documentation, CI, packaging metadata, editor files
#: (top-level entries), and caches or build metadata (anywhere).
STRIP_TOP = [
    "docs", "doc", ".github", ".circleci", ".gitlab-ci.yml", ".travis.yml", ".readthedocs.yaml", ".readthedocs.yml",
    "PKG-INFO", ".pre-commit-config.yaml", ".coveragerc", "azure-pipelines.yml", "appveyor.yml", ".gitattributes",
    ".editorconfig", "Makefile", "bin", "scripts", "artwork", "examples", "ez_setup.py", ".mailmap", ".flake8", ".tox",
]  # fmt: skip
STRIP_ANYWHERE = ["*.egg-info", ".git", "__pycache__", "*.pyc", ".pytest_cache"]
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


def fetch(package: str, version: str) -> tuple[Path, dict[str, Any]]:
    """Download a release's sdist into the cache (once) and check its SHA-256.

    Returns:
        ``(archive path, simple-API entry)``.
    """
    entry = sdist_file(package, version)
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / entry["filename"]
    if not path.is_file():
        with urllib.request.urlopen(entry["url"], timeout=120) as reply:
            path.write_bytes(reply.read())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != entry["hashes"]["sha256"]:
        path.unlink()
        raise SystemExit(f"{entry['filename']}: SHA-256 {digest} is not PyPI's {entry['hashes']['sha256']}")
    return path, entry


def extract(archive: Path, dest: Path) -> Path:
    """Unpack an sdist and return its single top folder."""
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as z:
            z.extractall(dest)
    else:
        with tarfile.open(archive) as t:
            t.extractall(dest, filter="data")
    (top,) = [p for p in dest.iterdir() if p.is_dir()]
    return top


def _stripped(rel: str, drop: list[str]) -> bool:
    parts = rel.split("/")
    return (
        any(fnmatch.fnmatch(parts[0], pattern) for pattern in STRIP_TOP)
        or any(fnmatch.fnmatch(part, pattern) for part in parts for pattern in STRIP_ANYWHERE)
        or any(fnmatch.fnmatch(rel, g) for g in drop)
    )


def tree(root: Path, drop: list[str]) -> dict[str, Path]:
    """``{relative path: file}`` of the files kept from an unpacked sdist."""
    return {
        p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*"))
        if p.is_file() and not _stripped(p.relative_to(root).as_posix(), drop)
    }  # fmt: skip


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


def build(recipe: dict[str, Any], out: Path) -> dict[str, Any]:
    """Build (or rebuild) the task folder ``out/<name>`` from a recipe; return a report row.

    Raises:
        SystemExit: download failure, no source change, or the fix does not behave (the message says how).
    """
    name, package = recipe["name"], recipe["package"]
    drop = recipe.get("drop", [])
    buggy_archive, buggy_entry = fetch(package, recipe["buggy"])
    fixed_archive, fixed_entry = fetch(package, recipe["fixed"])
    with tempfile.TemporaryDirectory(prefix=f"build-{name}-") as tmp:
        buggy_root = extract(buggy_archive, Path(tmp, "buggy"))
        fixed_root = extract(fixed_archive, Path(tmp, "fixed"))
        buggy, fixed = tree(buggy_root, drop), tree(fixed_root, drop)
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
        for rel in src_candidates:
            new = fixed[rel].read_text(encoding="utf-8")
            old = buggy[rel].read_text(encoding="utf-8") if rel in buggy else None
            new = without_version_change(old, new) if old is not None else new
            if new != old:
                pairs[rel] = (old, new)
        if not pairs:
            raise SystemExit(f"{name}: no source file changed between {recipe['buggy']} and {recipe['fixed']}")
        task_dir = out / name
        if task_dir.exists():
            shutil.rmtree(task_dir)
        repo = task_dir / "repo"
        for rel, path in buggy.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, repo / rel)
        for rel in tests:
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(fixed[rel], repo / rel)
        if recipe.get("src_dir"):  # a src/ layout: the package is not installed, so tests need the folder on sys.path
            if (repo / "conftest.py").exists():
                raise SystemExit(f"{name}: the repository has a conftest.py already; cannot add the src_dir shim")
            (repo / "conftest.py").write_text(SRC_SHIM.format(src_dir=recipe["src_dir"]), encoding="utf-8")
        (task_dir / "fix.diff").write_text(git_diff(pairs), encoding="utf-8")
    check = run_before_after(repo, task_dir / "fix.diff")
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
    }  # fmt: skip
    (task_dir / "task.json").write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
    problems = []
    if not f2p:
        problems.append("no test fails without the fix and passes with it")
    if broken:
        problems.append(f"the fix breaks {broken[:5]}")
    if still:
        problems.append(f"tests fail even with the fix: {still[:5]}")
    return {"name": name, "f2p": len(f2p), "p2p": len(p2p), "seconds": round(check.seconds, 1), "problems": problems}


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
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
