"""Locating the primary statements of a filing, with a score, a runner-up and a reason for each choice.

Only the page texts (PDFium) are read, so this runs on every page of a filing in milliseconds.

1. Candidates: pages whose title (first lines) names a statement (``concepts.statement_kind``)
   and which have at least ``MIN_VALUE_LINES`` lines ending in numbers, and either the
   statement's key line or a score of at least ``MIN_SCORE_WITHOUT_KEY_LINE`` (a balance sheet
   whose total-assets line has no label).
2. Exclusions: a candidate whose heading says it is not the consolidated statement is set aside
   with the reason (``EXCLUSIONS``): condensed consolidating statements (parent / issuer /
   guarantor / non-guarantor columns), guarantor or obligor-group summarised information,
   parent-company-only (registrant-only, Schedule I) statements, and pro-forma statements.
3. Score, in [0, 1], the sum of ``WEIGHTS``:
   ``title`` (a short heading among the first ``TITLE_LINES`` lines that says "consolidated"
   counts fully, without it 2/3, a title further down or inside a sentence 1/3),
   ``key_line`` (the statement's key line, ``concepts.KEY_LINES``, on the page; half when only
   on the next page), ``value_lines`` (lines ending in numbers, full at 20),
   ``columns`` (a header line of two to four fiscal years near the top; half for one year),
   ``totals`` (lines labelled "Total ..." whose amount equals the sum of the lines above it, up
   to the previous caption or total: full at two), ``structure`` (the statement's own markers:
   total assets = total liabilities and equity on a balance sheet; a per-share line on an
   income statement; investing and financing sections on a cash-flow statement).
   Average balance sheets (banks' statistical tables) are set aside too.
4. Choice: the primary statements are printed together (Item 8), and earlier pages with the
   same titles (selected data, MD&A tables, notes) are farther from the others. One page per
   statement kind is chosen to maximise the summed score minus ``SPAN_PENALTY`` per page
   between the first and last chosen page. The next page is added when it continues the
   statement (same title, and "continued" or no key line of its own: a balance sheet's
   liabilities page) or when the key line is missing and the next page names no other statement.
   A continuation page is not a candidate of its own.
5. Confidence: the chosen page's score, less the runner-up's lead when the best other candidate
   of that kind scores higher by up to ``AMBIGUOUS_MARGIN``, and capped at ``AMBIGUOUS_CAP``
   when it leads by more (the choice then rests on proximity against the pages' own evidence).
   ``CONFIDENT`` is the threshold below which ingestion warns.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from plugins.finance.concepts import KEY_LINES, STATEMENTS, squeeze, statement_kind
from plugins.finance.numbers import parse_number

MIN_VALUE_LINES = 8  # a statement page has at least this many lines ending in numbers
WEIGHTS = {"title": 0.15, "key_line": 0.2, "value_lines": 0.15, "columns": 0.15, "totals": 0.2, "structure": 0.15}
SPAN_PENALTY = 0.01  # per page between the first and last chosen statement
AMBIGUOUS_CAP = 0.5
AMBIGUOUS_MARGIN = 0.1
CONFIDENT = 0.6
MIN_SCORE_WITHOUT_KEY_LINE = 0.5  # a page without its key line must look like a statement otherwise

#: (pattern over the squeezed heading, reason); the first that matches excludes the page.
EXCLUSIONS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"condensedconsolidating|consolidatingstatements?of|consolidatingbalancesheet"),
     "condensed consolidating statement (parent, issuer and guarantor columns)"),
    (re.compile(r"non-?guarantor|guarantorsubsidiar|subsidiaryguarantor|obligorgroup|supplementalguarantor|guarantorinformation"),
     "guarantor or obligor-group information, not the consolidated statement"),
    (re.compile(r"parentcompanyonly|registrantonly|\(parentcompany\)|condensedfinancialinformationof(the)?(registrant|parent)|schedulei\b"),
     "parent-company-only (registrant) statement"),
    (re.compile(r"proforma"), "pro-forma statement"),
    (re.compile(r"averagebalancesheets?"), "average balance sheet (a statistical table, not the statement)"),
]
HEAD_LINES = 14
TITLE_LINES = 6

_YEAR = re.compile(r"\b(19[5-9]\d|20[0-4]\d)\b")
_AMOUNT = re.compile(r"(\(?-?\$?\s*[\d,]*\d(?:\.\d+)?\)?|—|–|-)\s*$")


@dataclass
class Candidate:
    """A page that could hold a statement.

    Attributes:
        page: 1-based.
        kind: the statement kind its title names.
        score: the sum of ``parts`` (0 when excluded).
        parts: each ``WEIGHTS`` component's contribution.
        excluded: why the page is set aside ("" when it is not).
    """

    page: int
    kind: str
    score: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)
    excluded: str = ""


@dataclass
class Location:
    """How one statement kind was located.

    Attributes:
        kind: ``balance_sheet``, ``income_statement`` or ``cash_flow``.
        pages: 1-based pages chosen (empty when none qualified).
        score: the chosen page's score.
        confidence: ``score``, lowered when the runner-up scores higher (module docstring, 5).
        runner_up: the best other candidate of this kind (None when there was none).
        excluded: candidates set aside, each with its reason.
        reason: one sentence for a person: what decided, or why nothing was chosen.
    """

    kind: str
    pages: list[int]
    score: float
    confidence: float
    runner_up: Candidate | None
    excluded: list[Candidate]
    reason: str

    @property
    def confident(self) -> bool:
        """Located with at least ``CONFIDENT`` confidence."""
        return bool(self.pages) and self.confidence >= CONFIDENT


def _head(text: str) -> str:
    return squeeze(" ".join([ln for ln in text.splitlines() if ln.strip()][:HEAD_LINES]))


def exclusion(text: str) -> str:
    """Why a page's heading says it is not the consolidated statement ("" when it does not)."""
    head = _head(text)
    return next((reason for rx, reason in EXCLUSIONS if rx.search(head)), "")


