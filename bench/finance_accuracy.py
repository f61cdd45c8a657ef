"""Finance accuracy on real filings: which FinanceBench questions the stored values could answer.

    .venv/bin/python bench/finance_accuracy.py                         # filings/ (12) and financebench/ (27)
    .venv/bin/python bench/finance_accuracy.py --quick                 # 4 short filings (CI, seconds)
    .venv/bin/python bench/finance_accuracy.py --json out.json         # also write the results
    .venv/bin/python bench/finance_accuracy.py --compare bench/results/finance_accuracy-before.json
                                                  # run, then print that file's figures beside this run's
    .venv/bin/python bench/finance_accuracy.py --compare BEFORE.json --results AFTER.json   # no run

There is no model here. Each filing is ingested with the real ``ingest`` into a fresh DuckDB
(the parse cache is reused: ``--cache-dir``, default the plugin's), and each question is graded
by what ``answer_question`` (``plugins/finance/tools.py``) could accept, which is only a figure
traced to rows of the ``facts`` table by fact id or a formula over fact ids. Every value is read
from the ``facts`` table, so rows added there by any extractor count without changing this file.

The rule, per question:

- **answered by value** (numeric gold: FinanceBench's ``metrics-generated`` questions, gold parsed
  by ``plugins.finance.questions.gold_number``) when the gold is reproduced within tolerance by
  (a) one stored fact on a gold evidence page, or
  (b) a derivation over the stored facts whose labels match the line items the gold
  ``justification`` names ("located in the 10K as a single line item named: X", "The line item
  name, as seen in the 10K, was: X"). Each named item's candidate terms are its matching facts
  (signs dropped: a formula may negate a fact), plus the mean of a year and the year before on
  one line only when the question says "average" and their difference only when it says
  "change"; every term of one derivation stands for the same fiscal year, the latest the
  question names ("FY2019"), as stored in ``facts.fiscal_year`` (a fact stored under the wrong
  year does not count: an agent could not tell it is the asked one); a derivation uses every
  named item once (the justification lists exactly the items the metric uses); the
  derivations tried are the fixed templates in ``TEMPLATES`` (the value itself, a/b, 1-a/b, a-b,
  a+b, (a+b)/c, (a-b)/c, a+b-c, the percent change of one line, the mean over three years of
  a/b, alone when the question asks for a "3 year average"), or ``DAY_TEMPLATES`` (365*a/b,
  365*a/(b+c), 365*a/(b-c)) when the question says "365";
  percent = 100 x ratio. All pairs of all facts are deliberately NOT searched: a 10-K stores
  thousands of facts, and some ratio of two of them matches almost any gold number by chance;
  limiting operands to the named line items, and term kinds to what the question asks, keeps a
  match meaningful (the first version, without those limits, "reproduced" a DPO from averages of
  unrelated columns).
  Tolerance: the scorer's 1% relative (``plugins.finance.questions.score_answer``), or half a unit
  of the gold's last printed decimal when that is larger (gold "0.01" is a rounded 0.0097); a
  single fact in (a) must match to half a printed unit, as the gold copies it.
- **answered by evidence page** (prose gold, or a numeric one not reproduced) when a gold
  evidence page holds stored facts ("facts") or is among the top ``SEARCH_TOP`` pages that
  ``search_filing``'s BM25 (``plugins.finance.search.rank_pages``) returns over that filing's pages
  with the question's text as the query ("search"); both are reported.
- **not answerable** otherwise, with the reason (the document ended in error; an operand the
  justification names is not stored; operands stored but no template reproduces the gold; the
  gold page has no stored values and search does not rank it in the top 5).

Per filing: ingestion status (and its warning), the pages of each primary statement in
``facts``, how many of ``concepts.CONCEPTS`` have a mapped fact, and the accounting identities
compared and held (``plugins.finance.checks.run_checks``); where the database records how each
statement was located (``statement_locations``), its confidence and runner-up are shown too.

Without ``../shared/data`` the benchmark says so and exits 0. The exit status is non-zero only
when the benchmark breaks: an exception, or a filing that ends in ``error`` although the committed
before-results (``bench/results/finance_accuracy-before.json``) have it ingested. Accuracy is
reported, never asserted.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from plugins.finance.checks import run_checks
from plugins.finance.concepts import CONCEPTS, STATEMENTS
from plugins.finance.ingest import default_cache_dir, ingest
from plugins.finance.questions import Question, load_questions
from plugins.finance.search import rank_pages
from plugins.finance.store import connect

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / ".." / "shared" / "data"
SETS = {"filings": DATA / "filings", "financebench": DATA / "financebench"}
QUICK = {"filings": ["ULTABEAUTY_2023Q4_EARNINGS"],
         "financebench": ["FOOTLOCKER_2022_8K_dated-2022-05-20", "PEPSICO_2023_8K_dated-2023-05-05", "AMCOR_2022_8K_dated-2022-07-01"]}
BEFORE = ROOT / "bench" / "results" / "finance_accuracy-before.json"
SEARCH_TOP = 5
TOLERANCE = 0.01

# -- operands named by the gold justification -----------------------------------------------

_NAMED = [re.compile(r"single line item named:\s*(.+?)\.?\s*$", re.MULTILINE),
          re.compile(r"line item name, as seen in the 10K, was:\s*(.+?)\.?(?:\s+The final step|\s*$)", re.MULTILINE)]


def simplify(label: str) -> str:
    """Lower case, mis-decoded bytes and punctuation to spaces ("Property, plant and equipment â net" -> "property plant and equipment net")."""
    text = label.lower().replace("\u00a0", " ")
    text = re.sub(r"[^a-z0-9]+", " ", text.encode("ascii", "ignore").decode())
    return re.sub(r"\s+", " ", text).strip()


def named_operands(justification: str) -> list[str]:
    """The line items a FinanceBench justification names, in order (empty when it names none)."""
    found: list[str] = []
    for rx in _NAMED:
        found += [m.strip() for m in rx.findall(justification or "")]
    return list(dict.fromkeys(found))


def label_matches(label: str, operand: str) -> bool:
    """A stored label carries the named line item: equal once simplified, or starting with it."""
    a, b = simplify(label), simplify(operand)
    return bool(a) and (a == b or a.startswith(b + " ") or (len(b.split()) >= 3 and b in a))


# -- derivations ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Term:
    """A candidate operand: a value (USD or count), the fiscal year it stands for, and its formula text."""

    value: float
    year: int | None
    text: str


#: A stored fact as the derivations read it: (fact_id, label, page, line_no, fiscal_year, value).
Fact = tuple[str, str, int, int, int | None, float]


def operand_terms(facts: list[Fact], averages: bool, changes: bool) -> tuple[list[Term], list[list[Term]]]:
    """Candidate terms of one operand from its facts.

    Signs are dropped (a formula may negate any fact, and costs are often printed in parentheses).
    A two-column term pairs a year with the year before and stands for the later year.

    Args:
        averages: also the mean of a year and the year before on one line (the question asks for an average).
        changes: also the difference of a year and the year before on one line (the question asks for a change).

    Returns:
        ``(terms, lines)``: terms are single facts, and two-column means and changes when asked;
        ``lines`` holds each line's single-fact terms, latest year first (for percent changes and
        three-year means).
    """
    by_line: dict[tuple[int, int], list[Term]] = {}
    for fid, _, page, line, year, value in facts:
        by_line.setdefault((page, line), []).append(Term(abs(value), year, "{" + fid + "}"))
    terms, lines = [], []
    for singles in by_line.values():
        singles.sort(key=lambda t: -(t.year or 0))
        lines.append(singles)
        terms += singles
        for x, y in itertools.permutations(singles, 2):
            if x.year is None or y.year != x.year - 1:
                continue
            if averages:
                terms.append(Term((x.value + y.value) / 2, x.year, f"avg({x.text}, {y.text})"))
            if changes:
                terms.append(Term(x.value - y.value, x.year, f"({x.text} - {y.text})"))
    return terms, lines


def target_year(text: str) -> int | None:
    """The latest fiscal year a question names ("FY2017 - FY2019" -> 2019), None when it names none."""
    years = [int(y) for y in re.findall(r"\bFY\s?(\d{4})\b", text)]
    return max(years) if years else None


def _div(a: float, b: float) -> float | None:
    return a / b if b else None


#: name -> (arity, function of the operands' term values); None when undefined (division by zero).
TEMPLATES: dict[str, tuple[int, Callable[..., float | None]]] = {
    "a": (1, lambda a: a),
    "a / b": (2, _div), "1 - a / b": (2, lambda a, b: None if not b else 1 - a / b),
    "a - b": (2, lambda a, b: a - b), "a + b": (2, lambda a, b: a + b),
    "(a + b) / c": (3, lambda a, b, c: _div(a + b, c)), "(a - b) / c": (3, lambda a, b, c: _div(a - b, c)),
    "a + b - c": (3, lambda a, b, c: a + b - c),
}
#: Day-count metrics (DPO, DSO, DIO): tried instead of ``TEMPLATES`` when the question says "365".
DAY_TEMPLATES: dict[str, tuple[int, Callable[..., float | None]]] = {
    "365 * a / b": (2, lambda a, b: _div(365 * a, b)),
    "365 * a / (b + c)": (3, lambda a, b, c: _div(365 * a, b + c)), "365 * a / (b - c)": (3, lambda a, b, c: _div(365 * a, b - c)),
}


def gold_decimals(text: str) -> int:
    """Decimals printed in the gold answer ("0.83" -> 2, "$1577.00" -> 2, "7.9%" -> 1)."""
    m = re.match(r"^\s*\$?\s*-?[\d,]*\.?(\d*)", text)
    return len(m[1]) if m else 0


def close(value: float, question: Question, exact: bool = False) -> bool:
    """``value`` (base units; a ratio also tried x100 for a percent gold) within the tolerance of the gold.

    Args:
        exact: only half a printed unit (for a single printed fact, which the gold copies).
    """
    gold = question.gold_value
    assert gold is not None
    printed = re.match(r"^\s*\$?\s*(-?[\d,]*\.?\d+)", question.gold_text)
    number = float(printed[1].replace(",", "")) if printed else 0.0
    unit_scale = gold / number if number else 1.0  # 1e6 for "$1577.00" asked in USD millions
    half_unit = 0.5 * 10 ** -gold_decimals(question.gold_text) * abs(unit_scale)
    allowed = half_unit if exact else max(TOLERANCE * abs(gold), half_unit)
    candidates = [value, value * 100] if question.gold_unit == "percent" else [value]
    return any(abs(v - gold) <= allowed for v in candidates)


def derive(question: Question, operands: dict[str, list[Fact]]) -> str | None:
    """The first derivation from the named operands' facts that reproduces the gold, as text, or None.

    Every term of a derivation stands for the same fiscal year: the latest the question names
    ("FY2019"), or any one year when it names none.
    """
    names = list(operands)
    text = question.text.lower()
    year = target_year(question.text)
    built = {n: operand_terms(operands[n], "average" in text, "change" in text) for n in names}
    three_years = bool(re.search(r"\b(3|three)[- ]year average", text))
    templates = {} if three_years else DAY_TEMPLATES if "365" in text else TEMPLATES
    for template, (arity, fn) in templates.items():
        if arity != len(names):
            continue  # the justification lists exactly the line items the metric uses
        for chosen in itertools.permutations(names, arity):
            for terms in itertools.product(*(built[n][0] for n in chosen)):
                years = {t.year for t in terms}
                if len(years) != 1 or (year is not None and years != {year}):
                    continue
                value = fn(*(t.value for t in terms))
                if value is not None and close(value, question):
                    return f"{template} with " + ", ".join(f"{k}={t.text}" for k, t in zip("abc", terms))
    for lines in (built[n][1] for n in names if len(names) == 1):  # percent change of one line, year on year
        for line in lines:
            for new, old in itertools.permutations(line, 2):
                if new.year is None or old.year != new.year - 1 or (year is not None and new.year != year):
                    continue
                if old.value and close((new.value - old.value) / old.value, question):
                    return f"percent change ({new.text} - {old.text}) / {old.text}"
    for a, b in itertools.permutations(names, 2):  # mean of a ratio over three years
        for la, lb in itertools.product(built[a][1], built[b][1]):
            by_year_a, by_year_b = {t.year: t for t in la}, {t.year: t for t in lb}
            last = year or max((y for y in by_year_a if y is not None), default=None)
            span = [last - k for k in range(3)] if last else []
            if span and all(y in by_year_a and y in by_year_b for y in span):
                ratios = [_div(by_year_a[y].value, by_year_b[y].value) for y in span]
                if None not in ratios and close(sum(ratios) / 3, question):  # type: ignore[arg-type]
                    return f"mean over FY{span[-1]}-FY{span[0]} of a / b, a='{a}', b='{b}'"
    return None


# -- grading --------------------------------------------------------------------------------

@dataclass
class QuestionResult:
    """One question's verdict: ``value``, ``page`` or ``none``, and why."""

    qid: str
    doc_name: str
    kind: str
    gold: str
    verdict: str
    why: str
    gold_pages: list[int] = field(default_factory=list)


