"""Every number a report's prose states, however it is written, and whether it cites a figure.

This is the one tokeniser behind the narrative check of ``write_report`` (a narrative with an
uncited number is refused) and the reward's "report traced" share (each such number lowers it),
so the tool and the reward cannot disagree about what a number is.

What counts as a number (a *mention*):

* digits in any grouping: ``1,234.5``, ``1_000``, ``1 000`` (a space, a no-break or a thin
  space), ``1'000``, ``.5``; with a sign (``-3.4``, ``+2``), accounting parentheses (``(3.4)``
  is negative), a currency (``$``, ``US$``, ``€``, ``£``, ``¥``, ``₹``), a percent (``%``,
  ``percent``, ``per cent``, ``pct``, ``percentage points``, ``pp``; ``bps``/``basis points``
  are hundredths of a percent) and a scale or multiple (``12k``, ``$1.2bn``, ``3.4 million``,
  ``5x``, ``2 times``). ``1.234,5`` and ``9,6`` (a decimal comma) are *ambiguous*: counted, and
  never accepted as citing a figure, because the report prints ``1,234.5``;
* any Unicode decimal digit (full-width ``９５``, Arabic-Indic, mathematical bold ...) is read as
  its ASCII digit, every space separator as a space, and invisible characters (zero-width
  spaces, soft hyphens, combining marks) are dropped before reading; other numeric characters
  (``½``, ``²``, ``①``, ``Ⅻ``, CJK numerals) each count as a number;
* English number words: cardinals (``ninety-five``, ``one hundred and twenty``, ``a million``,
  ``two and a half``), fractions (``a third``, ``one-third``, ``two-thirds``, ``half``, ``a
  quarter``), multiples (``twice``, ``double``/``doubled``, ``triple``, ``thrice``,
  ``halved``), ``a dozen``, vague quantities (``dozens``, ``hundreds``, ``thousands``,
  ``millions`` ...: counted, cannot cite a figure), ordinals past *twelfth* (``ninety-fifth``)
  and any ordinal before ``percentile``; a number word inside a compound counts
  (``five-year``);
* a word that mixes letters of two scripts (``nіnety`` with a Cyrillic ``і``), a percent
  (``%``, ``percent``, ``bps``) after something that is not a number this module reads
  (``XCV percent``), a URL with a digit, and any other word with a digit that no rule below names (``FY999000``, ``K95``,
  ``p56``, ``3rd``, ``12kg``) count too and cannot cite a figure.

What is not a number (the precise rule; anything else with a digit counts):

1. figure references ``[F12]`` (and the intro's ``[F*n*]``);
2. the report's document names, exactly (``NIKE_2023_10K``: given by the caller from the
   filings database, never from a file the agent can write), and the company part of a document
   name that has a digit (``3M`` of ``3M_2018_10K``), as a whole word in the same case (``3m``
   is three million);
3. SEC form names: ``10-K``, ``10-Q``, ``8-K``, ``20-F``, ``40-F``, ``6-K``, ``11-K``, ``S-1``,
   ``S-3``, ``S-4``, ``S-8``, ``F-1``, ``F-3``, ``10-KT``, ``10-K405`` (optionally ``/A``, a
   plural ``s``), as whole words: ``10-K95`` or ``10K`` are numbers (``10K`` reads as ten thousand);
4. period labels ``Q1``-``Q4``, ``H1``, ``H2``, fiscal years ``FY2023`` (a year 1900-2100) and
   ``FY23``; ISO dates ``2023-05-31`` (a valid month and day, a year 1900-2100), and a months
   label right before one (``6M 2022-07-30``, the store's label of a six-month period);
5. a bare year: four plain digits 1900-2100 (no sign, currency, separator, decimals, percent,
   scale or citation) right after a year word (in, fiscal, year, years, calendar, since, from,
   until, through, during, between, before, after, ended, ending, end, early, late, mid), a
   month name (``May 31, 2023``), a period label (``Q3 2023``), or another year and a
   connector (``2019 to 2023``, ``2022 and 2023``, ``2019-2023``), or alone in parentheses
   (``(2023)``);
6. a day of the month: plain ``1``-``31`` (or ``31st``) next to a capitalised month name;
7. page, note and item numbers: plain digits right after ``page``/``pages``/``p.``/``pp.``
   (up to 999), ``note``/``notes``/``item``/``items``/``exhibit`` (up to 99; ``Item 7A``),
   and lists of them (``pages 60 and 61``, ``pp. 60-62``);
8. word ordinals ``first``-``twelfth`` as positions (``the third year``, ``the fourth
   quarter``), ``first half``/``half-year`` (a period), ``the quarter``, and a lone ``one``
   (``one of``, ``one-time``) when nothing makes it a quantity (a percent or scale after it).

So an attacker cannot hide a figure in a name: an exempt token carries no value (a year is a
plain 1900-2100 integer in a year context, a page at most 999, a note at most 99), and anything
attached to it (``10-K 95%``, ``FY999000``, ``page 95%``, ``in 2023 million``) is read as a number.
Number words are read in English only (a narrative in another language is not checked for
them); ``several``, ``a few``, ``many`` and ``a couple`` are not numbers.

Citing: a mention cites a figure when a reference follows it after spaces only (``9.6% [F12]``).
It matches the figure when its value equals the figure's display at the display's printed
precision: same percent-ness (``960 bps`` is ``9.6%``); a scale word converts to the figure's
units through the figure's ``scale`` (``$32.765 billion [F3]`` for ``32,765`` in $ millions, but
not ``$32.8 billion``: that is 35 million off); no more decimals than printed (``9.60%`` does not
match ``9.6%``); an unsigned number matches a negative figure by magnitude (``fell 3.4% [F5]``)
but a signed or parenthesised one must have the figure's sign.

Number words are parsed here rather than with a words-to-numbers package: ``word2number``
(unmaintained since 2017) converts a whole string, and ``text2num`` 3 (compiled, eight
languages) reads cardinals, ordinals and decimals; either would still leave the fractions,
multiples, vague quantities, positions in the text and the exemptions above to this module,
while the English vocabulary they would add is a few small tables, tested here.
"""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: stands in the normalised text for a numeric character that is not a decimal digit (``½``)
_NUMERIC_MARK = "\ue000"

