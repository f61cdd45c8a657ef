"""The suspicious-change gate on real fixes: which of them it would flag, printed as tables.

    .venv/bin/python bench/suspicious_gate.py                 # every reference fix of suites/coding and
                                                              # suites/coding-hidden, and REAL_RELEASES
    .venv/bin/python bench/suspicious_gate.py --quick         # the first 4 tasks of suites/coding (CI)
    .venv/bin/python bench/suspicious_gate.py --release requests 2.32.2 2.32.3   # a pair of your own

For each task (its ``start`` recipe's tree from the sources cache, ``core.eval.sources.materialise``,
built from PyPI on first use) the reference ``fix.diff`` is applied to a copy (``git apply``) and
scanned as the coding reward scans a run's patch (``plugins.coding.suspicious.scan_patch``): the
files it changes, the lines it adds, and every finding (``path:line: rule: what``). Then each pair
of adjacent releases of a large project (``REAL_RELEASES``: both sdists from PyPI, checked against
PyPI's SHA-256, cached like the suites' archives) is diffed whole (``git diff --no-index``, every
file: source, tests, docs) and scanned the same way, the newer release's files read: each finding
there is a false positive unless the release meant it, so the table lists them to be read.

Every finding is printed; the exit status is non-zero only when a tree cannot be built or a fix does
not apply. Times are reported, not asserted. Needs PyPI (pypi.org, files.pythonhosted.org) unless
the sources cache has the archives.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
SUITES = [ROOT / "suites" / "coding", ROOT / "suites" / "coding-hidden"]
QUICK_TASKS = 4
#: Bug-fix releases of large, well-known projects: (package, older, newer).
REAL_RELEASES = [
    ("requests", "2.32.2", "2.32.3"),
    ("flask", "3.0.2", "3.0.3"),
    ("click", "8.1.7", "8.1.8"),
    ("urllib3", "2.2.2", "2.2.3"),
    ("rich", "13.9.3", "13.9.4"),
    ("attrs", "24.1.0", "24.2.0"),
    ("pytest", "8.3.3", "8.3.4"),
    ("django", "5.1.3", "5.1.4"),
    ("sqlalchemy", "2.0.35", "2.0.36"),
    ("pydantic", "2.9.1", "2.9.2"),
    ("pip", "24.2", "24.3"),
    ("tox", "4.23.1", "4.23.2"),
    ("sphinx", "8.1.2", "8.1.3"),
    ("setuptools", "75.1.0", "75.2.0"),
]


SCANNED = (".py", ".pyw", ".pyi", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".java", ".kt", ".go")


def counts(lines: dict[str, set[int]]) -> tuple[int, int, int]:
    """``(files, added lines, added lines in files the gate scans)`` of ``added_lines``' result."""
    return len(lines), sum(map(len, lines.values())), sum(len(v) for p, v in lines.items() if p.endswith(SCANNED))


def scan_fix(task: Path, work: Path) -> tuple[list[str], tuple[int, int, int]]:
    """Apply ``task``'s reference fix to a copy of its starting tree and scan it.

    Returns:
        ``(findings, counts(...))``.

    Raises:
        RuntimeError: the task has no start recipe or the fix does not apply.
    """
    from core.eval.sources import StartRecipe, materialise
    from plugins.coding.suspicious import added_lines, scan_patch, workspace_reader

    spec = json.loads((task / "task.json").read_text(encoding="utf-8"))
    if not spec.get("start"):
        raise RuntimeError("no start recipe")
    tree = materialise(StartRecipe.model_validate(spec["start"]), name=task.name).path
    copy = work / task.name
    shutil.copytree(tree, copy, symlinks=True)
    patch = (task / "fix.diff").read_text(encoding="utf-8")
    applied = subprocess.run(["git", "apply", "--whitespace=nowarn", str(task / "fix.diff")], cwd=copy, capture_output=True, text=True, check=False)
    if applied.returncode != 0:
        raise RuntimeError(f"fix.diff does not apply: {applied.stderr.strip()[:200]}")
    return [str(f) for f in scan_patch(patch, workspace_reader(copy))], counts(added_lines(patch))


def release_tree(package: str, version: str, work: Path) -> Path:
    """A release's sdist from PyPI (Horizon's sources cache, SHA-256 checked), unpacked under ``work``."""
    from core.eval.sources import fetch_archive, unpack
    from suites.build_task import layer, sdist_file

    entry = sdist_file(package, version)
    archive, _ = fetch_archive(layer(entry))
    dest = work / f"{package}-{version}"
    dest.mkdir()
    return unpack(archive, dest, entry["url"])


