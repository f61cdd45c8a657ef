"""Generate the example research report (examples/finance/report/) from a real filing.

    .venv/bin/python examples/finance/make_report.py [OUT]

Reads 3M's 2018 Form 10-K from ../shared/data/filings/ (next to the repository), answers a few
questions as formulas over the extracted statements, and writes report.md, report.html,
charts/ and figures.json. Market data comes from snapshots in examples/finance/market/ only
(offline); with none recorded, the report says so.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from plugins.finance.market import MarketData  # after making the repository importable
from plugins.finance.report import FinanceReport

FILINGS = ROOT / ".." / "shared" / "data" / "filings"

QUESTIONS = [
    {"question": "FY2018 capital expenditure", "document": "3M_2018_10K", "formula": "-{capital_expenditure@FY2018}",
     "unit": "USD", "scale": "millions"},
    {"question": "Net PP&E at the end of FY2018", "document": "3M_2018_10K", "formula": "{ppe_net@2018-12-31}",
     "unit": "USD", "scale": "billions", "decimals": 2},
    {"question": "FY2018 free cash flow (operating cash flow - capex)", "document": "3M_2018_10K",
     "formula": "{operating_cash_flow@FY2018} + {capital_expenditure@FY2018}", "unit": "USD", "scale": "millions"},
    {"question": "FY2018 revenue growth", "document": "3M_2018_10K", "formula": "100 * ({revenue@FY2018} / {revenue@FY2017} - 1)",
     "unit": "percent", "decimals": 1},
    {"question": "Working capital ratio at the end of FY2018", "document": "3M_2018_10K",
     "formula": "{total_current_assets@2018-12-31} / {total_current_liabilities@2018-12-31}", "unit": "ratio", "decimals": 2},
]


def main(out: Path) -> None:
    """Write the report into ``out`` and print what was written."""
    filing = FILINGS / "3M_2018_10K.pdf"
    if not filing.is_file():
        sys.exit(f"{filing} not found: the example needs ../shared/data/filings/ next to the repository")
    report = FinanceReport(filings=[filing], ticker="MMM", questions=QUESTIONS, as_of="2019-02-07",
                           title="3M Company (MMM): fiscal 2018 from the Form 10-K",
                           market=MarketData(HERE / "market", offline=True))
    with tempfile.TemporaryDirectory() as tmp:
        result = report.generate(out, db_path=Path(tmp) / "filings.duckdb")
    print(f"{result.markdown}\n{result.html}\n{len(result.charts)} chart(s), {len(result.figures)} figures, "
          f"accounting checks {result.checks_status}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "report")