_SPACE_LIKE = {"\t"}
_MINUS = {"\u2212", "\u2010", "\u2011", "\ufe63", "\uff0d"}
_DASHES = {"\u2012", "\u2013", "\u2014", "\u2015"}
_APOSTROPHES = {"\u2018", "\u2019", "\u02bc", "\u2032"}

_FORMS = r"(?:10-K405|10-KT|10-K|10-Q|8-K|20-F|40-F|6-K|11-K|S-1|S-3|S-4|S-8|F-1|F-3)(?:/A)?s?"
_BODY = (r"\d{1,3}(?:\.\d{3})+,\d+"            # 1.234,5 (decimal comma: ambiguous)
         r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?"       # 1,234.5
         r"|\d+(?:_\d+)+(?:\.\d+)?"             # 1_000
         r"|\d{1,3}(?:[ ']\d{3})+(?!\d)(?:\.\d+)?"  # 1 000, 1'000
         r"|\d+,\d{1,2}(?!\d)"                  # 9,6 (decimal comma: ambiguous)
         r"|\d+(?:\.\d+)?|\.\d+")
_SUFFIX = r"k|K|mm|MM|mn|m|M|bn|Bn|BN|b|B|tn|x|X|bps|bp|pp"
_TOKEN = re.compile(
    r"(?P<ref>\[F\d+\]|\[F\*n\*\])"
    r"|(?P<url>(?:https?://|www\.)[^\s<>\[\]]+)"
    rf"|(?P<date>(?<![\w-])(?:19\d\d|20\d\d|2100)-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?![\w-]))"
    rf"|(?P<form>(?<![\w-]){_FORMS}(?![\w-]))"
    rf"|(?P<num>(?<!\w)(?P<open>\()?(?P<sign>[-+])?(?:(?P<cur>US\$|C\$|A\$|\$|€|£|¥|₹) ?)?(?P<body>{_BODY})"
    rf"(?(open)(?P<close>\))?)(?P<pct> ?%)?(?P<suf>{_SUFFIX})?(?(open)(?P<close2>\))?)(?!\w))"
    r"|(?P<ident>(?<!\w)(?=\w*[\d_])\w+)"
    r"|(?P<word>[^\W\d_]+(?:['-][^\W\d_]+)*)"
    rf"|(?P<mark>{_NUMERIC_MARK})"
    r"|(?P<digits>\d+)"
    r"|(?P<pctsign>%)")