def grade(con: Any, question: Question, justification: str, status: str, error: str) -> QuestionResult:
    """Grade one question against the database (see the module docstring for the rule)."""
    result = QuestionResult(question.qid, question.doc_name, question.kind, question.gold_text[:60], "none", "", question.gold_pages)
    if status == "error":
        result.why = f"document ended in error: {error[:120]}"
        return result
    doc = question.doc_name
    reasons = []
    if question.gold_value is not None:
        on_page = con.execute("SELECT fact_id, value FROM facts WHERE doc_name = ? AND page IN (SELECT unnest(?)) AND value IS NOT NULL",
                              [doc, question.gold_pages]).fetchall()
        hit = next((fid for fid, value in on_page if close(abs(value), question, exact=True)), None)
        if hit:
            result.verdict, result.why = "value", f"fact {hit} on a gold page"
            return result
        names = named_operands(justification)
        facts = con.execute("SELECT fact_id, label, page, line_no, fiscal_year, value FROM facts WHERE doc_name = ? AND value IS NOT NULL",
                            [doc]).fetchall()
        operands = {n: [f for f in facts if label_matches(f[1], n)] for n in names}
        missing = [n for n, fs in operands.items() if not fs]
        if not names:
            reasons.append("the justification names no line item and no gold-page fact equals the gold")
        elif missing:
            reasons.append("; ".join(f"operand '{n}' not stored" for n in missing))
        else:
            how = derive(question, operands)
            if how:
                result.verdict, result.why = "value", how
                return result
            year = target_year(question.text)
            reasons.append(f"operands stored ({', '.join(repr(n) for n in names)}) but no template over "
                           f"{f'their FY{year} facts' if year else 'them'} reproduces {question.gold_text}")
    pages = [(doc, p, t) for p, t in con.execute("SELECT page, text FROM pages WHERE doc_name = ? ORDER BY page", [doc]).fetchall()]
    ranked = [h.page for h in rank_pages(pages, question.text, SEARCH_TOP)]
    with_facts = sorted({p for (p,) in con.execute("SELECT DISTINCT page FROM facts WHERE doc_name = ? AND page IN (SELECT unnest(?))",
                                                     [doc, question.gold_pages]).fetchall()})
    in_search = [p for p in question.gold_pages if p in ranked]
    if with_facts or in_search:
        ways = ([f"gold page {', '.join(map(str, with_facts))} has stored facts"] if with_facts else []) + \
               ([f"search ranks gold page {in_search[0]} #{ranked.index(in_search[0]) + 1}"] if in_search else [])
        result.verdict, result.why = "page", "; ".join(reasons + ways)
        return result
    gold = ", ".join(map(str, question.gold_pages)) or "(none given)"
    reasons.append(f"gold page {gold} has no stored values and is not in search's top {SEARCH_TOP}")
    result.why = "; ".join(reasons)
    return result