def scan_release(package: str, old: str, new: str, work: Path) -> tuple[list[str], tuple[int, int, int]]:
    """The whole diff between two releases' sdists, scanned with the newer one's files.

    Returns:
        ``(findings, counts(...))``.
    """
    from plugins.coding.suspicious import added_lines, scan_patch, workspace_reader

    a, b = release_tree(package, old, work), release_tree(package, new, work)
    shutil.move(str(a), work / "a")
    shutil.move(str(b), work / "b")
    proc = subprocess.run(["git", "diff", "--no-index", "--no-color", "--no-renames", "a", "b"], cwd=work, capture_output=True, check=False)
    patch = proc.stdout.decode("utf-8", "surrogateescape").replace("\n+++ b/b/", "\n+++ b/")
    return [str(f) for f in scan_patch(patch, workspace_reader(work / "b"))], counts(added_lines(patch))


def main() -> None:
    """Parse the arguments, scan every chosen fix and release pair, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"only the first {QUICK_TASKS} tasks of suites/coding, no releases (CI)")
    parser.add_argument("--release", nargs=3, action="append", metavar=("PACKAGE", "OLD", "NEW"),
                        help="a pair of adjacent releases to diff instead of REAL_RELEASES (repeatable)")
    parser.add_argument("--no-releases", action="store_true", help="only the suites' reference fixes")
    args = parser.parse_args()
    console = Console(width=max(Console().width, 160))
    tasks = [t.parent for suite in SUITES for t in sorted(suite.glob("*/task.json")) if (t.parent / "fix.diff").is_file()]
    if args.quick:
        tasks = tasks[:QUICK_TASKS]
    broken = []
    work = Path(tempfile.mkdtemp(prefix="horizon-bench-suspicious-", dir="/var/tmp" if Path("/var/tmp").is_dir() else None))
    try:
        table = Table(title="the suspicious-change gate on the suites' reference fixes")
        for column in ("task", "files", "added lines", "scanned", "seconds", "findings"):
            table.add_column(column, justify="left" if column in ("task", "findings") else "right")
        flagged = 0
        started_all = time.monotonic()
        for task in tasks:
            started = time.monotonic()
            try:
                found, (files, added, scanned) = scan_fix(task, work)
            except Exception as exc:  # noqa: BLE001 - one broken task is a row, not the end of the table
                broken.append(f"{task.name}: {exc}")
                table.add_row(f"{task.parent.name}/{task.name}", "-", "-", "-", f"{time.monotonic() - started:.2f}", f"ERROR {exc}")
                continue
            flagged += bool(found)
            table.add_row(f"{task.parent.name}/{task.name}", str(files), str(added), str(scanned), f"{time.monotonic() - started:.2f}",
                          "\n".join(found) or "none")  # fmt: skip
        console.print(table)
        console.print(f"{len(tasks)} reference fixes, {flagged} flagged, {len(broken)} not built, {time.monotonic() - started_all:.1f} s")
        releases = [tuple(r) for r in args.release] if args.release else ([] if args.quick or args.no_releases else REAL_RELEASES)
        if releases:
            table = Table(title="the gate on whole diffs between adjacent releases (every finding a false positive unless meant)")
            for column in ("release", "files", "added lines", "scanned", "seconds", "findings"):
                table.add_column(column, justify="left" if column in ("release", "findings") else "right")
            total_added = total_scanned = total_found = 0
            for package, old, new in releases:
                started = time.monotonic()
                pair = work / f"release-{package}-{new}"
                pair.mkdir()
                try:
                    found, (files, added, scanned) = scan_release(package, old, new, pair)
                except (Exception, SystemExit) as exc:  # noqa: BLE001 - sdist_file exits on a missing release
                    broken.append(f"{package} {old}->{new}: {exc}")
                    table.add_row(f"{package} {old} -> {new}", "-", "-", "-", f"{time.monotonic() - started:.2f}", f"ERROR {exc}")
                    continue
                total_added, total_scanned, total_found = total_added + added, total_scanned + scanned, total_found + len(found)
                table.add_row(f"{package} {old} -> {new}", str(files), str(added), str(scanned), f"{time.monotonic() - started:.2f}",
                              "\n".join(found) or "none")  # fmt: skip
                shutil.rmtree(pair, ignore_errors=True)
            console.print(table)
            console.print(f"{len(releases)} release diffs, {total_added} added lines ({total_scanned} in scanned files), {total_found} findings")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for line in broken:
        console.print(f"[red]error:[/] {line}")
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
