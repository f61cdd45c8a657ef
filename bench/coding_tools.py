"""Speed of the coding tools on a real project of 100k+ lines, against ripgrep, printed as a table.

    .venv/bin/python bench/coding_tools.py [--package matplotlib] [--repeats 5] [--slice PATH ...]
    .venv/bin/python bench/coding_tools.py --quick      # axes/, figure.py, axis.py, artist.py; 2 repeats (CI)

The project is a copy of an installed package's Python sources (default ``matplotlib``, about
200k lines in 250 files; ``pandas`` and ``scipy`` are larger) in a temporary folder, or of the
parts of it named by ``--slice`` (``--quick``: matplotlib's ``axes/``, ``figure.py``,
``axis.py`` and ``artist.py``, about 30k lines).

1. ``search_code`` (``plugins.coding.search.search_code``, up to 500 matches so that the whole
   tree is scanned) against ``rg -n`` (ripgrep, Debian package ``ripgrep``) on the same
   patterns; both report the same number of matching lines. Target: within 2 times ripgrep.
   The Python fallback (``HORIZON_SEARCH_BACKEND=python``, used without rg) is shown too.
2. ``find_symbol``: the first call indexes every source file with tree-sitter (cold); later
   calls use the per-file cache (warm). Target: a warm look-up under 50 ms.
3. The repository map (``build_repo_map``, 1024 tokens): cold (empty index cache) and warm.

Times are medians over ``--repeats`` runs, in milliseconds of wall-clock time. Targets are
reported, not asserted; the exit status is non-zero when a tool gives a wrong answer (a pattern
that ripgrep finds but ``search_code`` does not, or the reverse; no definition of ``Figure``;
an empty repository map) or raises.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from plugins.coding import search, symbols
from plugins.coding.repomap import build_repo_map

SITE_PACKAGES = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
PATTERNS = [r"def draw_\w+\(", r"self\._\w+ = None", r"raise ValueError\(f?\"", r"zzz_no_such_text_zzz"]
SYMBOLS = ["Figure", "draw_path", "set_xlim", "Axes.plot", "get_renderer"]
#: ``--quick``'s slice of matplotlib: every symbol above is defined in it.
QUICK_SLICE = ["axes", "figure.py", "axis.py", "artist.py"]


def median_ms(fn, repeats: int) -> tuple[float, object]:
    """Median wall time of ``fn()`` over ``repeats`` calls, in ms, and the last result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def rg_count(rg: str, root: Path, pattern: str) -> int:
    """Matching lines ripgrep finds (``rg -n``), with the same file limits as search_code."""
    proc = subprocess.run(
        [rg, "-n", "--no-heading", "--color", "never", "--max-filesize", "1M", "--no-require-git", "-e", search._for_ripgrep(pattern), "."],
        cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return len(proc.stdout.splitlines())


def line_count(root: Path) -> tuple[int, int]:
    """(.py files, lines in them) under ``root``."""
    files = list(root.rglob("*.py"))
    return len(files), sum(p.read_bytes().count(b"\n") for p in files)


def main() -> None:
    """Copy the package, time each tool, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", default="matplotlib", help="installed package whose sources to use")
    parser.add_argument("--repeats", type=int, default=None, help="runs per measurement (median; default 5)")
    parser.add_argument("--slice", nargs="+", metavar="PATH", help="only these files and folders of the package")
    parser.add_argument("--quick", action="store_true", help=f"matplotlib's {', '.join(QUICK_SLICE)}; 2 repeats (CI)")
    args = parser.parse_args()
    repeats = args.repeats or (2 if args.quick else 5)
    parts = args.slice or (QUICK_SLICE if args.quick and args.package == "matplotlib" else None)
    source = SITE_PACKAGES / args.package
    if not source.is_dir():
        print(f"skipped: {source} is not installed (the sources this benchmark searches); run ./setup.sh, "
              "or pick another --package (matplotlib, pandas, scipy)")
        return  # missing data, not a broken benchmark
    rg = shutil.which("rg")
    console = Console(width=max(Console().width, 120))
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
        for part in parts or ["."]:
            src, dest = source / part, root / args.package / part
            if src.is_dir():
                shutil.copytree(src, dest, ignore=ignore, dirs_exist_ok=True)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)  # a missing part raises: the slice names what must be there
        files, lines = line_count(root)
        console.print(f"{args.package}{' (' + ', '.join(parts) + ')' if parts else ''}: {files} Python files, {lines:,} lines; "
                      f"ripgrep: {rg or 'not installed'}; search_code backend: {'rg' if search.ripgrep() else 'Python'}")

        table = Table(title="search_code against ripgrep (ms, median)")
        for column in ("pattern", "matches", "search_code", "Python fallback", "rg", "ratio", "target"):
            table.add_column(column, justify="left" if column == "pattern" else "right")
        for pattern in PATTERNS:
            ours, result = median_ms(lambda p=pattern: search.search_code(root, p, None, 500), repeats)
            matches = len(result.matches)
            os.environ[search.SEARCH_BACKEND_ENV] = "python"
            fallback, python_result = median_ms(lambda p=pattern: search.search_code(root, p, None, 500), repeats)
            del os.environ[search.SEARCH_BACKEND_ENV]
            if (matches == 0) != (len(python_result.matches) == 0):
                failures.append(f"search_code {pattern!r}: {matches} matches, the Python fallback {len(python_result.matches)}")
            if rg:
                theirs, count = median_ms(lambda p=pattern: rg_count(rg, root, p), repeats)
                if (matches == 0) != (count == 0):
                    failures.append(f"search_code {pattern!r}: {matches} matches, rg {count}")
                ratio = ours / theirs
                row = [f"{matches}" + ("" if count == matches or matches == 500 else f" (rg {count})"), f"{ours:.1f}", f"{fallback:.1f}", f"{theirs:.1f}", f"{ratio:.2f}x",
                       "met" if ratio <= 2 else "missed (< 2x)"]  # fmt: skip
            else:
                row = [str(matches), f"{ours:.1f}", f"{fallback:.1f}", "-", "-", "rg missing"]
            table.add_row(pattern, *row)
        console.print(table)

        table = Table(title="find_symbol and the repository map (ms)")
        for column in ("operation", "time", "target"):
            table.add_column(column, justify="left" if column == "operation" else "right")
        symbols._cache.clear()
        start = time.perf_counter()
        hits = symbols.find_symbol(root, SYMBOLS[0])
        if not hits:
            failures.append(f"find_symbol {SYMBOLS[0]!r} found nothing")
        table.add_row(f"find_symbol {SYMBOLS[0]!r} cold (indexes {files} files)", f"{(time.perf_counter() - start) * 1000:.0f}", "")
        warm = []
        for name in SYMBOLS:
            ms, hits = median_ms(lambda n=name: symbols.find_symbol(root, n), repeats)
            warm.append(ms)
            table.add_row(f"find_symbol {name!r} warm ({len(hits)} hits)", f"{ms:.1f}", "met" if ms < 50 else "missed (< 50)")
        symbols._cache.clear()
        start = time.perf_counter()
        built = build_repo_map(root, "", 1024)
        if not built.files_indexed or not built.tokens:
            failures.append(f"the repository map is empty ({built.files_indexed} files indexed, {built.tokens} tokens)")
        table.add_row(f"repository map cold ({built.files_indexed} files, {built.tokens} tokens)",
                      f"{(time.perf_counter() - start) * 1000:.0f}", "")  # fmt: skip
        ms, built = median_ms(lambda: build_repo_map(root, "the legend of Axes.plot draws twice", 1024), repeats)
        table.add_row(f"repository map warm, with a focus ({len(built.shown)} definitions)", f"{ms:.0f}", "")
        console.print(table)
    if failures:
        sys.exit("wrong answers:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