_UNITS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
          "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
          "seventeen": 17, "eighteen": 18, "nineteen": 19}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SCALE_WORDS = {"hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
#: scale words after a number written in digits ("3.4 million", "12 bn")
_SCALE_AFTER = {"thousand": 1e3, "thousands": 1e3, "million": 1e6, "millions": 1e6, "mn": 1e6, "mm": 1e6,
                "billion": 1e9, "billions": 1e9, "bn": 1e9, "trillion": 1e12, "trillions": 1e12, "tn": 1e12, "k": 1e3}
_SUFFIX_SCALE = {"k": 1e3, "m": 1e6, "mm": 1e6, "mn": 1e6, "b": 1e9, "bn": 1e9, "tn": 1e12}
_DENOMINATORS = {"half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4, "fifth": 5, "fifths": 5,
                 "sixth": 6, "sixths": 6, "seventh": 7, "sevenths": 7, "eighth": 8, "eighths": 8, "ninth": 9, "ninths": 9,
                 "tenth": 10, "tenths": 10}
_SMALL_ORDINALS = {"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
                   "eleventh", "twelfth"}
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
             "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13, "fourteenth": 14, "fifteenth": 15,
             "sixteenth": 16, "seventeenth": 17, "eighteenth": 18, "nineteenth": 19, "twentieth": 20, "thirtieth": 30,
             "fortieth": 40, "fiftieth": 50, "sixtieth": 60, "seventieth": 70, "eightieth": 80, "ninetieth": 90,
             "hundredth": 100, "thousandth": 1000, "millionth": 1e6}
_MULTIPLES = {"twice": 2, "double": 2, "doubled": 2, "doubles": 2, "doubling": 2, "thrice": 3, "triple": 3, "tripled": 3,
              "triples": 3, "tripling": 3, "treble": 3, "trebled": 3, "quadruple": 4, "quadrupled": 4, "quadrupling": 4,
              "halved": 0.5, "halve": 0.5, "halving": 0.5}
_VAGUE = {"dozens", "hundreds", "thousands", "millions", "billions", "trillions", "tens"}
_YEAR_WORDS = {"in", "fiscal", "year", "years", "calendar", "since", "from", "until", "till", "through", "during", "between",
               "before", "after", "ended", "ending", "end", "early", "late", "mid", "fy"}
_MONTHS = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
           "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"}
_CONNECTORS = {"to", "and", "or", "through"}
_PAGE_WORDS = {"page": 999, "pages": 999, "p": 999, "pp": 999}
_NOTE_WORDS = {"note": 99, "notes": 99, "item": 99, "items": 99, "exhibit": 99}
_NO_NUMBER = "a percent with no number before it that this check can read (Roman numerals, words of another language)"
_PERIOD = re.compile(r"Q[1-4]|H[12]|FY(?:19\d\d|20\d\d|2100|\d\d)")


@dataclass(frozen=True)
class NumberMention:
    """One number stated in prose.

    Attributes:
        text: as written in the original text (``"ninety-five percent"``, ``"$1.2bn"``).
        start, end: its character offsets in the original text.
        value: the signed amount as written, before any scale word; None when it has no single
            value (``dozens``, ``1.234,5``, an identifier).
        decimals: digits printed after the decimal point (0 for words).
        scale: the multiplier of a scale word or suffix (``1e9`` for ``bn``; 1 without one).
        percent: stated as a percent (``bps`` are converted: ``value`` is then in percent).
        signed: written with a sign or accounting parentheses.
        why: why it cannot cite a figure even with a reference ("" when it can).
        ref: the reference that follows it (``"12"`` for ``[F12]``), or None.
        ref_end: the end offset of the reference in the original text.
    """

    text: str
    start: int
    end: int
    value: float | None
    decimals: int = 0
    scale: float = 1.0
    percent: bool = False
    signed: bool = False
    why: str = ""
    ref: str | None = None
    ref_end: int | None = None


@dataclass(frozen=True)
class NarrativeProblem:
    """A number the prose states without a figure it matches.

    Attributes:
        text: what was written, with its reference when it has one (``"9.7% [F12]"``).
        line, column: where (1-based, in the text checked).
        why: ``"no figure reference"``, or what is wrong with the reference or the number.
        hint: how to fix it, one sentence.
    """

    text: str
    line: int
    column: int
    why: str
    hint: str

    def __str__(self) -> str:
        return self.text if self.why == "no figure reference" else f"{self.text} ({self.why})"

    def describe(self, hint: bool = True) -> str:
        """The problem for a person: what, where, why and (with ``hint``) what to do."""
        return f'"{self.text}" at line {self.line}, column {self.column}: {self.why}' + (f"; {self.hint}" if hint else "")


@dataclass(frozen=True)
class _Token:
    kind: str
    start: int  # offsets in the normalised text
    end: int
    text: str
    match: re.Match[str]

    @property
    def lower(self) -> str:
        return self.text.lower()


