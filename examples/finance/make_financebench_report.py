"""Generate the hand-checked two-company report (examples/finance/financebench-report/) from real filings.

    .venv/bin/python examples/finance/make_financebench_report.py [OUT]

Reads Verizon's and PepsiCo's 2022 10-Ks from ../shared/data/financebench/ (next to the repository)
and writes report.md, report.html, charts/, pages/ (the cited PDF pages as PNG) and figures.json.
The two were chosen for what issue 29 found wrong in company reports: Verizon prints its debt due
within one year as "Debt maturing within one year" and its diluted share count under a caption
("Diluted Earnings Per Common Share" over "Weighted-average shares outstanding"), PepsiCo's fiscal
years end on different days (December 31, 2022, December 25, 2021 and December 26, 2020).
examples/finance/financebench-report/README.md checks its figures against the pages.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from plugins.finance.company_report import Company, CompanyReport, PeerGroup  # after making the repository importable
from plugins.finance.market import MarketData

DATA = ROOT / ".." / "shared" / "data" / "financebench"


def filing(name: str) -> Path:
    """The PDF ``name`` from ../shared/data/financebench."""
    path = DATA / f"{name}.pdf"
    if not path.is_file():
        sys.exit(f"{name}.pdf not found under {DATA.resolve()}: the example needs ../shared/data/financebench/")
    return path


COMPANIES = [
    Company("Verizon", "VZ", [filing("VERIZON_2022_10K")],
            "Fiscal years end on 31 December. Verizon's segment tables print its two segments as columns (Consumer, "
            "Business), one table per year, adding up to the reportable segments' total; a separate reconciliation "
            "takes that total to consolidated revenue with corporate and other revenue and eliminations."),
    Company("PepsiCo", "PEP", [filing("PEPSICO_2022_10K")],
            "PepsiCo's fiscal year ends on the last Saturday of December, so each year has its own end date "
            "(the statements' headings print December 31, 2022, December 25, 2021 and December 26, 2020)."),
]
PEERS = [PeerGroup("Verizon and PepsiCo", ["VZ", "PEP"],
                   "Not peers by industry (telecommunications against food and beverages): side by side only to compare "
                   "margins and returns of two large US filers on their 2022 fiscal years.")]


def main(out: Path) -> None:
    """Write the report into ``out`` and print what was written."""
    report = CompanyReport(COMPANIES, peers=PEERS, as_of="2023-08-01",
                           title="Verizon and PepsiCo: trends, borrowings and DCF from their 2022 10-Ks",
                           market=MarketData(HERE / "market", offline=True))
    with tempfile.TemporaryDirectory() as tmp:
        result = report.generate(out, db_path=Path(tmp) / "filings.duckdb")
    print(f"{result.markdown}\n{result.html}\n{len(result.charts)} chart(s), {len(result.page_images)} page image(s), "
          f"{len(result.figures)} figures, narrative problems: {result.narrative_problems or 'none'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "financebench-report")
