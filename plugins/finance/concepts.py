"""Recognising the main statements and mapping their line items to standard concepts.

Statement titles follow the names US GAAP filers use (ASC 210 balance sheet, ASC 220 income
statement, ASC 230 statement of cash flows). Concept names loosely follow the US-GAAP XBRL
taxonomy's common elements (``Revenues``, ``NetIncomeLoss``, ``Assets`` ...) in snake case.
Line items are mapped by meaning: a label is reduced to its core (``canonical``: no totals, "net",
notes, footnote marks, direction or profit-or-loss wording, attribution split off) and looked up
in a dictionary of the US-GAAP taxonomy's standard labels and the variants filers print
(``concept_labels.toml``). The statement's structure is the other evidence: a concept is only
sought on its own statement, a "Total ..." line beats a component (``concept_priority``), the
attribution lines of profit and equity (to the parent, to non-controlling interests) are kept
apart, and each concept's polarity gives the sign of its normalised value (``polarity_sign``).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

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

#: The dictionary: concept -> element, standard label, statement, balance, signed, variants
#: (``concept_labels.toml`` beside this module; see its header for the sign convention).
LABELS: dict[str, dict] = tomllib.loads((Path(__file__).with_name("concept_labels.toml")).read_text(encoding="utf-8"))
#: Every concept, in the dictionary's order.
CONCEPTS = list(LABELS)
#: The concepts a complete set of primary statements carries, counted as "concepts mapped" by
#: ``bench/finance_concepts.py`` and ``bench/finance_accuracy.py``: all but the attribution
#: splits (``net_income_including_nci``, ``net_income_nci``, ``equity_parent``, ``equity_nci``)
#: and the lines many filers have no use for (``temporary_equity``, ``fx_effect_on_cash``).
KEY_CONCEPTS = [c for c in CONCEPTS if c not in {"net_income_including_nci", "net_income_nci", "equity_parent", "equity_nci",
                                                  "temporary_equity", "fx_effect_on_cash"}]


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


@dataclass(frozen=True)
class Canonical:
    """A label reduced to what it means, with what the reduction removed.

    Attributes:
        text: the label without totals, "net", notes, footnotes, direction and profit-or-loss
            wording ("Net cash (used in) provided by operating activities" -> "cash from
            operating activities").
        is_total: the label started with "Total".
        sense: ``"negative"`` when the label names only the negative side ("Net loss", "Loss
            from operations", "Net cash used in ...", "Decrease in ..."), ``"both"`` when it names
            both ("income (loss)", "provided by (used in)"), else ``""``.
        attribution: ``"parent"`` ("attributable to <company>", "Total <company> shareholders'
            equity"), ``"nci"`` (to non-controlling interests), ``"including"`` ("including
            non-controlling interests") or ``""``.
    """

    text: str
    is_total: bool = False
    sense: str = ""
    attribution: str = ""


_BOTH_DIRECTIONS = re.compile(
    r"\b(?:provided|generated)(?: by| from| in)? \((?:used|used in|used for|used by)\)(?: by| in| for)?"
    r"|\((?:used|used in|used for|used by)\) (?:provided by|provided|from)(?: by)?"
    r"|\b(?:provided by|from) \((?:used in|used for|used by)\)|\bused in provided by\b|\bprovided by used in\b")
_USED = re.compile(r"\b(?:used in|used for|used by)\b")
_PROVIDED = re.compile(r"\b(?:provided by|generated by|generated from|generated in|provided from)\b")


def canonical(label: str) -> Canonical:
    """Reduce a printed label to its meaning (see ``Canonical``); the dictionary's variants go through the same.

    Args:
        label: a line item's label as printed ("Inventories, net (Note 6)").

    Returns:
        The reduced label: "Inventories, net (Note 6)" -> ``Canonical("inventories")``; "Net loss"
        -> ``Canonical("income", sense="negative")``; "Net income attributable to Amcor plc" ->
        ``Canonical("income", attribution="parent")``.
    """
    t = normalise_label(label).replace("\ufffe", "").replace("\u00ad", "")
    t = re.sub(r"\bnon\s*-?\s*controlling\b", "noncontrolling", t)
    t = re.sub(r"\((?:see )?notes? [^)]*\)|\(unaudited\)|\([a-z]\)|\(\d+\)", " ", t)  # notes, footnote letters
    t = t.replace("&", " and ").replace("/", " ").replace(" - ", " ")
    t = re.sub(r"\b(?:stockholders|shareholders|shareowners|share owners)'?", "shareholders", t).replace("'", "")
    t = re.sub(r"\((?:deficit|deficiency)\)", " ", t)
    t = re.sub(r"^(?:less|add|plus|deduct)\b:?\s*", "", t)
    t = re.sub(r"\s+", " ", t).strip(" ,:.")
    attribution = ""
    if re.search(r"\bincluding\b.*\bnoncontrolling\b", t):
        attribution, t = "including", re.sub(r",? including\b.*$", "", t)
    elif "per share" not in t and (m := re.search(r",? (?:attributable|applicable|available|allocable) to (.+)$", t)):
        attribution = "nci" if re.search(r"noncontrolling|minority|redeemable", m[1]) else "parent"
        t = t[:m.start()]
    sense = ""
    if _BOTH_DIRECTIONS.search(t):
        t, sense = _BOTH_DIRECTIONS.sub("from", t), "both"
    elif _USED.search(t) and not _PROVIDED.search(t):
        t, sense = _USED.sub("from", t), "negative"
    t = _PROVIDED.sub("from", t).replace("cash flows from", "cash from").replace("cash flow from", "cash from")
    if re.search(r"\b(?:income|earnings|profit) \((?:loss|losses)\)|\((?:loss|losses)\) (?:income|earnings|profit)", t):
        t, sense = re.sub(r"\b(income|earnings|profit) \((?:loss|losses)\)|\((?:loss|losses)\) (income|earnings|profit)", r"\1\2", t), "both"
    elif re.search(r"\bloss\b", t) and not re.search(r"\b(?:income|earnings|profit)\b", t):
        t, sense = re.sub(r"\bloss\b", "income", t), "negative"
    t = re.sub(r"\b(?:earnings|profit)\b", "income", t)
    if re.search(r"\(decrease\) increase|increase \(decrease\)|decrease \(increase\)|\(increase\) decrease", t):
        t, sense = re.sub(r"\(?(?:increase|decrease)\)? \(?(?:increase|decrease)\)?", "change", t), "both"
    elif re.search(r"\bdecrease\b", t) and "increase" not in t:
        t, sense = t.replace("decrease", "change"), "negative"
    t = t.replace("increase", "change")
    t = re.sub(r"\s*\b(?:at |as of )?(?:the )?end of (?:the )?(?:fiscal )?(?:period|year|quarter)\b", " end of period", t)
    t = re.sub(r"\s*\b(?:at |as of )?(?:the )?beginning of (?:the )?(?:fiscal )?(?:period|year|quarter)\b", " beginning of period", t)
    t = re.sub(r"\s*,?\s*\bnet of\b.*$|,? net$", "", t)
    t = re.sub(r"\((basic|diluted)\)", r"\1", t)  # "Net earnings per share (Diluted)" keeps its meaning
    t = re.sub(r"\s*\([^()]*\)$", "", t)  # "(PP&E)", "(in dollars per share)"
    is_total = bool(re.match(r"total\b", t))
    t = re.sub(r"^(?:total )?(?:consolidated )?(?:net )?", "", t)
    t = re.sub(r"[,;]", " ", t)
    t = re.sub(r"\s+", " ", t).strip(" .:")
    if attribution == "" and (m := re.fullmatch(r"(.+) shareholders equity", t)) and not re.search(r"liabilit|\band\b", m[1]):  # "Total 3M Company shareholders' equity"
        t, attribution = "shareholders equity", "parent"
    return Canonical(t, is_total, sense, attribution)


def _variant_index() -> tuple[dict[tuple[str, str, str], str], list[tuple[str, re.Pattern[str], str, str]]]:
    """Exact variants keyed by (statement, text, attribution) and "..." variants as patterns, in dictionary order."""
    exact: dict[tuple[str, str, str], str] = {}
    wild: list[tuple[str, re.Pattern[str], str, str]] = []
    for concept, info in LABELS.items():
        for variant in [info["standard_label"], *info["variants"]]:
            if "..." in variant:
                parts = [canonical(p).text if p.strip() else "" for p in variant.split("...")]
                wild.append((info["statement"], re.compile("^" + ".*".join(map(re.escape, parts)) + "$"), "", concept))
                continue
            c = canonical(variant)
            exact.setdefault((info["statement"], c.text, c.attribution), concept)
    return exact, wild


_EXACT, _WILD = _variant_index()


def match_label(label: str, statement: str) -> tuple[str, Canonical] | None:
    """Map a line item's label to a concept of ``statement`` by meaning.

    The label is reduced with ``canonical`` and looked up among the dictionary's standard labels
    and variants (reduced the same way) for that statement, exact forms first, then the
    variants ending in "..." in dictionary order.

    Args:
        label: the label as printed ("Payments to acquire property, plant and equipment").
        statement: one of ``STATEMENTS``.

    Returns:
        ``(concept, canonical form)`` or None when nothing in the dictionary matches.
    """
    c = canonical(label)
    if not c.text:
        return None
    concept = _EXACT.get((statement, c.text, c.attribution))
    if concept is None and c.attribution == "":
        concept = next((k for st, rx, _, k in _WILD if st == statement and rx.match(c.text)
                        and not any(x in c.text for x in LABELS[k].get("exclude", ()))), None)
    return (concept, c) if concept else None


def map_concept(label: str, statement: str) -> str | None:
    """The concept ``match_label`` gives a label on ``statement``, or None."""
    found = match_label(label, statement)
    return found[0] if found else None


def concept_priority(label: str, concept: str) -> int:
    """A rank among lines mapped to the same concept: lower is preferred.

    A "Total ..." line beats a component (``Total net revenues`` over ``Net revenues``), and
    any line beats one limited to continuing operations (Pfizer prints both); for
    property and equipment the line that says "net" beats the gross one; "Total equity"
    (including non-controlling interests, the side of the balance-sheet identity) beats
    "Total stockholders' equity".
    """
    text = normalise_label(label)
    if concept == "total_equity":
        return 0 if re.fullmatch(r"total equity(?: \(deficit\))?", text) else 1 if text.startswith("total") else 2
    if concept == "ppe_net":
        return 0 if re.search(r"\bnet\b", text) else 1
    if "continuing operations" in text:  # the total including discontinued operations is the statement's line
        return 2
    return 0 if text.startswith("total") else 1


def polarity_sign(concept: str, form: Canonical, amounts: list[float]) -> int:
    """The sign that turns a line's printed amounts into the concept's normalised sign (+1 or -1).

    A magnitude concept (``signed = false``: revenues, costs, assets, payments) printed mostly
    negative ("Cost of sales (11,724)", "Purchases of property (1,577)") is flipped, so a cost is
    positive whichever way the filer prints it. A signed concept (profit or loss, cash flows)
    keeps the printed sign, except under a label that names only the negative side ("Net loss",
    "Net cash used in investing activities", "Decrease in cash") printed without parentheses,
    which is flipped: "Net loss 660" is a loss of 660.

    Args:
        concept: a key of ``LABELS``.
        form: the label's ``canonical`` form.
        amounts: the line's printed amounts (sign from parentheses), every column.
    """
    nonzero = [a for a in amounts if a]
    if not nonzero:
        return 1
    if not LABELS[concept]["signed"]:
        return -1 if sum(a < 0 for a in nonzero) > len(nonzero) / 2 else 1
    return -1 if form.sense == "negative" and all(a > 0 for a in nonzero) else 1