def _normalise(text: str) -> tuple[str, list[int]]:
    """The text as the tokeniser reads it, and for each of its characters the offset it came from.

    Decimal digits of any script become ASCII, space separators a space, minus signs and hyphen
    variants ``-``, dashes ``–``, curly apostrophes ``'``; invisible format characters and
    combining marks are dropped; other numeric characters become ``_NUMERIC_MARK``; everything
    else is NFKC-normalised (full-width letters and ``％`` become ASCII).
    """
    out: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        if " " <= ch <= "~":  # printable ASCII is read as it is (the common case, kept fast)
            out.append(ch)
            origin.append(i)
            continue
        category = unicodedata.category(ch)
        if category in ("Cf", "Mn", "Me", "Cc") and ch not in "\n\r\t":
            continue
        if ch in _MINUS:
            mapped = "-"
        elif ch in _DASHES:
            mapped = "–"
        elif ch in _APOSTROPHES:
            mapped = "'"
        elif category == "Zs" or ch in _SPACE_LIKE:
            mapped = " "
        elif (digit := unicodedata.decimal(ch, None)) is not None:
            mapped = str(digit)
        elif unicodedata.numeric(ch, None) is not None:
            mapped = _NUMERIC_MARK
        else:
            mapped = unicodedata.normalize("NFKC", ch)
            if any(unicodedata.decimal(c, None) is not None or unicodedata.numeric(c, None) is not None for c in mapped) \
                    and not mapped.isascii():
                mapped = _NUMERIC_MARK
        out.append(mapped)
        origin.extend([i] * len(mapped))
    return "".join(out), origin


def _scripts(word: str) -> set[str]:
    """The scripts of a word's letters (``{"LATIN"}``, ``{"LATIN", "CYRILLIC"}``)."""
    return {unicodedata.name(c, "?").split(" ")[0] for c in word if c.isalpha()}


def _cardinal(parts: list[str]) -> float | None:
    """The value of number words (``["one", "hundred", "twenty"]`` is 120); None when they do not form one."""
    total, current, seen = 0.0, 0.0, False
    for part in parts:
        if part in _UNITS or part in _TENS:
            current += _UNITS.get(part, _TENS.get(part, 0))
            seen = True
        elif part == "hundred":
            current = (current or 1) * 100
            seen = True
        elif part in _SCALE_WORDS:
            total += (current or 1) * _SCALE_WORDS[part]
            current, seen = 0.0, True
        elif part == "dozen":
            current = (current or 1) * 12
            seen = True
        else:
            return None
    return total + current if seen else None


def _is_number_word(word: str) -> bool:
    return word in _UNITS or word in _TENS or word in _SCALE_WORDS or word == "dozen"


def find_numbers(text: str, documents: Iterable[str] = ()) -> list[NumberMention]:
    """Every number ``text`` states, in order, with the reference that follows each (the module's rules).

    Args:
        text: prose (Markdown paragraphs).
        documents: the report's document names (``3M_2018_10K``); they and the company part of
            each that has a digit (``3M``) are names, not numbers.

    Returns:
        The mentions; exempt tokens (dates, form names, page numbers ...) are left out.
    """
    return _Reader(text, documents).read()


def _mask_names(norm: str, documents: Iterable[str]) -> str:
    """``norm`` with the report's document names and digit-bearing company names blanked out."""
    names = {d for d in documents if d}
    companies = {m[1] for d in names if (m := re.match(r"^(.+?)_(?:FY)?\d{4}", d)) and re.search(r"\d", m[1])}
    for name in sorted(names, key=len, reverse=True):
        norm = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", lambda m: " " * len(m[0]), norm)
    for name in sorted(companies, key=len, reverse=True):
        norm = re.sub(rf"(?<![\w$.,-]){re.escape(name)}(?![\w%-])", lambda m: " " * len(m[0]), norm)  # 3M, not 3m
    return norm


def _is_period(token: _Token) -> bool:
    return token.kind == "ident" and _PERIOD.fullmatch(token.text) is not None


def _is_year(token: _Token) -> bool:
    return re.fullmatch(r"(?:FY)?(?:19\d\d|20\d\d|2100)", token.text) is not None


