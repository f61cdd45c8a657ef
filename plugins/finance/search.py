"""Ranking filing pages by relevance to a query: Okapi BM25 over the page text.

BM25 (Robertson and Zaragoza, 2009, "The Probabilistic Relevance Framework: BM25 and Beyond")
scores a page by each query term's inverse document frequency, saturated by the term's count on
the page and normalised by the page's length (k1 = 1.5, b = 0.75, the usual defaults), so that
a page that says "segment revenue" many times outranks one of 30 pages that merely contain both
words. The scoring is the ``bm25s`` library's (Lucene's variant); words are lower-cased, English
stop words dropped and stemmed with the Snowball English stemmer (``snowballstemmer``), so that
"revenues" matches "revenue". Numbers (years, amounts) are kept as terms.

The index is built from the pages given and kept in memory for the next query over the same
pages (``INDEX_CACHE`` indexes, keyed by a SHA-256 of the pages), since a filing's pages do not
change within an episode; nothing is written.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from dataclasses import dataclass
from functools import cache, lru_cache

import bm25s
import snowballstemmer

#: How many page sets keep their index in memory (an episode searches one set of filings).
INDEX_CACHE = 4
_indexes: OrderedDict[str, bm25s.BM25] = OrderedDict()

#: Terms as ``bm25s`` finds them (two or more word characters), plus single digits (a "3" in "Q3").
TOKEN_PATTERN = r"(?u)\b\w\w+\b|\b\d\b"


@dataclass
class PageHit:
    """One ranked page.

    Attributes:
        document: the filing's name.
        page: 1-based page number.
        score: the page's BM25 score for the query (higher is more relevant; comparable only
            within one query).
        matched: the query's words found on the page, in query order (as the user wrote them).
        text: the page's text.
    """

    document: str
    page: int
    score: float
    matched: list[str]
    text: str


@cache
def _stemmer() -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer("english")


def _tokenize(texts: list[str]) -> bm25s.tokenization.Tokenized:
    return bm25s.tokenize(texts, token_pattern=TOKEN_PATTERN, stopwords="en", stemmer=_stemmer().stemWords, show_progress=False)


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _stemmer().stemWord(word.lower())


def query_words(query: str) -> list[str]:
    """The words of ``query`` that take part in the ranking (stop words left out), as written."""
    stop = set(bm25s.stopwords.STOPWORDS_EN)
    return [w for w in re.findall(TOKEN_PATTERN, query) if w.lower() not in stop]


def _index(pages: list[tuple[str, int, str]]) -> bm25s.BM25:
    """The BM25 index of ``pages``, from the in-memory cache when the same pages were indexed last."""
    digest = hashlib.sha256()
    for document, page, text in pages:
        digest.update(f"{document}\0{page}\0".encode() + text.encode("utf-8", "surrogatepass") + b"\0")
    key = digest.hexdigest()
    if key in _indexes:
        _indexes.move_to_end(key)
        return _indexes[key]
    retriever = bm25s.BM25()  # k1=1.5, b=0.75 (module docstring)
    retriever.index(_tokenize([text for _, _, text in pages]), show_progress=False)
    _indexes[key] = retriever
    while len(_indexes) > INDEX_CACHE:
        _indexes.popitem(last=False)
    return retriever


def rank_pages(pages: list[tuple[str, int, str]], query: str, limit: int) -> list[PageHit]:
    """The ``limit`` pages most relevant to ``query``, best first (pages matching no query word are left out).

    Args:
        pages: ``(document, 1-based page, text)`` for every page to search.
        query: words, as a person types them ("segment operating income 2022").
        limit: the most pages to return (>= 1).

    Returns:
        ``PageHit`` list, by descending score; ties keep document and page order.
    """
    words = query_words(query)
    if not pages or not words:
        return []
    retriever = _index(pages)
    query_tokens = _tokenize([" ".join(words)])
    if not query_tokens.vocab:  # nothing left after stop words and stemming
        return []
    k = min(limit, len(pages))
    ids, scores = retriever.retrieve(query_tokens, k=k, show_progress=False)
    stems = [(w, _stem(w)) for w in words]
    hits = []
    for index, score in zip(ids[0].tolist(), scores[0].tolist(), strict=True):
        if score <= 0:
            continue
        document, page, text = pages[index]
        page_stems = {_stem(t) for t in re.findall(TOKEN_PATTERN, text)}
        hits.append(PageHit(document, page, round(float(score), 3), [w for w, s in stems if s in page_stems], text))
    hits.sort(key=lambda h: (-h.score, h.document, h.page))
    return hits


def snippet(text: str, matched: list[str], width: int = 400) -> str:
    """About ``width`` characters of ``text`` around the densest cluster of the matched words
    (the window holding the most distinct ones), whitespace collapsed."""
    flat = " ".join(text.split())
    if not matched:
        return flat[:width]
    stems = {_stem(w) for w in matched}
    positions = [(m.start(), _stem(m.group())) for m in re.finditer(TOKEN_PATTERN, flat) if _stem(m.group()) in stems]
    if not positions:
        return flat[:width]
    best, best_count = positions[0][0], 0
    for start, _ in positions:
        count = len({s for p, s in positions if start <= p < start + width})
        if count > best_count:
            best, best_count = start, count
    begin = max(0, best - width // 4)
    return ("…" if begin else "") + flat[begin : begin + width] + ("…" if begin + width < len(flat) else "")
