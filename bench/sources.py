"""Starting trees from their recipes: a suite's tasks built from PyPI into an empty sources cache,
then again from the cache, printed as a table.

    .venv/bin/python bench/sources.py [--suite suites/coding] [--task NAME ...]
    .venv/bin/python bench/sources.py --quick      # two small tasks (CI)

For each task (``core.eval.sources.materialise`` on its ``start`` recipe), in order, into a
fresh temporary cache: bytes downloaded (archives that an earlier task already fetched are not
downloaded again), seconds, the tree's files and bytes, and whether its digest is the recorded
``tree_sha256``; then the whole suite again from the warm cache (every tree re-hashed and
compared, nothing downloaded).

The exit status is non-zero when a tree cannot be made or its digest differs, or the warm pass
downloads or builds anything. Times are reported, not asserted. Needs PyPI (files.pythonhosted.org).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
QUICK_TASKS = ["parse-1.20.2-hyphen-field-names", "xmltodict-0.14.2-whitespace-text"]


def main() -> None:
    """Parse the arguments, build every chosen task's tree twice, print the table."""
    from core.eval.sources import StartRecipe, materialise, tree_digest

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, default=ROOT / "suites" / "coding", help="folder of task folders")
    parser.add_argument("--task", action="append", help="task folder name (repeatable); default: every task with a start recipe")
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_TASKS)} (CI)")
    args = parser.parse_args()
    names = args.task or (QUICK_TASKS if args.quick else None)
    recipes = {}
    for task_file in sorted(args.suite.glob("*/task.json")):
        start = json.loads(task_file.read_text(encoding="utf-8")).get("start")
        if start and (names is None or task_file.parent.name in names):
            recipes[task_file.parent.name] = StartRecipe.model_validate(start)
    if not recipes:
        sys.exit(f"no task with a start recipe in {args.suite}" + (f" named {', '.join(names)}" if names else ""))
    cache = Path(tempfile.mkdtemp(prefix="horizon-bench-sources-"))
    console = Console(width=max(Console().width, 120))
    table = Table(title=f"starting trees from an empty cache ({cache})")
    for column in ("task", "downloaded (kB)", "seconds", "files", "tree (kB)", "digest"):
        table.add_column(column, justify="left" if column == "task" else "right")
    broken, total_bytes, cold = [], 0, 0.0
    try:
        for name, recipe in recipes.items():
            started = time.monotonic()
            try:
                tree = materialise(recipe, name=name, cache=cache)
            except Exception as exc:  # noqa: BLE001 - one broken task is a row, not the end of the table
                broken.append(f"{name}: {exc}")
                table.add_row(name, "-", f"{time.monotonic() - started:.2f}", "-", "-", "ERROR")
                continue
            seconds = time.monotonic() - started
            cold += seconds
            total_bytes += tree.downloaded_bytes
            files = [p for p in tree.path.rglob("*") if p.is_file()]
            same = tree_digest(tree.path) == recipe.tree_sha256
            if not same:
                broken.append(f"{name}: digest differs")
            table.add_row(name, f"{tree.downloaded_bytes / 1000:.0f}", f"{seconds:.2f}", str(len(files)),
                          f"{sum(p.stat().st_size for p in files) / 1000:.0f}", "same" if same else "DIFFERENT")  # fmt: skip
        table.add_row("[bold]all[/]", f"{total_bytes / 1000:.0f}", f"{cold:.2f}", "", "", "")
        console.print(table)
        started = time.monotonic()
        warm = [materialise(recipe, name=name, cache=cache) for name, recipe in recipes.items()]
        console.print(f"again from the cache: {len(warm)} trees checked in {time.monotonic() - started:.2f} s, "
                      f"{sum(t.downloaded_bytes for t in warm)} bytes downloaded, {sum(t.built for t in warm)} built")  # fmt: skip
        if any(t.built or t.downloaded_bytes for t in warm):
            broken.append("the warm pass downloaded or built a tree")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if broken:
        sys.exit("broken:\n  " + "\n  ".join(broken))


if __name__ == "__main__":
    main()