class _Reader:
    """One pass over a text's tokens, turning them into mentions (``find_numbers``)."""

    def __init__(self, text: str, documents: Iterable[str]) -> None:
        self.text = text
        norm, self.origin = _normalise(text)
        self.origin.append(len(text))
        self.masked = _mask_names(norm, documents)
        self.tokens = [_Token(m.lastgroup or "", m.start(), m.end(), m[0], m) for m in _TOKEN.finditer(self.masked)]
        self.mentions: list[NumberMention] = []
        self.exempt: set[int] = set()  # plain numbers taken as years, days, pages or notes (for "2019 to 2023")

    def read(self) -> list[NumberMention]:
        i = 0
        while i < len(self.tokens):
            tok = self.tokens[i]
            if tok.kind in ("ref", "date", "form"):
                i += 1
            elif tok.kind == "url":
                i = self.add(i, i, None, why="a number inside a URL cannot cite a figure") if re.search(r"\d", tok.text) else i + 1
            elif tok.kind == "mark":
                i = self.add(i, i, unicodedata.numeric(self.text[self.origin[tok.start]], None),
                             why="a numeric symbol cannot cite a figure; write the figure as the report shows it")
            elif tok.kind == "digits":
                i = self.add(i, i, float(tok.text))
            elif tok.kind == "pctsign":
                i = self.add(i, i, None, why=_NO_NUMBER)
            elif tok.kind == "num":
                i = self.number(i)
            elif tok.kind == "ident":
                i = self.identifier(i)
            else:
                i = self.words(i)
        return self.mentions

    # -- helpers over token indexes
    def gap(self, a: int, b: int) -> str | None:
        """The text between tokens a and b (None when either is out of range)."""
        return self.masked[self.tokens[a].end:self.tokens[b].start] if 0 <= a < b < len(self.tokens) else None

    def spaced(self, a: int, b: int) -> bool:
        """Tokens a and b are separated by spaces only (on one line or two)."""
        between = self.gap(a, b)
        return between is not None and between.strip(" ") == "" or between == "\n"

    def gap_is(self, a: int, b: int, allowed: str, need: bool = False) -> bool:
        """The text between tokens a and b is at most 3 of ``allowed`` (with a non-space one when ``need``)."""
        between = self.gap(a, b)
        return (between is not None and len(between) <= 3 and all(c in allowed for c in between)
                and (bool(between.strip(" ")) or not need))

    def word(self, i: int) -> str:
        """Token i in lower case when it is a word or an identifier, else ""."""
        return self.tokens[i].lower if 0 <= i < len(self.tokens) and self.tokens[i].kind in ("word", "ident") else ""

    def month(self, i: int) -> bool:
        """Token i is a month name, capitalised (``May``, ``Dec``; not the verb "may")."""
        return self.word(i) in _MONTHS and self.tokens[i].text[0].isupper()

    def add(self, first: int, last: int, value: float | None, **kw: Any) -> int:
        """Record tokens[first..last] as one mention, with the reference that follows it; returns the next index."""
        tokens, nxt = self.tokens, last + 1
        ref = ref_end = None
        if nxt < len(tokens) and tokens[nxt].kind == "ref" and tokens[nxt].text != "[F*n*]" and self.spaced(last, nxt):
            ref, ref_end = tokens[nxt].text[2:-1], self.origin[tokens[nxt].end]
            nxt += 1
        start, end = self.origin[tokens[first].start], self.origin[tokens[last].end - 1] + 1
        shown = self.text[start:ref_end if ref_end is not None else end]
        self.mentions.append(NumberMention(shown, start, end, value, ref=ref, ref_end=ref_end, **kw))
        return nxt

    def trailing(self, i: int) -> tuple[int, float, bool, float]:
        """Scale and percent words after token i: ``(last token used, scale, percent, divisor)`` (bps: divisor 100)."""
        last, scale, percent, divisor = i, 1.0, False, 1.0
        j = i + 1
        if self.spaced(last, j) and self.word(j) in _SCALE_AFTER:
            scale, last, j = _SCALE_AFTER[self.word(j)], j, j + 1
        if self.spaced(last, j):
            w, after = self.word(j), self.word(j + 1)
            if w in ("percent", "pct", "pp") or (w == "percentage" and after in ("point", "points")):
                percent, last = True, j + (w == "percentage")
            elif w == "per" and after == "cent" and self.spaced(j, j + 1):
                percent, last = True, j + 1
            elif w in ("bps", "bp") or (w == "basis" and after in ("point", "points") and self.spaced(j, j + 1)):
                percent, divisor, last = True, 100.0, j + (w == "basis")
            elif w == "times":
                last = j
        return last, scale, percent, divisor

    # -- the token kinds
    def number(self, i: int) -> int:
        """Digits (``num``): a mention with sign, currency, percent and scale, or an exempt year/day/page/note."""
        m = self.tokens[i].match
        body, suffix = m["body"], m["suf"] or ""
        negative = bool(m["open"] and (m["close"] or m["close2"])) or m["sign"] == "-"
        ambiguous = bool(re.fullmatch(r"\d{1,3}(?:\.\d{3})+,\d+|\d+,\d{1,2}", body))
        value = None if ambiguous else float(re.sub(r"[,_ ']", "", body)) * (-1 if negative else 1)
        decimals = len(body.split(".")[1]) if "." in body and not ambiguous else 0
        scale = _SUFFIX_SCALE.get(suffix.lower(), 1.0) if suffix not in ("x", "X", "pp", "bps", "bp") else 1.0
        divisor = 100.0 if suffix in ("bps", "bp") else 1.0
        percent = bool(m["pct"]) or suffix == "pp" or divisor == 100.0
        if (m[0] in ("3M", "6M", "9M", "12M") and i + 1 < len(self.tokens) and self.tokens[i + 1].kind == "date"
                and self.gap_is(i, i + 1, " ")):
            return i + 1  # a period of months ending on a date, as the store labels it: 6M 2022-07-30
        last = i
        if not suffix and not m["pct"]:
            last, scale, percent, divisor = self.trailing(i)
        plain = (not m["sign"] and not m["cur"] and not suffix and not m["pct"] and last == i and not m["close2"]
                 and re.fullmatch(r"\d+", body) is not None and bool(m["open"]) == bool(m["close"]))  # "(2023)" or "2023"
        cited = i + 1 < len(self.tokens) and self.tokens[i + 1].kind == "ref" and self.spaced(i, i + 1)
        if plain and not cited and len(body) <= 4 and self.exempt_number(int(body), len(body), bool(m["open"]), i):
            self.exempt.add(i)
            return i + 1
        if value is not None and divisor != 1.0:  # basis points: 960 bps is 9.6% (one decimal), 25 bps 0.25%
            zeros = len(body) - len(body.rstrip("0")) if "." not in body else 0
            value, decimals = value / divisor, max(0, decimals + 2 - zeros)
        why = "a decimal comma or point grouping is ambiguous: write it as the report prints it (1,234.5)" if ambiguous else ""
        return self.add(i, last, value, decimals=decimals, scale=scale, percent=percent,
                        signed=bool(m["sign"]) or negative, why=why)

    def exempt_number(self, n: int, digits: int, parenthesised: bool, i: int) -> bool:
        """Rules 5-7: a plain integer that is a year, a day of the month, or a page/note/item number."""
        tokens, prev = self.tokens, self.word(i - 1)
        after_word = self.gap_is(i - 1, i, " .")
        # the token this one continues in a list or range: "2019 to 2023", "pages 60 and 61", "2019-2023", "pp. 60–62"
        anchor = None
        if prev in _CONNECTORS and self.gap_is(i - 2, i - 1, " ") and self.gap_is(i - 1, i, " "):
            anchor = i - 2
        elif self.gap_is(i - 1, i, " –-/", need=True) or (self.gap_is(i - 1, i, ", ", need=True) and _is_year(tokens[i - 1])):
            anchor = i - 1
        anchored = anchor is not None and anchor >= 0 and (anchor in self.exempt or _is_period(tokens[anchor]))
        if digits == 4 and 1900 <= n <= 2100:
            if parenthesised:
                return True
            if after_word and (prev in _YEAR_WORDS or self.month(i - 1) or _is_period(tokens[i - 1])):
                return True
            if self.month(i - 2) and (i - 1) in self.exempt and self.gap_is(i - 1, i, ", "):
                return True  # May 31, 2023
            if anchored and anchor is not None and _is_year(tokens[anchor]):
                return True
        month_next = (self.month(i - 1) and self.gap_is(i - 1, i, " ")) or (self.month(i + 1) and self.gap_is(i, i + 1, " "))
        if 1 <= n <= 31 and digits <= 2 and month_next:
            return True
        limit = _PAGE_WORDS.get(prev) or _NOTE_WORDS.get(prev)
        if limit and after_word and 1 <= n <= limit:
            return True
        if anchored and anchor is not None and digits <= 3 and tokens[anchor].kind == "num" and not _is_year(tokens[anchor]):
            return 1 <= n <= 999  # pages 60 and 61, pp. 60-62, notes 7 and 8
        return False

    def identifier(self, i: int) -> int:
        """A word with a digit or ``_``: a period label, a day (``31st``), an item (``7A``), or a number that cannot be cited."""
        text = self.tokens[i].text
        if _PERIOD.fullmatch(text):
            return i + 1
        ordinal = re.fullmatch(r"(\d{1,2})(?:st|nd|rd|th)", text)
        month_next = ((self.month(i - 1) and self.gap_is(i - 1, i, " ")) or (self.month(i + 1) and self.gap_is(i, i + 1, " "))
                      or (self.word(i + 1) == "of" and self.month(i + 2)))
        if ordinal and 1 <= int(ordinal[1]) <= 31 and month_next:
            self.exempt.add(i)
            return i + 1
        if re.fullmatch(r"\d{1,2}[A-D]", text) and self.word(i - 1) in ("item", "items") and self.gap_is(i - 1, i, " "):
            return i + 1
        return self.add(i, i, float(ordinal[1]) if ordinal else None, why=(
            f"{text} is not a name this check knows (a fiscal year is FY and four digits, a period Q1-Q4 or H1-H2, a document "
            "one of the report's); a number inside a word cannot cite a figure"))

    def words(self, i: int) -> int:
        """A word: number words from here (``ninety-five percent``, ``a third``, ``twice``), or the next index."""
        tok = self.tokens[i]
        lower, parts = tok.lower, tok.lower.split("-")
        if len(_scripts(tok.text)) > 1:
            return self.add(i, i, None, why="a word mixing letters of two scripts cannot be read; write it in one script")
        if lower in ("a", "an"):  # "one" before a scale, a dozen or a fraction: a million, a dozen, a third, a quarter of
            nxt = self.word(i + 1).split("-")[0]
            quantity = (nxt in _SCALE_WORDS or nxt == "dozen" or nxt in _DENOMINATORS and not nxt.endswith("s")
                        and (nxt != "quarter" or self.word(i + 2) == "of"))
            return self.phrase(i + 1, i, implicit_one=True) if quantity and self.spaced(i, i + 1) else i + 1
        if lower in _MULTIPLES:
            return self.add(i, i, float(_MULTIPLES[lower]))
        if lower in ("percent", "pct", "bps") or (lower == "cent" and self.word(i - 1) == "per"):
            return self.add(i, i, None, why=_NO_NUMBER)  # XCV percent: a number this check cannot read
        if lower in _VAGUE:
            return self.add(i, i, None, why="a vague quantity cannot cite a figure; state the figure as the report shows it")
        if parts[0] == "half":
            period = (self.word(i - 1) in ("first", "second") or parts[1:2] in (["year"], ["yearly"])
                      or self.word(i + 1) in ("year", "yearly"))
            return i + 1 if period else self.add(i, i, 0.5)  # first half, half-year: a period
        compound = len(parts) == 2 and parts[0] in _TENS and parts[1] in _ORDINALS
        if lower in _ORDINALS or compound:
            value = _ORDINALS[lower] if lower in _ORDINALS else _TENS[parts[0]] + _ORDINALS[parts[1]]
            if self.word(i + 1) == "percentile" or lower not in _SMALL_ORDINALS:
                return self.add(i, i, float(value))
            return i + 1  # the third year, the fourth quarter: a position
        if any(_is_number_word(p) for p in parts):
            return self.phrase(i, i)
        return i + 1

    def phrase(self, i: int, first: int, implicit_one: bool = False) -> int:
        """Number words from token i (the mention starts at token ``first``), with a fraction or percent/scale words."""
        words: list[str] = []
        last = j = i
        denominator = None
        while j < len(self.tokens) and (j == i or self.spaced(j - 1, j)):
            w = self.word(j)
            parts = w.split("-")
            if w and all(_is_number_word(p) for p in parts):
                words += parts
                last, j = j, j + 1
                continue
            if w and len(parts) > 1 and all(_is_number_word(p) for p in parts[:-1]) and parts[-1] in _DENOMINATORS:
                words += parts[:-1]  # one-third, two-thirds
                denominator, last = _DENOMINATORS[parts[-1]], j
                break
            if w and len(parts) > 1 and any(_is_number_word(p) for p in parts):
                words += [p for p in parts if _is_number_word(p)]  # five-year
                last = j
                break
            if w == "and" and words and self.spaced(j, j + 1):
                nxt = self.word(j + 1)
                if nxt and all(_is_number_word(p) for p in nxt.split("-")):
                    j += 1
                    continue  # one hundred and twenty
                if nxt in ("a", "an") and self.word(j + 2) in ("half", "quarter") and self.spaced(j + 1, j + 2):
                    return self.add(first, j + 2, (_cardinal(words) or 0) + 1 / _DENOMINATORS[self.word(j + 2)])
            quarter_ok = w not in ("quarter", "quarters") or implicit_one or self.word(j + 1) == "of"
            if w in _DENOMINATORS and (words or implicit_one) and quarter_ok:
                denominator, last = _DENOMINATORS[w], j  # three quarters of, a third
            break
        value = _cardinal(words or (["one"] if implicit_one else []))
        if value is None:
            return i + 1
        if denominator:
            return self.add(first, last, value / denominator)
        end, scale, percent, divisor = self.trailing(last)
        if words == ["one"] and not implicit_one and end == last:
            return last + 1  # "one of", "one-time": a lone one is not a quantity
        return self.add(first, end, value / divisor, scale=scale, percent=percent)


