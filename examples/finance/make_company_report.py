"""Generate the example multi-company report (examples/finance/company-report/) from real filings.

    .venv/bin/python examples/finance/make_company_report.py [OUT]

Reads Nike's 2021 and 2023 10-Ks, Foot Locker's 8-K of 2022-05-20, and Microsoft's 2016 and 2023
and Adobe's 2017 and 2022 10-Ks from ../shared/data/ (next to the repository), and writes
report.md, report.html, charts/, pages/ (the cited PDF pages as PNG) and figures.json. Market
data comes from snapshots in examples/finance/market/ only (offline); with none recorded the
multiples say "not available".
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

DATA = ROOT / ".." / "shared" / "data"


def filing(name: str) -> Path:
    """The PDF ``name`` from ../shared/data/filings or ../shared/data/financebench."""
    for folder in ("filings", "financebench"):
        path = DATA / folder / f"{name}.pdf"
        if path.is_file():
            return path
    sys.exit(f"{name}.pdf not found under {DATA.resolve()}/(filings|financebench): the example needs ../shared/data/")


COMPANIES = [
    Company("Nike", "NKE", [filing("NIKE_2021_10K"), filing("NIKE_2023_10K")],
            "Fiscal years end on 31 May. Nike's income statement prints no operating-income line (it goes from "
            "total selling and administrative expense to interest and other items to income before taxes), so "
            "operating margin is not available rather than estimated."),
    Company("Foot Locker", "FL", [filing("FOOTLOCKER_2022_8K_dated-2022-05-20")],
            "The only Foot Locker filing at hand is an 8-K (first-quarter 2022 earnings release); no annual statement "
            "is read from it, so every Foot Locker figure below is not available."),
    Company("Microsoft", "MSFT", [filing("MICROSOFT_2016_10K"), filing("MICROSOFT_2023_10K")],
            "Fiscal years end on 30 June. The two 10-Ks cover FY2014 to FY2016 and FY2021 to FY2023; FY2017 to FY2020 "
            "are not in the filings read, so growth is shown only between consecutive years."),
    Company("Adobe", "ADBE", [filing("ADOBE_2017_10K"), filing("ADOBE_2022_10K")],
            "Fiscal years end on the Friday closest to 30 November. The two 10-Ks cover FY2015 to FY2017 and FY2020 to FY2022. "
            "Adobe prints its diluted share count as \"Shares used to compute diluted net income per share\" (in millions)."),
]
PEERS = [
    PeerGroup("Athletic footwear and apparel: Nike and Foot Locker", ["NKE", "FL"],
              "A brand against a retailer of that brand; Foot Locker's annual statements are not among the filings read."),
    PeerGroup("Software: Microsoft and Adobe", ["MSFT", "ADBE"],
              "Different fiscal years: Microsoft's ends 30 June, Adobe's in early December, five months apart; "
              "each company's latest year is compared as reported."),
]


def main(out: Path) -> None:
    """Write the report into ``out`` and print what was written."""
    report = CompanyReport(COMPANIES, peers=PEERS, as_of="2023-08-01",
                           title="Nike, Foot Locker, Microsoft and Adobe: multi-year trends, peers and DCF from the filings",
                           market=MarketData(HERE / "market", offline=True))
    with tempfile.TemporaryDirectory() as tmp:
        result = report.generate(out, db_path=Path(tmp) / "filings.duckdb")
    print(f"{result.markdown}\n{result.html}\n{len(result.charts)} chart(s), {len(result.page_images)} page image(s), "
          f"{len(result.figures)} figures, narrative problems: {result.narrative_problems or 'none'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "company-report")