def value_line_count(text: str) -> int:
    """Lines of ``text`` that end in a number (or a dash standing for zero) and hold a digit."""
    return sum(1 for ln in text.splitlines() if re.search(r"[\d)—–-]\s*$", ln.strip()) and re.search(r"\d", ln))


def _first_amount(line: str) -> tuple[str, float | None]:
    """A text line's label and its first amount (the current-period column), dashes as 0."""
    tokens = line.replace("$", " ").split()
    label, amount = [], None
    for token in tokens:
        if token in ("—", "–", "-"):
            amount = 0.0
            break
        number = parse_number(token + ")" if token.startswith("(") and ")" not in token else token)  # "(409 )"
        if number is not None and not _YEAR.fullmatch(token.strip("(),")):
            amount = number.amount
            break
        label.append(token)
    return " ".join(label), amount


_SUBTOTAL = re.compile(r"^(total\b|net cash\b|cash (provided|used|generated)\b)")


def totals_that_add_up(text: str) -> int:
    """How many total lines equal the sum of the lines just above them.

    A total line is labelled "Total ..." (or "Net cash ..." on a cash-flow statement); it adds
    up when the amounts of the last two or more lines since the previous total (captions
    skipped, the previous total itself included, as subtotals feed the next block) sum to it,
    within 2 printed units or 0.1% for rounding.
    """
    run: list[float] = []
    count = 0
    for line in text.splitlines():
        label, amount = _first_amount(line.strip())
        if amount is None:
            continue
        if _SUBTOTAL.match(label.lower()) and len(run) >= 2:
            allowed = max(2.0, 0.001 * abs(amount))
            if any(abs(sum(run[-k:]) - amount) <= allowed for k in range(2, len(run) + 1)):
                count += 1
            run = [amount]
            continue
        run.append(amount)
    return count


def _structure(kind: str, text: str) -> float:
    """1 when the page shows the statement's own structure (see the module docstring), else 0."""
    flat = squeeze(text)
    if kind == "balance_sheet":
        sides: dict[str, float] = {}
        for line in text.splitlines():
            label, amount = _first_amount(line.strip())
            key = squeeze(label)
            if amount is None:
                continue
            if key == "totalassets":
                sides.setdefault("assets", amount)
            elif re.fullmatch(r"totalliabilities,?(and|&).*equity.*", key):
                sides.setdefault("claims", amount)
        if len(sides) < 2:
            return 0.0
        return 1.0 if abs(sides["assets"] - sides["claims"]) <= max(2.0, 0.001 * abs(sides["assets"])) else 0.0
    if kind == "income_statement":
        return 1.0 if re.search(r"pershare|pershare\)|persharedata", flat) and re.search(r"diluted", flat) else 0.0
    return 1.0 if "investing" in flat and "financing" in flat else 0.0


def _columns(text: str) -> float:
    """1 for a line near the top holding two to four distinct years, 0.5 for one year, else 0."""
    best = 0.0
    for line in [ln for ln in text.splitlines() if ln.strip()][:HEAD_LINES + 6]:
        stripped = line.strip()
        years = _YEAR.findall(stripped)
        if not years or len(re.sub(r"[\s,]|" + _YEAR.pattern, "", stripped)) > 40:
            continue  # a sentence that mentions a year is not a header
        best = max(best, 1.0 if 2 <= len(set(years)) <= 4 else 0.5)
    return best


