"""Segment notes whose totals reconcile with revenue in the filing's own steps (issue 29 item 3), on real 10-Ks.

Verizon 2022 prints one table per year with its two segments as columns (p.101-102, the year in the
table's top-left corner) whose "Total Operating Revenues" add up to "Total Reportable Segments" only;
a separate reconciliation (p.102) takes that total to consolidated revenue with "Corporate and other"
and "Eliminations". PepsiCo 2022 prints net revenue and operating profit by division side by side
(p.70), its 2022 profit header with a footnote mark kerned onto the year ("2022( a)"). On main neither
showed segments.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from plugins.finance.segments import ACROSS
from plugins.finance.store import connect
from tests.plugins.finance.conftest import financebench_db, segments_and_revenue

DOCS = ["VERIZON_2022_10K", "PEPSICO_2022_10K"]


@pytest.fixture(scope="module")
def reconciled_db(tmp_path_factory, finance_cache) -> Path:
    """Verizon's and PepsiCo's 2022 10-Ks from ../shared/data/financebench, ingested once."""
    return financebench_db(tmp_path_factory, finance_cache, DOCS, "reconciled")


@pytest.fixture
def con(reconciled_db):
    connection = connect(reconciled_db, read_only=True)
    yield connection
    connection.close()




def _page(con, fact_id: str) -> int:
    return con.execute("SELECT page FROM facts WHERE fact_id = ?", [fact_id]).fetchone()[0]


def test_verizon_segment_table_is_dated_by_its_corner_year_and_keeps_its_column_names(con):
    # p.101: "2022 Consumer Business" with "Total / Reportable / Segments" stacked over the third column
    rows = con.execute("SELECT column_label, fiscal_year, value FROM facts WHERE doc_name = 'VERIZON_2022_10K' AND page = 101 "
                       "AND label = 'Total Operating Revenues(2)' ORDER BY line_no, column_index").fetchall()
    assert rows == [("Consumer", 2022, 103_506e6), ("Business", 2022, 31_072e6), ("Total Reportable Segments", 2022, 134_578e6),
                    ("Consumer", 2021, 95_300e6), ("Business", 2021, 31_042e6), ("Total Reportable Segments", 2021, 126_342e6)]


def test_verizon_segments_reconcile_through_total_reportable_segments(con):
    # p.101, 2022 table, "Total Operating Revenues": Consumer 103,506, Business 31,072, Total Reportable Segments
    # 134,578; p.102 reconciliation: Total reportable segments 134,578, Corporate and other 2,510, Eliminations (253),
    # Consolidated Operating Revenues 136,835 = the income statement's operating revenues of 2022
    segments, revenue = segments_and_revenue(con, "VERIZON_2022_10K")
    assert segments is not None and sorted(segments.years) == [2020, 2021, 2022]
    assert [shown for _, shown in segments.labels] == ["Consumer", "Business", "Corporate and other", "Eliminations"]
    fy22 = segments.years[2022]
    assert (fy22.revenue.page, fy22.revenue.column_index) == (101, ACROSS)
    assert [(r.label, r.value) for r in fy22.revenue.rows] == [
        ("Consumer", 103_506e6), ("Business", 31_072e6), ("Corporate and other", 2_510e6), ("Eliminations", -253e6)]
    assert [_page(con, r.fact_id) for r in fy22.revenue.rows] == [101, 101, 102, 102]
    assert sum(r.value for r in fy22.revenue.rows) == pytest.approx(revenue[2022]) == 136_835e6
    segment_total, reconciliation = fy22.reportable
    assert (segment_total.label, segment_total.value, _page(con, segment_total.fact_id)) == (
        "Total Reportable Segments", 134_578e6, 101)
    assert (reconciliation.label, reconciliation.value, _page(con, reconciliation.fact_id)) == (
        "Total reportable segments", 134_578e6, 102)
    # FY2020's segment table is on p.102 (the note continues), with the same reconciliation
    assert [r.value / 1e6 for r in segments.years[2020].revenue.rows] == [88_533, 30_962, 9_334, -537]
    assert segments.measure == "operating income"
    assert {r.label: r.value for r in fy22.profit[1].rows} == {"Consumer": 28_846e6, "Business": 2_631e6}


def test_pepsico_divisions_with_operating_profit_beside_them(con):
    # p.70 "Net Revenue and Operating Profit/(Loss)": FLNA 23,291, QFNA 3,160, PBNA 26,213, LatAm 9,779, Europe 12,724,
    # AMESA 6,438, APAC 4,787, Total division 86,392 = net revenue of 2022 (p.62); operating profit FLNA 6,135,
    # Europe (1,380), total 11,512 = operating profit of 2022
    segments, revenue = segments_and_revenue(con, "PEPSICO_2022_10K")
    assert segments is not None and sorted(segments.years) == [2020, 2021, 2022]
    fy22 = segments.years[2022]
    assert fy22.revenue.page == 70 and fy22.reportable is None
    values = {r.label: r.value / 1e6 for r in fy22.revenue.rows}
    assert [values[k] for k in ("FLNA", "QFNA", "PBNA (b)", "LatAm", "Europe (b)", "AMESA (c)", "APAC (c)")] == [
        23_291, 3_160, 26_213, 9_779, 12_724, 6_438, 4_787]
    assert sum(r.value for r in fy22.revenue.rows) == pytest.approx(revenue[2022]) == 86_392e6
    assert segments.measure == "operating income"
    profit = {r.label: r.value / 1e6 for r in fy22.profit[1].rows}
    assert profit["FLNA"] == 6_135 and profit["Europe (b)"] == -1_380
    assert fy22.profit[1].total.value == 11_512e6
    assert {r.label: r.value / 1e6 for r in segments.years[2021].revenue.rows}["PBNA (b)"] == 25_276


def test_a_reconciliation_that_does_not_add_up_gives_no_segments(reconciled_db, tmp_path):
    # the same filing with Verizon's 2022 "Eliminations" changed from (253) to (353): Consumer + Business still add up
    # to Total Reportable Segments, but the reconciliation no longer reaches revenue, so 2022 has no breakdown
    copy = tmp_path / "changed.duckdb"
    shutil.copy(reconciled_db, copy)
    changed = connect(copy)
    changed.execute("UPDATE facts SET value = -353e6 WHERE doc_name = 'VERIZON_2022_10K' AND page = 102 "
                    "AND label = 'Eliminations' AND fiscal_year = 2022")
    segments, _ = segments_and_revenue(changed, "VERIZON_2022_10K")
    changed.close()
    assert segments is not None and sorted(segments.years) == [2020, 2021]
