"""Speed of the coding tools on a real project of 100k+ lines, against ripgrep, printed as a table.

    .venv/bin/python bench/coding_tools.py [--package matplotlib] [--repeats 5]

The project is a copy of an installed package's Python sources (default ``matplotlib``, about
200k lines in 250 files; ``pandas`` and ``scipy`` are larger) in a temporary folder.

1. ``search_code`` (``plugins.coding.search.search_code``, up to 500 matches so that the whole
   tree is scanned) against ``rg -n`` (ripgrep, Debian package ``ripgrep``) on the same
   patterns; both report the same number of matching lines. Target: within 2 times ripgrep.
   The Python fallback (``HORIZON_SEARCH_BACKEND=python``, used without rg) is shown too.
2. ``find_symbol``: the first call indexes every source file with tree-sitter (cold); later
   calls use the per-file cache (warm). Target: a warm look-up under 50 ms.
3. The repository map (``build_repo_map``, 1024 tokens): cold (empty index cache) and warm.

Times are medians over ``--repeats`` runs, in milliseconds of wall-clock time.
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
    parser.add_argument("--repeats", type=int, default=5, help="runs per measurement (median)")
    args = parser.parse_args()
    source = SITE_PACKAGES / args.package
    if not source.is_dir():
        sys.exit(f"{source} is not installed; pick another --package (matplotlib, pandas, scipy)")
    rg = shutil.which("rg")
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        shutil.copytree(source, root / args.package, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc"))
        files, lines = line_count(root)
        console.print(f"{args.package}: {files} Python files, {lines:,} lines; ripgrep: {rg or 'not installed'}; "
                      f"search_code backend: {'rg' if search.ripgrep() else 'Python'}")

        table = Table(title="search_code against ripgrep (ms, median)")
        for column in ("pattern", "matches", "search_code", "Python fallback", "rg", "ratio", "target"):
            table.add_column(column, justify="left" if column == "pattern" else "right")
        for pattern in PATTERNS:
            ours, result = median_ms(lambda p=pattern: search.search_code(root, p, None, 500), args.repeats)
            matches = len(result.matches)
            os.environ[search.SEARCH_BACKEND_ENV] = "python"
            fallback, _ = median_ms(lambda p=pattern: search.search_code(root, p, None, 500), args.repeats)
            del os.environ[search.SEARCH_BACKEND_ENV]
            if rg:
                theirs, count = median_ms(lambda p=pattern: rg_count(rg, root, p), args.repeats)
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
        table.add_row(f"find_symbol {SYMBOLS[0]!r} cold (indexes {files} files)", f"{(time.perf_counter() - start) * 1000:.0f}", "")
        warm = []
        for name in SYMBOLS:
            ms, hits = median_ms(lambda n=name: symbols.find_symbol(root, n), args.repeats)
            warm.append(ms)
            table.add_row(f"find_symbol {name!r} warm ({len(hits)} hits)", f"{ms:.1f}", "met" if ms < 50 else "missed (< 50)")
        symbols._cache.clear()
        start = time.perf_counter()
        built = build_repo_map(root, "", 1024)
        table.add_row(f"repository map cold ({built.files_indexed} files, {built.tokens} tokens)",
                      f"{(time.perf_counter() - start) * 1000:.0f}", "")  # fmt: skip
        ms, built = median_ms(lambda: build_repo_map(root, "the legend of Axes.plot draws twice", 1024), args.repeats)
        table.add_row(f"repository map warm, with a focus ({len(built.shown)} definitions)", f"{ms:.0f}", "")
        console.print(table)


if __name__ == "__main__":
    main()