def narrative_problems(text: str, manifest: list[dict[str, Any]], documents: Iterable[str] | None = None,
                       vague: bool = True) -> list[NarrativeProblem]:
    """The numbers of ``text`` that do not cite a figure of ``manifest`` they match.

    Args:
        text: the prose.
        manifest: the report's figures (``figures.json`` items: ``ref``, ``display``, ``scale``).
        documents: the report's document names; when None they are read from the figures'
            formulas and ``fact_ids`` (only for a manifest the caller wrote itself: the reward
            passes the names from the filings database, since the agent can write figures.json).
        vague: count vague quantities (``dozens``, ``millions``) and a percent word with no
            number; False for a table cell, where ``USD (millions)`` or ``percent`` names a unit.

    Returns:
        One problem per offending number, in order; empty when every number traces.
    """
    if documents is None:
        documents = manifest_documents(manifest)
    figures = {str(f.get("ref")): f for f in manifest if isinstance(f, dict)}
    line_starts = [0] + [k + 1 for k, c in enumerate(text) if c == "\n"]
    problems = []
    for mention in find_numbers(text, documents):
        why = mention.why or _mismatch(mention, figures)
        if not why or (not vague and (mention.why.startswith("a vague quantity") or mention.why == _NO_NUMBER)):
            continue
        line = bisect.bisect_right(line_starts, mention.start) - 1
        hint = ("cite the figure it states right after it, as the report shows it (e.g. 9.6% [F12]; the refs are in "
                "report/figures.json and the report's tables), or leave the number out")
        problems.append(NarrativeProblem(mention.text, line + 1, mention.start - line_starts[line] + 1, why, hint))
    return problems


