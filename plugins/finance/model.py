"""Modelling in DuckDB: standard statements by period, derived metrics, and a small DCF.

Views (created by ``create_views``; values in USD, per-share in USD/share)::

    concept_values     one row per mapped fact: doc_name, statement, concept, period_label,
                       fiscal_year, period_end, months, value (the normalised value: each concept
                       in its polarity, costs and payments positive), printed_value (as printed,
                       scaled), sign (printed_value * sign = value), unit, page, fact_id
                       (main statements only: other tables' values carry no concept)
    table_values       one row per value of any other table (segment, geography, note,
                       reconciliation, non_gaap, per_share, mdna, other; see tables.py):
                       doc_name, page, table_class, title (its caption), label, column_label,
                       period_label, fiscal_year, months, value, unit, raw_value, fact_id
    income_statement   per document and period: revenue, cost_of_revenue, gross_profit,
                       operating_income, net_income, eps_diluted
    balance_sheet      per document and date: the balance-sheet concepts
    cash_flow          per document and period: operating, investing, financing cash flows,
                       capital expenditure (positive, a payment), free cash flow = OCF - capex
    metrics            per document and fiscal year (12-month periods joined to the balance sheet
                       at the same period end): gross, operating and net margin; revenue growth
                       over the prior year; ROE and ROA on year-end equity and assets; leverage
                       (liabilities / equity); current ratio; free cash flow and its margin

Formulas are the textbook ones (e.g. CFA Institute, "Financial Reporting and Analysis"); each
metric is a recorded derivation from stored values, so a report can cite its inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

_BALANCE = ["total_assets", "total_current_assets", "cash_and_equivalents", "inventory", "ppe_net", "accounts_payable",
            "total_current_liabilities", "total_liabilities", "temporary_equity", "total_equity", "total_liabilities_and_equity"]
_INCOME = ["revenue", "cost_of_revenue", "gross_profit", "operating_income", "net_income", "eps_diluted"]
_CASH = ["operating_cash_flow", "investing_cash_flow", "financing_cash_flow", "capital_expenditure", "depreciation_amortization",
         "net_change_in_cash", "cash_beginning_of_period", "cash_end_of_period"]


def _pivot(name: str, statement: str, concepts: list[str]) -> str:
    columns = ",\n    ".join(f"max(value) FILTER (WHERE concept = '{c}') AS {c}" for c in concepts)
    pages = "min(page) AS page"
    return (f"CREATE OR REPLACE VIEW {name} AS SELECT doc_name, period_label, fiscal_year, period_end, months,\n    {columns},\n"
            f"    {pages} FROM concept_values WHERE statement = '{statement}' GROUP BY ALL")


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """Create (or replace) the modelling views on a read-write connection to the filings database."""
    con.execute("""CREATE OR REPLACE VIEW concept_values AS
        SELECT doc_name, statement, concept, period_label, fiscal_year, period_end, months, normalised_value AS value,
               value AS printed_value, sign, unit, page, fact_id
        FROM facts WHERE concept IS NOT NULL""")
    con.execute("""CREATE OR REPLACE VIEW table_values AS
        SELECT doc_name, page, substr(statement, 7) AS table_class, title, label, column_label, period_label, fiscal_year,
               months, value, unit, raw_value, fact_id
        FROM facts WHERE statement LIKE 'table:%'""")
    con.execute(_pivot("income_statement", "income_statement", _INCOME))
    con.execute(_pivot("balance_sheet", "balance_sheet", _BALANCE))
    con.execute(_pivot("cash_flow_raw", "cash_flow", _CASH))
    con.execute("""CREATE OR REPLACE VIEW cash_flow AS
        SELECT *, operating_cash_flow - coalesce(capital_expenditure, 0) AS free_cash_flow FROM cash_flow_raw""")
    con.execute("""CREATE OR REPLACE VIEW metrics AS
        WITH annual AS (
            SELECT i.doc_name, i.fiscal_year, i.period_end, i.revenue, i.cost_of_revenue,
                   coalesce(i.gross_profit, i.revenue - i.cost_of_revenue) AS gross_profit,
                   i.operating_income, i.net_income, c.operating_cash_flow, c.capital_expenditure, c.free_cash_flow,
                   b.total_assets, b.total_current_assets, b.total_current_liabilities, b.total_equity,
                   coalesce(b.total_liabilities, b.total_liabilities_and_equity - b.total_equity - coalesce(b.temporary_equity, 0))
                       AS total_liabilities
            FROM income_statement i
            LEFT JOIN cash_flow c ON c.doc_name = i.doc_name AND c.period_label = i.period_label
            LEFT JOIN balance_sheet b ON b.doc_name = i.doc_name AND b.months IS NULL
                 AND (b.period_end = i.period_end OR (i.period_end IS NULL AND b.fiscal_year = i.fiscal_year))
            WHERE i.months = 12)
        SELECT doc_name, fiscal_year, period_end, revenue, net_income, free_cash_flow,
               gross_profit / revenue AS gross_margin,
               operating_income / revenue AS operating_margin,
               net_income / revenue AS net_margin,
               revenue / lag(revenue) OVER (PARTITION BY doc_name ORDER BY fiscal_year) - 1 AS revenue_growth,
               net_income / total_equity AS roe,
               net_income / total_assets AS roa,
               total_liabilities / total_equity AS leverage,
               total_current_assets / total_current_liabilities AS current_ratio,
               free_cash_flow / revenue AS fcf_margin
        FROM annual""")


@dataclass
class DCFAssumptions:
    """The stated assumptions of ``discounted_cash_flow``.

    Attributes:
        growth: yearly growth of free cash flow over the explicit years (0.05 = 5%).
        discount_rate: the rate cash flows are discounted at (a WACC), per year.
        terminal_growth: perpetual growth after the explicit years; must be below ``discount_rate``.
        years: explicit forecast years.
    """

    growth: float = 0.05
    discount_rate: float = 0.09
    terminal_growth: float = 0.02
    years: int = 5


@dataclass
class DCFResult:
    """A DCF valuation and what it came from.

    Attributes:
        doc_name, fiscal_year: the base year's filing and year.
        base_fcf: the base year's free cash flow (USD) = operating cash flow - capital expenditure
            (normalised values: capital expenditure is a positive payment).
        base_formula: ``base_fcf`` as a formula over the two facts' printed values
            (``{ocf} + {capex}`` when the payment was printed in parentheses).
        projected: free cash flow of each explicit year (USD).
        present_values: each year's discounted value (USD).
        terminal_value: Gordon-growth value at the end of the explicit years (USD, undiscounted).
        enterprise_value: sum of the discounted explicit years and the discounted terminal value (USD).
        assumptions: the inputs used.
        fact_ids: the stored facts the base FCF came from.
    """

    doc_name: str
    fiscal_year: int
    base_fcf: float
    projected: list[float]
    present_values: list[float]
    terminal_value: float
    enterprise_value: float
    assumptions: DCFAssumptions
    fact_ids: list[str] = field(default_factory=list)
    base_formula: str = ""


def discounted_cash_flow(con: duckdb.DuckDBPyConnection, doc_name: str, assumptions: DCFAssumptions | None = None) -> DCFResult:
    """Value a company from its latest fiscal year's free cash flow.

    FCF_t = FCF_0 (1 + g)^t for t = 1..N; EV = sum FCF_t / (1 + r)^t + TV / (1 + r)^N with the
    Gordon growth terminal value TV = FCF_N (1 + g_T) / (r - g_T).

    Raises:
        ValueError: the terminal growth is not below the discount rate, or the document has no
            fiscal year with both operating cash flow and capital expenditure.
    """
    a = assumptions or DCFAssumptions()
    if a.terminal_growth >= a.discount_rate:
        raise ValueError(f"terminal growth {a.terminal_growth} must be below the discount rate {a.discount_rate}")
    row = con.execute(
        """SELECT o.fiscal_year, o.value, c.value, o.fact_id, c.fact_id, o.sign, c.sign FROM concept_values o
           JOIN concept_values c ON c.doc_name = o.doc_name AND c.period_label = o.period_label
           WHERE o.doc_name = ? AND o.concept = 'operating_cash_flow' AND c.concept = 'capital_expenditure' AND o.months = 12
           ORDER BY o.fiscal_year DESC LIMIT 1""", [doc_name]).fetchone()
    if row is None:
        raise ValueError(f"{doc_name}: no fiscal year with both operating cash flow and capital expenditure was extracted")
    year, ocf, capex, ocf_id, capex_id, ocf_sign, capex_sign = row
    base = ocf - capex
    formula = ("-" if ocf_sign < 0 else "") + f"{{{ocf_id}}}" + (" + " if capex_sign < 0 else " - ") + f"{{{capex_id}}}"
    projected = [base * (1 + a.growth) ** t for t in range(1, a.years + 1)]
    present = [v / (1 + a.discount_rate) ** t for t, v in enumerate(projected, 1)]
    terminal = projected[-1] * (1 + a.terminal_growth) / (a.discount_rate - a.terminal_growth)
    ev = sum(present) + terminal / (1 + a.discount_rate) ** a.years
    return DCFResult(doc_name, year, base, projected, present, terminal, ev, a, [ocf_id, capex_id], formula)
