"""Does the repository map that opens a task show the code the reference fix touches? Printed as a table.

    .venv/bin/python bench/repomap_focus.py [--suite suites/coding] [--case REPO INSTRUCTION TOUCHED[:SYMBOL]] [--tokens 1024]
    .venv/bin/python bench/repomap_focus.py --quick      # the first 4 tasks of the suite (CI)

For each task of the suite (its starting tree, ``core.eval.load_task``'s, ``task.json``'s
``instruction`` and the reference ``fix.diff``) the map is built as the coding plugin's set-up builds it
(``build_repo_map(repo, instruction, SETUP_MAP_TOKENS)``) and checked for:

- **file**: a file the fix changes appears in the map (as a ``path:`` line);
- **place**: where the first such file comes among the files of the map (1: first);
- **symbol**: a definition the fix changes is listed: for each hunk, the nearest definition
  (class, function, method...) at or above its first changed line, in the file as it was.

``--case`` adds a repository of your own (an unpacked sdist, say) with an instruction and the
file (and, after a colon, the definition) its fix would touch. The last column counts the files
of the map that are tests, and those that are vendored or test data by their path
(``focus.excluded_reason``). Tokens are the map's estimated
tokens (``repomap.estimate_tokens``). The exit status is non-zero only when a map is empty or
over its budget; how many tasks are covered is reported, not asserted.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from core.eval.tasks import load_task
from plugins.coding.focus import excluded_reason, is_test_file
from plugins.coding.repomap import MAP_KINDS, build_repo_map

SUITE = Path(__file__).resolve().parents[1] / "suites" / "coding"
SETUP_MAP_TOKENS = 1024  # plugins.coding.plugin.SETUP_MAP_TOKENS (not imported: plugin.py pulls in the test runners)
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")


def touched(diff: str) -> dict[str, list[int]]:
    """``{path: [first changed line of each hunk, in the old file]}`` of a unified diff."""
    out: dict[str, list[int]] = {}
    path, line, pending = None, 0, False
    for text in diff.splitlines():
        if text.startswith("+++ "):
            path = text[4:].removeprefix("b/")
            out.setdefault(path, [])
        elif path and (match := _HUNK.match(text)):
            line, pending = int(match[1]), True
        elif path and pending and text[:1] in ("-", "+"):
            out[path].append(line)
            pending = False
        elif path and text[:1] == " ":
            line += 1
    return {p: lines for p, lines in out.items() if p != "/dev/null"}


def touched_definitions(built, changes: dict[str, list[int]]) -> set[tuple[str, str]]:
    """(path, name) of the nearest definition at or above each hunk's first changed line."""
    by_path: dict[str, list] = {}
    for d in built.ranking:
        if d.kind in MAP_KINDS:
            by_path.setdefault(d.path, []).append(d)
    found = set()
    for path, lines in changes.items():
        definitions = sorted(by_path.get(path, []), key=lambda d: d.line)
        for line in lines:
            above = [d for d in definitions if d.line <= line]
            if above:
                found.add((path, above[-1].name))
    return found


def measure(repo: Path, instruction: str, changes: dict[str, list[int]], symbols: set[str], tokens: int) -> dict:
    """Build the map and say whether (and where) it shows a touched file and a touched definition."""
    built = build_repo_map(repo, instruction, tokens)
    files_in_map = [line[:-1] for line in built.text.splitlines() if line.endswith(":") and "│" not in line]
    wanted = touched_definitions(built, changes) | {(p, s) for p in changes for s in symbols}
    shown = {(d.path, d.name) for d in built.shown}
    positions = [i + 1 for i, f in enumerate(files_in_map) if f in changes]
    return {
        "file": bool(positions),
        "position": positions[0] if positions else None,
        "symbol": bool(wanted & shown) if wanted else None,
        "touched_share": sum(d.path in changes for d in built.shown) / max(1, len(built.shown)),
        "tokens": built.tokens,
        "files_shown": len(files_in_map),
        "test_files_shown": sum(is_test_file(f) for f in files_in_map),
        "others_shown": sum(excluded_reason(f, []) is not None for f in files_in_map),
    }


def main() -> None:
    """Measure every task, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, default=SUITE, help="folder of task folders (task.json with a start recipe or repo/, fix.diff)")
    parser.add_argument(
        "--case",
        nargs=3,
        action="append",
        default=[],
        metavar=("REPO", "INSTRUCTION", "TOUCHED"),
        help="another repository, its instruction, and the file[:definition] its fix touches",
    )
    parser.add_argument("--tokens", type=int, default=SETUP_MAP_TOKENS, help="the map's budget (default: the set-up's)")
    parser.add_argument("--quick", action="store_true", help="the first 4 tasks of the suite only (CI)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    cases: list[tuple[str, Path, str, dict[str, list[int]], set[str]]] = []
    folders = sorted(p for p in args.suite.iterdir() if (p / "task.json").is_file() and (p / "fix.diff").is_file())
    for folder in folders[:4] if args.quick else folders:
        task = load_task(folder)  # the starting tree: built from the task's recipe into the sources cache, or its repo/
        cases.append((folder.name, task.repo, task.spec.instruction, touched((folder / "fix.diff").read_text()), set()))
    for repo, instruction, spec in args.case:
        path, _, symbol = spec.partition(":")
        cases.append((Path(repo).name, Path(repo), instruction, {path: []}, {symbol} if symbol else set()))
    table = Table(title=f"the map at the start of each task ({args.tokens} tokens): does it show what the fix touches?")
    table.add_column("task", no_wrap=True)
    for column in (
        "touched file (place)",
        "touched definition",
        "map lines on touched files",
        "tokens",
        "files (tests, vendored/data)",
    ):
        table.add_column(column, justify="right")
    rows, failures = [], []
    for name, repo, instruction, changes, symbols in cases:
        row = measure(repo, instruction, changes, symbols, args.tokens)
        rows.append({"task": name, **row})
        if not row["tokens"] or row["tokens"] > args.tokens:
            failures.append(f"{name}: the map has {row['tokens']} tokens (budget {args.tokens})")
        symbol = "-" if row["symbol"] is None else ("yes" if row["symbol"] else "no")
        place = f"yes ({row['position']} of {row['files_shown']})" if row["file"] else "no"
        table.add_row(
            name,
            place,
            symbol,
            f"{row['touched_share']:.0%}",
            str(row["tokens"]),
            f"{row['files_shown']} ({row['test_files_shown']}, {row['others_shown']})",
        )
    files = sum(r["file"] for r in rows)
    symbols_found = sum(bool(r["symbol"]) for r in rows)
    first = sum(r["position"] == 1 for r in rows)
    table.add_row(
        "all",
        f"{files}/{len(rows)} (first: {first})",
        f"{symbols_found}/{sum(r['symbol'] is not None for r in rows)}",
        f"{sum(r['touched_share'] for r in rows) / max(1, len(rows)):.0%} (mean)",
        f"{sum(r['tokens'] for r in rows) / max(1, len(rows)):.0f} (mean)",
        "",
    )
    Console(width=170).print(table)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if failures:
        sys.exit("broken maps:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