@dataclass
class FilingResult:
    """One filing: ingestion status, statements located, concepts mapped, identities."""

    doc_name: str
    status: str
    error: str
    pages: int
    facts: int
    located: dict[str, list[int]]
    concepts: int
    identities_compared: int
    identities_held: int
    location_notes: list[str] = field(default_factory=list)
    ingest_s: float = 0.0


def describe_filing(con: Any, name: str, status: str, error: str, pages: int, facts: int, seconds: float) -> FilingResult:
    """Gather a filing's figures from the database."""
    located: dict[str, list[int]] = {}
    for statement, page in con.execute("SELECT DISTINCT statement, page FROM facts WHERE doc_name = ? AND statement IN (SELECT unnest(?)) "
                                       "ORDER BY page", [name, list(STATEMENTS)]).fetchall():
        located.setdefault(statement, []).append(page)
    mapped = con.execute("SELECT count(DISTINCT concept) FROM facts WHERE doc_name = ? AND concept IN (SELECT unnest(?))",
                         [name, CONCEPTS]).fetchone()[0]
    checks = run_checks(con, [name])
    notes = []
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if "statement_locations" in tables:  # recorded by the statement locator, when it does
        for statement, pages_, confidence, runner_up, reason in con.execute(
                "SELECT statement, pages, confidence, runner_up, reason FROM statement_locations WHERE doc_name = ? ORDER BY statement",
                [name]).fetchall():
            notes.append(f"{statement} p.{pages_ or '-'} conf {confidence:.2f}" + (f", runner-up {runner_up}" if runner_up else "")
                         + (f" ({reason})" if reason else ""))
    return FilingResult(name, status, error, pages, facts, {k: located[k] for k in STATEMENTS if k in located}, mapped,
                        len(checks.results), sum(r.passed for r in checks.results), notes, round(seconds, 2))