def _title(kind: str, text: str) -> float:
    """1 for a heading naming the statement near the top (a short line among the first
    ``TITLE_LINES``) that says "consolidated", 2/3 without it, 1/3 for a title further down or
    inside a sentence ("Certain Consolidated Statements of Earnings amounts are as follows")."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()][:HEAD_LINES]
    for i, line in enumerate(lines):
        if statement_kind(line, 1) == kind:
            if i < TITLE_LINES and len(line) <= 80:
                return 1.0 if "consolidated" in squeeze(line) else 2 / 3
            return 1 / 3
    return 1 / 3  # named across lines (a title broken by the PDF's text order)


def score_page(kind: str, text: str, next_text: str) -> Candidate:
    """Score one candidate page for statement ``kind`` (see the module docstring for the parts)."""
    parts = {
        "title": WEIGHTS["title"] * _title(kind, text),
        "key_line": WEIGHTS["key_line"] * (1.0 if KEY_LINES[kind].search(squeeze(text)) else
                                           0.5 if statement_kind(next_text) in (None, kind) and KEY_LINES[kind].search(squeeze(next_text)) else 0.0),
        "value_lines": WEIGHTS["value_lines"] * min(1.0, value_line_count(text) / 20),
        "columns": WEIGHTS["columns"] * _columns(text),
        "totals": WEIGHTS["totals"] * min(1.0, totals_that_add_up(text) / 2),
        "structure": WEIGHTS["structure"] * _structure(kind, text),
    }
    return Candidate(0, kind, round(sum(parts.values()), 3), {k: round(v, 3) for k, v in parts.items()})


def is_continuation(texts: list[str], index: int, kind: str) -> bool:
    """Page ``index`` (0-based) continues statement ``kind`` from the page before: both carry a
    heading naming ``kind`` near the top, and this one says "continued" or lacks the key line (a
    balance sheet's liabilities page repeats the title but has no "total assets")."""
    if not 0 < index < len(texts) or statement_kind(texts[index]) != kind or statement_kind(texts[index - 1]) != kind:
        return False
    if min(_title(kind, texts[index - 1]), _title(kind, texts[index])) < 2 / 3:
        return False  # a contents page listing the statements is not the statement's first page
    return "continued" in _head(texts[index]) or not KEY_LINES[kind].search(squeeze(texts[index]))


def candidates(texts: list[str]) -> list[Candidate]:
    """Every page that could hold a primary statement, scored, the excluded ones with their reason."""
    found = []
    for index, text in enumerate(texts):
        kind = statement_kind(text)
        if kind is None or value_line_count(text) < MIN_VALUE_LINES:
            continue
        if is_continuation(texts, index, kind):
            continue  # the second page of the statement above, joined to it in ``locate``
        nxt = texts[index + 1] if index + 1 < len(texts) else ""
        candidate = score_page(kind, text, nxt)
        candidate.page = index + 1
        candidate.excluded = exclusion(text)
        if candidate.excluded:
            candidate.score = 0.0
        elif not candidate.parts["key_line"] and candidate.score < MIN_SCORE_WITHOUT_KEY_LINE:
            continue  # neither the key line nor a strong statement shape: a note or an index page
        found.append(candidate)
    return found


def locate(texts: list[str]) -> dict[str, Location]:
    """Locate each primary statement; kinds with no candidate get a ``Location`` with no pages.

    Args:
        texts: page texts, index 0 for page 1.

    Returns:
        ``{kind: Location}`` for every kind in ``concepts.STATEMENTS``.
    """
    pool = candidates(texts)
    usable = {k: [c for c in pool if c.kind == k and not c.excluded] for k in STATEMENTS}
    kinds = [k for k in STATEMENTS if usable[k]]
    chosen: dict[str, Candidate] = {}
    if kinds:
        best = max(itertools.product(*(usable[k] for k in kinds)),
                   key=lambda combo: (round(sum(c.score for c in combo) - SPAN_PENALTY * (max(c.page for c in combo) - min(c.page for c in combo)), 6),
                                      -min(c.page for c in combo)))
        chosen = dict(zip(kinds, best))
    out = {}
    for kind in STATEMENTS:
        excluded = [c for c in pool if c.kind == kind and c.excluded]
        pick = chosen.get(kind)
        if pick is None:
            why = "no page titled as this statement with enough lines of numbers and its key line or a statement's shape"
            if excluded:
                why += "; set aside: " + "; ".join(f"p.{c.page} ({c.excluded})" for c in excluded)
            out[kind] = Location(kind, [], 0.0, 0.0, None, excluded, why)
            continue
        others = sorted((c for c in usable[kind] if c is not pick), key=lambda c: -c.score)
        runner = others[0] if others else None
        lead = runner.score - pick.score if runner is not None else 0.0
        confidence = pick.score if lead <= 0 else pick.score - lead if lead <= AMBIGUOUS_MARGIN else min(pick.score, AMBIGUOUS_CAP)
        weak = [k for k, v in pick.parts.items() if v < WEIGHTS[k] * 0.5]
        why = f"p.{pick.page} scored {pick.score:.2f}" + (f" (weak: {', '.join(weak)})" if weak else "")
        if runner is not None:
            why += f"; runner-up p.{runner.page} {runner.score:.2f}"
            if runner.score >= pick.score:
                why += f", p.{pick.page} chosen for being printed with the other statements"
        if excluded:
            why += "; set aside: " + "; ".join(f"p.{c.page} ({c.excluded})" for c in excluded)
        index = pick.page - 1
        nxt = texts[index + 1] if index + 1 < len(texts) else ""
        continued = is_continuation(texts, index + 1, kind)
        spills = not KEY_LINES[kind].search(squeeze(texts[index])) and statement_kind(nxt) in (None, kind)
        pages = [pick.page] + ([pick.page + 1] if nxt and (continued or spills) else [])
        out[kind] = Location(kind, pages, pick.score, round(confidence, 3), runner, excluded, why)
    return out