def _mismatch(mention: NumberMention, figures: dict[str, dict[str, Any]]) -> str:
    """Why ``mention`` does not match the figure it cites ("" when it does)."""
    if mention.ref is None:
        return "no figure reference"
    figure = figures.get(mention.ref)
    if figure is None:
        return f"there is no F{mention.ref}"
    display = figure.get("display")
    shown = f"F{mention.ref} is shown as {display}"
    parsed = _display_value(display)
    if parsed is None or mention.value is None:
        return shown
    amount, decimals, percent = parsed
    if percent != mention.percent:
        return shown
    value = mention.value
    if not mention.signed:
        value, amount = abs(value), abs(amount)
    step = 10.0 ** -decimals
    if mention.scale != 1.0:
        scale = figure.get("scale")
        if percent or not isinstance(scale, (int, float)) or isinstance(scale, bool) or scale <= 0 or not math.isfinite(scale):
            return shown
        value, amount, step, own_step = value * mention.scale, amount * scale, step * scale, 10.0 ** -mention.decimals * mention.scale
    else:
        own_step = 10.0 ** -mention.decimals
    if own_step < step * (1 - 1e-9) or abs(value - amount) > step / 2 * (1 + 1e-9):
        return shown
    return ""


def _display_value(display: Any) -> tuple[float, int, bool] | None:
    """``(amount, decimals, percent)`` of a figure's display (``"-1,420"``, ``"9.6%"``), None when it is no number."""
    if not isinstance(display, str):
        return None
    match = re.fullmatch(r"(-?)(\d{1,3}(?:,\d{3})*|\d+)(?:\.(\d+))?(%?)", display.strip())
    if not match:
        return None
    amount = float(match[2].replace(",", "") + ("." + match[3] if match[3] else ""))
    return (-amount if match[1] else amount), len(match[3] or ""), bool(match[4])


def manifest_documents(manifest: list[dict[str, Any]]) -> set[str]:
    """The document names of the facts a manifest's figures rest on (formulas and ``fact_ids``)."""
    from plugins.finance.formula import fact_ids

    names = set()
    for figure in manifest:
        if not isinstance(figure, dict):
            continue
        ids = list(figure.get("fact_ids") or []) + (fact_ids(figure["formula"]) if isinstance(figure.get("formula"), str) else [])
        names.update(str(fid).split(":")[0] for fid in ids)
    return names
