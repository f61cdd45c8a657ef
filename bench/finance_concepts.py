"""Key concepts mapped per filing, on all 39 real filings (the 12 the plugin was built on and FinanceBench's 27).

    .venv/bin/python bench/finance_concepts.py [--docs NAME ...] [--json FILE] [--compare FILE]
    .venv/bin/python bench/finance_concepts.py --quick      # ULTABEAUTY_2023Q4_EARNINGS and AMCOR_2022_8K (CI)

Each filing is ingested with the real ``ingest`` into a fresh DuckDB (parse cache in a temporary
folder, so the current parser runs); a key concept counts as mapped when at least one stored fact
of the filing carries it; the accounting identities of ``checks.run_checks`` compared and held on
the filing are counted too (a wrong mapping shows as an identity that fails). The key concepts are ``plugins.finance.concepts.KEY_CONCEPTS`` when the
code has it (the 24 concepts every complete set of statements has), else the 24 the plugin had
before (``CONCEPTS`` less the optional ``temporary_equity`` and ``fx_effect_on_cash``), so the same
list is counted before and after. ``--compare FILE`` prints a saved run beside this one.

Without ../shared/data it says so and exits 0; the exit status is non-zero when a filing's
ingestion ends in ``error`` or an exception escapes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from plugins.finance import concepts
from plugins.finance.checks import run_checks
from plugins.finance.ingest import ingest
from plugins.finance.store import connect

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
FOLDERS = {"filings": DATA / "filings", "financebench": DATA / "financebench"}
QUICK = ["ULTABEAUTY_2023Q4_EARNINGS", "AMCOR_2022_8K_dated-2022-07-01"]
OPTIONAL = {"temporary_equity", "fx_effect_on_cash"}


def key_concepts() -> list[str]:
    """The concepts counted: ``concepts.KEY_CONCEPTS``, or the same 24 derived from an older ``CONCEPTS``."""
    return list(getattr(concepts, "KEY_CONCEPTS", None) or [c for c in concepts.CONCEPTS if c not in OPTIONAL])


def concepts_mapped(con, doc_name: str, keys: list[str]) -> list[str]:
    """The key concepts ``doc_name`` has at least one stored fact for, sorted."""
    rows = con.execute("SELECT DISTINCT concept FROM facts WHERE doc_name = ? AND concept IS NOT NULL", [doc_name]).fetchall()
    return sorted({r[0] for r in rows} & set(keys))


def run(paths: list[tuple[str, Path]]) -> dict[str, dict]:
    """Ingest each filing fresh; ``{doc: {"set", "status", "statements", "mapped", "missing", "seconds"}}``."""
    keys = key_concepts()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        con = connect(Path(tmp) / "f.duckdb")
        for folder, path in paths:
            start = time.perf_counter()
            status = ingest(con, [path], Path(tmp) / "cache")[0]
            mapped = concepts_mapped(con, status.doc_name, keys)
            statements = con.execute("SELECT statements FROM documents WHERE doc_name = ?", [status.doc_name]).fetchone()[0]
            checks = run_checks(con, [status.doc_name]).results
            results[status.doc_name] = {"set": folder, "status": status.status, "statements": statements or "",
                                        "mapped": len(mapped), "of": len(keys), "missing": sorted(set(keys) - set(mapped)),
                                        "identities": len(checks), "held": sum(r.passed for r in checks),
                                        "seconds": round(time.perf_counter() - start, 2)}
        con.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", nargs="*", help="file names without .pdf (default: all 39)")
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    parser.add_argument("--json", type=Path, help="write the per-filing results here")
    parser.add_argument("--compare", type=Path, help="a saved --json run to print beside this one")
    args = parser.parse_args(argv)
    console = Console()
    if not all(f.is_dir() for f in FOLDERS.values()):
        console.print(f"no filings at {DATA.resolve()} (../shared/data is not checked out): nothing to measure")
        return 0
    wanted = set(QUICK if args.quick else args.docs or [])
    paths = [(name, p) for name, folder in FOLDERS.items() for p in sorted(folder.glob("*.pdf")) if not wanted or p.stem in wanted]
    results = run(paths)
    before = json.loads(args.compare.read_text()) if args.compare else {}
    table = Table(title=f"Key concepts mapped per filing (of {len(key_concepts())})")
    for col in ["set", "filing", "status", "statements"] + (["before"] if before else []) + ["mapped", "identities held", "missing", "s"]:
        table.add_column(col, justify="right" if col in ("before", "mapped", "identities held", "s") else "left")
    for doc, r in results.items():
        old = [str(before[doc]["mapped"]) if doc in before else "-"] if before else []
        table.add_row(r["set"], doc, r["status"], r["statements"].replace("_statement", "").replace("balance_sheet", "balance"),
                      *old, str(r["mapped"]), f"{r['held']}/{r['identities']}", ", ".join(r["missing"]), f"{r['seconds']:.1f}")
    console.print(table)
    for folder in FOLDERS:
        docs = [d for d, r in results.items() if r["set"] == folder]
        if docs:
            held, compared = sum(results[d]["held"] for d in docs), sum(results[d]["identities"] for d in docs)
            line = (f"{folder}: {len(docs)} filings, mean {statistics.mean(results[d]['mapped'] for d in docs):.1f} concepts mapped, "
                    f"identities held {held} of {compared}")
            if before and all(d in before for d in docs):
                line += f" (before {statistics.mean(before[d]['mapped'] for d in docs):.1f} mapped"
                if all("identities" in before[d] for d in docs):
                    line += f", {sum(before[d]['held'] for d in docs)} of {sum(before[d]['identities'] for d in docs)} held"
                line += ")"
            console.print(line)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    errors = [d for d, r in results.items() if r["status"] == "error"]
    if errors:
        console.print(f"ingestion ended in error: {', '.join(errors)}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
