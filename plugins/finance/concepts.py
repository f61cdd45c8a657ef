"""Recognising the main statements and mapping their line items to standard concepts.

Statement titles follow the names US GAAP filers use (ASC 210 balance sheet, ASC 220 income
statement, ASC 230 statement of cash flows). Concept names loosely follow the US-GAAP XBRL
taxonomy's common elements (``Revenues``, ``NetIncomeLoss``, ``Assets`` ...) in snake case.
A label maps to at most one concept; when several lines of one statement map to the same
concept, the rule listed first wins (``Total net revenues`` before ``Net revenues``).
"""

from __future__ import annotations

import re

BALANCE, INCOME, CASH_FLOW = "balance_sheet", "income_statement", "cash_flow"
STATEMENTS = (BALANCE, INCOME, CASH_FLOW)

#: Title patterns, matched against a page's first lines with all whitespace removed and
#: lower-cased ("Consolidated Balance Shee t" still matches).
TITLES = {
    BALANCE: re.compile(r"balancesheets?|statements?of(consolidated)?financial(position|condition)"),
    INCOME: re.compile(r"statements?of(consolidated)?(operations|income|earnings)(?!andcomprehensive)|incomestatements?"),
    CASH_FLOW: re.compile(r"statements?of(consolidated)?cashflows?|cashflowsstatements?"),
}
#: A line every complete statement of that kind has (whitespace removed, lower case).
KEY_LINES = {
    BALANCE: re.compile(r"totalassets"),
    INCOME: re.compile(r"net(income|earnings|loss|\(loss\)income|income\(loss\))"),
    CASH_FLOW: re.compile(r"operatingactivities|(provided|used)(\(used\))?byoperations|fromoperations"),
}

# (concept, statements it may appear in, label pattern) in priority order.
_RULES: list[tuple[str, tuple[str, ...], str]] = [
    ("revenue", (INCOME,), r"^(total (net )?revenues?|total net sales|net revenues?|revenues?|net sales|total revenues? and other income|revenue)$"),
    ("cost_of_revenue", (INCOME,), r"^(total cost of (revenues?|sales)|merchandise costs|cost of (revenues?|sales|goods sold)|cost of sales.*|cost of revenues?.*)$"),
    ("gross_profit", (INCOME,), r"^(gross (profit|margin))$"),
    ("operating_income", (INCOME,), r"^(operating (income|profit)( \(loss\))?|income( \(loss\))? from operations|operating income \(loss\))$"),
    ("net_income", (INCOME,), r"^(net (income|earnings)( \(loss\))?|net (loss|\(loss\)) income|net (income|earnings) attributable to (?!non-?controlling|redeemable)[\w. ,&']+)$"),
    ("eps_diluted", (INCOME,), r"^(diluted( earnings per share| net income per share| net income \(loss\) per share)?.*|diluted \(in dollars per share\)|.*per (common )?share.* - diluted|.*per (common )?share.*, diluted)$"),
    ("total_assets", (BALANCE,), r"^total assets$"),
    ("total_current_assets", (BALANCE,), r"^total current assets$"),
    ("cash_and_equivalents", (BALANCE,), r"^(cash and (cash )?equivalents|cash and cash equivalents.*)$"),
    ("inventory", (BALANCE,), r"^(total inventories|inventories|merchandise inventories|inventory|merchandise inventories.*)$"),
    ("accounts_payable", (BALANCE,), r"^(accounts payable|accounts payable.*)$"),
    ("ppe_net", (BALANCE,), r"^(property,? (plant )?and equipment.*net|property and equipment, net.*|net property and equipment|property, equipment and software, net|land, buildings and equipment, net|property,? plant,? and equipment, net)$"),
    ("total_current_liabilities", (BALANCE,), r"^total current liabilities$"),
    ("total_liabilities", (BALANCE,), r"^total liabilities$"),
    ("temporary_equity", (BALANCE,), r"^(redeemable interest|redeemable non-?controlling interests?|redeemable preferred stock|temporary equity)$"),
    ("total_liabilities_and_equity", (BALANCE,), r"^total liabilities(,)? (and|&) .*equity( \(deficit\))?$"),
    ("total_equity", (BALANCE,), r"^(total (stockholders|shareholders|shareowners)['’]? equity|total equity|total [\w. &]+ (stockholders|shareholders)['’]? equity)$"),
    ("operating_cash_flow", (CASH_FLOW,), r"^(cash provided \(used\) by operations|net cash from operations|total cash (provided by|used in|provided by \(used in\)) operating activities|net cash (provided by|from|used by|provided by \(used in\)|\(used in\) provided by|provided by operating activities|used in) operating activities|cash (provided by|from) operations|net cash provided by (\(used in\) )?operating activities|net cash provided by operating activities|net cash from operating activities|cash provided by operating activities|net cash provided by \(used in\) operating activities)$"),
    ("capital_expenditure", (CASH_FLOW,), r"^(purchases? of property(,)? (plant )?and equipment.*|capital expenditures.*|additions to property(,)? (plant )?and equipment.*|payments for acquisition of property, plant and equipment|purchases? of property and equipment.*|purchases of land, buildings,? and equipment|payments for property and equipment)$"),
    ("investing_cash_flow", (CASH_FLOW,), r"^(net |total )?cash (provided by |from |used in |\(used in\) |provided by \(used in\) |used for |used by |\(used in\) provided by |provided \(used\) by |\(used\) provided by )*investing( activities)?$"),
    ("financing_cash_flow", (CASH_FLOW,), r"^(net |total )?cash (provided by |from |used in |\(used in\) |provided by \(used in\) |used for |used by |\(used in\) provided by |provided \(used\) by |\(used\) provided by )*financing( activities)?$"),
    ("net_change_in_cash", (CASH_FLOW,), r"^(net (increase|decrease|change|\(decrease\) increase|increase \(decrease\)|decrease \(increase\))( \(decrease\)| \(increase\))? in cash.*)$"),
    ("fx_effect_on_cash", (CASH_FLOW,), r"^(effect of .*exchange rate.* on cash.*|foreign currency effect on cash.*|effect of exchange rate.*)$"),
    ("depreciation_amortization", (CASH_FLOW,), r"^(depreciation and amortization.*|depreciation, amortization and other|depreciation)$"),
    ("cash_end_of_period", (CASH_FLOW,), r"^(cash(,)? (and )?cash equivalents.* (at|,)? ?end of (period|year)|cash and equivalents.* end of (period|year)).*$"),
    ("cash_beginning_of_period", (CASH_FLOW,), r"^(cash(,)? (and )?cash equivalents.* (at|,)? ?beginning of (period|year)|cash and equivalents.* beginning of (period|year)).*$"),
]
_COMPILED = [(concept, kinds, re.compile(pattern)) for concept, kinds, pattern in _RULES]
#: Priority of each concept's rules, for choosing among several matching lines.
CONCEPTS = [c for c, _, _ in _RULES]