def run_set(name: str, folder: Path, docs: list[str] | None, cache_dir: Path, console: Console) -> dict[str, Any]:
    """Ingest one folder's filings into a fresh database and grade its questions."""
    raw = [json.loads(line) for line in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    justification = {r["financebench_id"]: r.get("justification") or "" for r in raw}
    questions = [q for q in load_questions(folder / "questions.jsonl") if docs is None or q.doc_name in docs]
    paths = sorted(folder.glob("*.pdf")) if docs is None else [folder / f"{d}.pdf" for d in docs]
    filings, results = [], []
    with tempfile.TemporaryDirectory() as tmp:
        con = connect(Path(tmp) / "accuracy.duckdb")
        statuses = {}
        for path in paths:
            start = time.perf_counter()
            status = ingest(con, [path], cache_dir)[0]
            seconds = time.perf_counter() - start
            statuses[path.stem] = status
            console.print(f"  {name}: {path.stem}: {status.status} ({seconds:.1f} s{', cached' if status.from_cache else ''})")
            filings.append(describe_filing(con, path.stem, status.status, status.error, status.pages, status.facts, seconds))
        for q in questions:
            st = statuses.get(q.doc_name)
            results.append(grade(con, q, justification[q.qid], st.status if st else "error", st.error if st else "filing not found"))
        con.close()
    return {"filings": [asdict(f) for f in filings], "questions": [asdict(r) for r in results]}


# -- printing -------------------------------------------------------------------------------

def summary(data: dict[str, Any]) -> dict[str, Any]:
    """Counts per set: questions by verdict, filings by status, mean concepts, identities compared."""
    out = {}
    for name, part in data["sets"].items():
        qs, fs = part["questions"], part["filings"]
        numeric = [q for q in qs if q["kind"] == "metrics-generated"]
        out[name] = {
            "questions": len(qs), "value": sum(q["verdict"] == "value" for q in qs), "page": sum(q["verdict"] == "page" for q in qs),
            "none": sum(q["verdict"] == "none" for q in qs), "numeric": len(numeric),
            "numeric_by_value": sum(q["verdict"] == "value" for q in numeric),
            "filings": len(fs), "statuses": {s: sum(f["status"] == s for f in fs) for s in sorted({f["status"] for f in fs})},
            "all_three_located": sum(len(f["located"]) == 3 for f in fs),
            "concepts_mean": round(sum(f["concepts"] for f in fs) / max(1, len(fs)), 2),
            "identities_compared": sum(f["identities_compared"] for f in fs), "identities_held": sum(f["identities_held"] for f in fs),
            "filings_without_identity": sum(f["identities_compared"] == 0 for f in fs),
        }
    return out


def print_results(data: dict[str, Any], console: Console) -> None:
    """The per-question, per-filing and summary tables of one run."""
    for name, part in data["sets"].items():
        table = Table(title=f"{name}: questions ({SEARCH_TOP=}, tolerance {TOLERANCE:.0%} or half a printed unit)", show_lines=False)
        for column in ("id", "document", "type", "gold", "pages", "verdict", "why"):
            table.add_column(column, overflow="fold")
        for q in part["questions"]:
            table.add_row(q["qid"].replace("financebench_id_", ""), q["doc_name"], q["kind"].split("-")[0], q["gold"][:24],
                          ",".join(map(str, q["gold_pages"])), q["verdict"], escape(q["why"]))  # "[blank line item ...]" is not markup
        console.print(table)
        table = Table(title=f"{name}: filings")
        for column in ("document", "status", "pages", "facts", "statements located (pages)", f"concepts /{len(CONCEPTS)}",
                       "identities held/compared", "location", "ingest s"):
            table.add_column(column, overflow="fold")
        for f in part["filings"]:
            located = "; ".join(f"{k.split('_')[0]} {','.join(map(str, v))}" for k, v in f["located"].items()) or "-"
            status = f["status"] + (f": {f['error'][:90]}" if f["status"] not in ("ok", "no_statements") and f["error"] else "")
            table.add_row(f["doc_name"], escape(status), str(f["pages"]), str(f["facts"]), located, str(f["concepts"]),
                          f"{f['identities_held']}/{f['identities_compared']}", escape("\n".join(f.get("location_notes", []))), f"{f['ingest_s']:.1f}")
        console.print(table)
    print_summary({"now": summary(data)}, console)


def print_summary(runs: dict[str, dict[str, Any]], console: Console) -> None:
    """Summary rows per set, one column per run (before / after side by side)."""
    table = Table(title="Summary" + (" (before vs after)" if len(runs) > 1 else ""))
    table.add_column("set / figure")
    for label in runs:
        table.add_column(label, justify="right")
    sets = list(next(iter(runs.values())))
    rows = [("questions answerable by value", lambda s: f"{s['value']}"), ("  of numeric questions", lambda s: f"{s['numeric_by_value']}/{s['numeric']}"),
            ("by evidence page only", lambda s: f"{s['page']}"), ("not answerable", lambda s: f"{s['none']}"),
            ("filings by status", lambda s: ", ".join(f"{k} {v}" for k, v in s["statuses"].items())),
            ("filings with all 3 statements", lambda s: f"{s['all_three_located']}/{s['filings']}"),
            ("concepts mapped (mean)", lambda s: f"{s['concepts_mean']}"),
            ("identities held/compared", lambda s: f"{s['identities_held']}/{s['identities_compared']}"),
            ("filings with no identity compared", lambda s: f"{s['filings_without_identity']}")]
    for name in sets:
        table.add_row(f"[bold]{name}[/bold] ({next(iter(runs.values()))[name]['questions']} questions)", *[""] * len(runs))
        for label, fn in rows:
            table.add_row(label, *[fn(r[name]) if name in r else "-" for r in runs.values()])
    console.print(table)


def print_compare(before: dict[str, Any], after: dict[str, Any], console: Console) -> None:
    """Summary side by side, then every question and filing whose outcome changed."""
    def label(run: dict[str, Any]) -> str:
        commit = run.get("commit", "?")
        return commit[:8] + ("+dirty" if commit.endswith("+dirty") else "")

    print_summary({f"before ({label(before)})": summary(before), f"after ({label(after)})": summary(after)}, console)
    table = Table(title="Changed questions")
    for column in ("id", "document", "before", "after", "after: why"):
        table.add_column(column, overflow="fold")
    table_f = Table(title="Changed filings")
    for column in ("document", "before", "after"):
        table_f.add_column(column, overflow="fold")
    for name, part in after["sets"].items():
        old_q = {q["qid"]: q for q in before["sets"].get(name, {}).get("questions", [])}
        for q in part["questions"]:
            o = old_q.get(q["qid"])
            if o is None or o["verdict"] != q["verdict"]:
                table.add_row(q["qid"].replace("financebench_id_", ""), q["doc_name"], o["verdict"] if o else "-", q["verdict"], escape(q["why"]))
        old_f = {f["doc_name"]: f for f in before["sets"].get(name, {}).get("filings", [])}
        for f in part["filings"]:
            o = old_f.get(f["doc_name"])
            keys = ("status", "located", "concepts", "identities_compared", "identities_held")
            if o is None or any(o[k] != f[k] for k in keys):
                def show(x: dict[str, Any]) -> str:
                    return (f"{x['status']}; " + "; ".join(f"{k.split('_')[0]} {','.join(map(str, v))}" for k, v in x["located"].items())
                            + f"; concepts {x['concepts']}; identities {x['identities_held']}/{x['identities_compared']}")
                table_f.add_row(f["doc_name"], show(o) if o else "-", show(f))
    console.print(table)
    console.print(table_f)


def git_commit() -> str:
    """The commit of the code measured (``unknown`` outside a git checkout), ``+dirty`` when changed."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "plugins"], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    """Parse the arguments, run (or load) the results, print the tables; exit 1 when the bench broke."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 short filings and their questions, fresh parse cache (CI)")
    parser.add_argument("--sets", nargs="*", choices=list(SETS), default=list(SETS), help="which folders of ../shared/data")
    parser.add_argument("--cache-dir", type=Path, default=None, help="parse cache (default: the plugin's; --quick: a fresh one)")
    parser.add_argument("--json", type=Path, default=None, help="write the per-question and per-filing results here")
    parser.add_argument("--compare", type=Path, default=None, help="a --json file of an earlier run to print beside this one")
    parser.add_argument("--results", type=Path, default=None, help="with --compare: take 'after' from this file instead of running")
    args = parser.parse_args()
    console = Console(width=200)
    if args.compare and args.results:
        print_compare(json.loads(args.compare.read_text()), json.loads(args.results.read_text()), console)
        return
    missing = [str(f.resolve()) for n, f in SETS.items() if n in args.sets and not (f / "questions.jsonl").is_file()]
    if missing:
        print(f"skipped: {', '.join(missing)} not found; the benchmark reads the shared filings next to the repository (../shared/data)")
        return  # missing data, not a broken benchmark
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as fresh:
        cache = args.cache_dir or (Path(fresh) if args.quick else default_cache_dir())
        data: dict[str, Any] = {"commit": git_commit(), "quick": args.quick, "rule": "see bench/finance_accuracy.py docstring", "sets": {}}
        for name in args.sets:
            data["sets"][name] = run_set(name, SETS[name], QUICK[name] if args.quick else None, cache, console)
    data["seconds"] = round(time.perf_counter() - started, 1)
    print_results(data, console)
    console.print(f"{sum(len(p['filings']) for p in data['sets'].values())} filings, "
                  f"{sum(len(p['questions']) for p in data['sets'].values())} questions in {data['seconds']} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    if args.compare:
        print_compare(json.loads(args.compare.read_text()), data, console)
    broken = []
    if BEFORE.is_file():
        before = json.loads(BEFORE.read_text())
        for name, part in data["sets"].items():
            was = {f["doc_name"]: f["status"] for f in before["sets"].get(name, {}).get("filings", [])}
            broken += [f"{f['doc_name']}: ingestion ended in error ({f['error']}); it was {was[f['doc_name']]} before"
                       for f in part["filings"] if f["status"] == "error" and was.get(f["doc_name"], "error") != "error"]
    if broken:
        sys.exit("broken:\n  " + "\n  ".join(broken))


if __name__ == "__main__":
    main()
