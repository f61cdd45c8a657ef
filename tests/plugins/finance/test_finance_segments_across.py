"""Segment tables printed with the segments as columns (issue 29 item 3), on real 10-Ks: CVS's
reconciliation of its segments to the consolidated totals (p.179) and Coca-Cola's operating-segment
table (p.143), one group of rows per year under a year heading. Their "Total revenues" row, read
across, adds up to the income statement's revenue, so the report shows segments (main: CVS's
product lines from p.128, Coca-Cola none)."""

from __future__ import annotations

from pathlib import Path

import pytest

from plugins.finance.segments import ACROSS
from plugins.finance.store import connect
from tests.plugins.finance.conftest import financebench_db, segments_and_revenue

DOCS = ["CVSHEALTH_2022_10K", "COCACOLA_2017_10K"]


@pytest.fixture(scope="module")
def across_db(tmp_path_factory, finance_cache) -> Path:
    """CVS's 2022 and Coca-Cola's 2017 10-Ks from ../shared/data/financebench, ingested once."""
    return financebench_db(tmp_path_factory, finance_cache, DOCS, "across")


@pytest.fixture
def con(across_db):
    connection = connect(across_db, read_only=True)
    yield connection
    connection.close()




def test_cvs_segments_printed_as_columns_reconcile_with_revenue(con):
    # CVS p.179, "2022:" group, row "Total revenues": Health Care Benefits 91,409, Pharmacy Services 169,236,
    # Retail/LTC 106,594, Corporate/Other 530, Intersegment Eliminations (45,302); Consolidated Totals 322,467,
    # the income statement's total revenues (p.108)
    segments, revenue = segments_and_revenue(con, "CVSHEALTH_2022_10K")
    assert segments is not None and sorted(segments.years) == [2020, 2021, 2022]
    fy22 = segments.years[2022]
    assert (fy22.revenue.page, fy22.revenue.column_index, fy22.revenue.row_label) == (179, ACROSS, "Total revenues")
    assert [(r.label, r.value) for r in fy22.revenue.rows] == [
        ("Health Care Benefits", 91_409e6), ("Pharmacy Services (1)", 169_236e6), ("Retail/ LTC", 106_594e6),
        ("Corporate/ Other", 530e6), ("Intersegment Eliminations (2)", -45_302e6)]
    assert sum(r.value for r in fy22.revenue.rows) == pytest.approx(322_467e6) == revenue[2022]
    assert fy22.revenue.total.label == "Consolidated Totals" and fy22.revenue.total.value == 322_467e6
    # the profit block is the same group's "Adjusted operating income (loss)" row
    assert segments.measure == "operating income"
    assert {r.label: r.value for r in fy22.profit[1].rows}["Retail/ LTC"] == 6_705e6
    assert {r.label: r.value for r in segments.years[2021].revenue.rows}["Health Care Benefits"] == 82_186e6


def test_coca_cola_operating_segments_printed_as_columns_reconcile_with_revenue(con):
    # Coca-Cola p.143, "2016" group, "Total net operating revenues": EMEA 7,278, Latin America 3,819, North America
    # 10,210, Asia Pacific 5,294, Bottling Investments 19,885, Corporate 132, Eliminations (4,755); Consolidated
    # 41,863 = net operating revenues of 2016 (p.74)
    segments, revenue = segments_and_revenue(con, "COCACOLA_2017_10K")
    assert segments is not None and 2016 in segments.years
    fy16 = segments.years[2016].revenue
    assert fy16.page == 143 and fy16.row_label == "Total net operating revenues"
    assert [r.value / 1e6 for r in fy16.rows] == [7_278, 3_819, 10_210, 5_294, 19_885, 132, -4_755]
    assert [r.label for r in fy16.rows][:5] == ["Europe, Middle East & Africa", "Latin America", "North America",
                                                  "Asia Pacific", "Bottling Investments"]
    # the table reader carries the two-line header "Bottling / Investments" onto the next two columns
    assert [r.label.split()[-1] for r in fy16.rows][5:] == ["Corporate", "Eliminations"]
    assert sum(r.value for r in fy16.rows) == pytest.approx(revenue[2016]) == 41_863e6
    assert {r.label: r.value for r in segments.years[2016].profit[1].rows}["North America"] == 2_582e6


def test_a_row_across_that_does_not_add_up_gives_no_segments(con):
    # CVS p.179's "Revenues from external customers" row (2022: 321,629) leaves out net investment income, so it is
    # not revenue (322,467): no breakdown is built from it, nor from rows other than revenue
    segments, _ = segments_and_revenue(con, "CVSHEALTH_2022_10K")
    rows = {b.revenue.row_label for b in segments.years.values()}
    assert rows == {"Total revenues"}