def squeeze(text: str) -> str:
    """Lower-case ``text`` with all whitespace removed (for title matching)."""
    return re.sub(r"\s+", "", text).lower()


def normalise_label(label: str) -> str:
    """Lower-case a label, unify quotes and dashes, drop ``$``, footnote marks and trailing colons."""
    text = label.lower().replace("’", "'").replace("—", "-").replace("–", "-").replace("$", " ")
    text = re.sub(r"\(\d\)|\*", " ", text)
    text = re.sub(r"\s*-\s*", " - ", text).replace(" - net", ", net")
    text = re.sub(r"\s+", " ", text).strip(" :.")
    return text


def statement_kind(page_text: str, head_lines: int = 14) -> str | None:
    """Which main statement a page's title names, if any.

    Args:
        page_text: the page's text; only its first ``head_lines`` non-empty lines are read,
            so a statement title quoted in running text does not count.

    Returns:
        ``"balance_sheet"``, ``"income_statement"``, ``"cash_flow"`` or None.
    """
    lines = [ln for ln in page_text.splitlines() if ln.strip()][:head_lines]
    head = squeeze(" ".join(lines))
    if "comprehensiveincome" in head and not re.search(r"of(consolidated)?(operations|earnings)", head) and "balancesheet" not in head:
        return None  # the statement of comprehensive income is not the income statement
    found = [(m.start(), kind) for kind, rx in TITLES.items() if (m := rx.search(head))]
    return min(found)[1] if found else None


def map_concept(label: str, statement: str) -> str | None:
    """Map a line item's label to a standard concept.

    Args:
        label: the label as printed ("Purchases of property, plant and equipment (PP&E)").
        statement: the statement the line is on (one of ``STATEMENTS``).

    Returns:
        The concept name (see ``CONCEPTS``) or None when no rule matches.
    """
    text = normalise_label(label)
    text = re.sub(r"\s*\((pp&e|note \d+|notes? \d+(, \d+)*)\)$", "", text)
    for concept, kinds, rx in _COMPILED:
        if statement in kinds and rx.match(text):
            return concept
    return None


def concept_priority(label: str, concept: str) -> int:
    """A rank among lines mapped to the same concept: lower is preferred.

    "Total equity" (including non-controlling interests, the side of the balance-sheet identity)
    beats "Total 3M Company shareholders' equity"; any "total ..." beats a component line.
    """
    text = normalise_label(label)
    if concept == "total_equity":
        return 0 if text == "total equity" else 1
    return 0 if text.startswith("total") else 1 if "attributable" not in text else 2
