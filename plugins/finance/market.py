"""Market data through yfinance, behind an adapter that snapshots every response.

Every response is stored as a dated JSON snapshot before it is used::

    SNAPSHOTS/<TICKER>/<kind>/<fetched_at, UTC, YYYYmmddTHHMMSSZ>.json
        {"ticker", "kind", "fetched_at", "source": "yfinance <version>", "params", "data"}

``MarketData(offline=True)`` answers from snapshots alone (tests and CI never touch the
network). Three guards:

- staleness: a snapshot older than ``max_age_days`` at the reference date (``as_of``, else now)
  raises ``StaleMarketData`` unless ``allow_stale`` (the report prints the age either way); a
  snapshot fetched after ``as_of`` is not stale for it, and only its data up to ``as_of`` is used;
- point in time: prices after ``as_of`` are dropped, and a fundamentals column is kept only if
  it was public at ``as_of``: period end plus the SEC filing deadline (Form 10-K: 90 days,
  Form 10-Q: 45 days, the longest deadlines in Regulation S-K for any filer category), since
  Yahoo gives period ends, not filing dates;
- failure: any yfinance error (no network, unknown ticker, a changed API) becomes a
  ``MarketDataError`` with what happened and what to do; callers turn it into an observation.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from core.api import HorizonError, make_dirs, read_regular, write_new

KINDS = ("prices", "income_annual", "income_quarterly")
FILING_LAG_DAYS = {"income_annual": 90, "income_quarterly": 45}


class MarketDataError(HorizonError):
    """Market data could not be had: the fetch failed and no usable snapshot exists."""


class StaleMarketData(MarketDataError):
    """The newest snapshot is older than the staleness limit."""


Fetcher = Callable[[str, str, dict[str, Any]], Any]


def yfinance_fetch(ticker: str, kind: str, params: dict[str, Any]) -> Any:
    """Fetch from Yahoo Finance with the ``yfinance`` package; returns JSON-ready data.

    ``prices``: ``[{"date", "open", "high", "low", "close", "volume"}]`` from ``Ticker.history``
    (``start`` inclusive, ``end`` exclusive, unadjusted). ``income_annual`` /
    ``income_quarterly``: ``{period_end: {line item: value}}`` from ``Ticker.income_stmt`` /
    ``Ticker.quarterly_income_stmt``.

    Raises:
        Exception: whatever yfinance raises (network, parsing); the adapter wraps it.
    """
    import yfinance

    t = yfinance.Ticker(ticker)
    if kind == "prices":
        frame = t.history(start=params["start"], end=params["end"], auto_adjust=False, raise_errors=True)
        return [{"date": idx.date().isoformat(), "open": float(r["Open"]), "high": float(r["High"]), "low": float(r["Low"]),
                 "close": float(r["Close"]), "volume": float(r["Volume"])} for idx, r in frame.iterrows()]
    frame = t.income_stmt if kind == "income_annual" else t.quarterly_income_stmt
    return {col.date().isoformat(): {str(k): (None if math.isnan(float(v)) else float(v)) for k, v in frame[col].items()} for col in frame.columns}


@dataclass
class Snapshot:
    """One stored response: what was asked, when it was fetched, and the data."""

    ticker: str
    kind: str
    fetched_at: datetime
    params: dict[str, Any]
    data: Any
    path: Path


class SnapshotStore:
    """Dated snapshots under one folder (see the module docstring for the layout).

    The folder is usually in the workspace, where a copied task folder may have put anything:
    snapshots are written and read only as regular files below real folders (no link is
    followed), and a snapshot of the wrong shape is skipped like a damaged one.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def save(self, ticker: str, kind: str, params: dict[str, Any], data: Any, fetched_at: datetime, source: str) -> Snapshot:
        """Write a snapshot atomically and return it (links on the way are replaced, not followed)."""
        folder = self.root / ticker.upper() / kind
        self.root.mkdir(parents=True, exist_ok=True)
        make_dirs(folder, self.root)
        path = folder / f"{fetched_at.astimezone(UTC):%Y%m%dT%H%M%SZ}.json"
        body = {"ticker": ticker.upper(), "kind": kind, "fetched_at": fetched_at.astimezone(UTC).isoformat(), "source": source,
                "params": params, "data": data}
        tmp = path.with_suffix(".tmp")
        write_new(tmp, json.dumps(body, indent=1, allow_nan=False))
        os.replace(tmp, path)
        return Snapshot(ticker.upper(), kind, fetched_at, params, data, path)

    def latest(self, ticker: str, kind: str, not_after: datetime | None = None) -> Snapshot | None:
        """The newest readable snapshot fetched no later than ``not_after`` (any, when None)."""
        folder = self.root / ticker.upper() / kind
        real = Path(os.path.realpath(self.root)) / ticker.upper() / kind
        if not folder.is_dir() or Path(os.path.realpath(folder)) != real:
            return None  # missing, or a link on the way out of the snapshot folder
        for path in sorted(folder.glob("*.json"), reverse=True):
            if not re.fullmatch(r"\d{8}T\d{6}Z\.json", path.name):
                continue
            try:
                body = json.loads(read_regular(path))
                fetched = datetime.fromisoformat(body["fetched_at"])
                if fetched.tzinfo is None or not _well_formed(kind, body["data"]):
                    continue
            except (OSError, ValueError, KeyError, TypeError, RecursionError):
                continue  # a damaged snapshot (or a link, a FIFO, JSON nested past the parser's limit) is skipped, not trusted
            if not_after is None or fetched <= not_after:
                return Snapshot(body["ticker"], kind, fetched, body.get("params", {}), body["data"], path)
        return None


def _well_formed(kind: str, data: Any) -> bool:
    """True when ``data`` has the shape ``yfinance_fetch`` returns for ``kind`` (so using it cannot raise)."""
    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    if kind == "prices":
        return isinstance(data, list) and all(
            isinstance(r, dict) and isinstance(r.get("date"), str) and all(number(r.get(k)) for k in ("open", "high", "low", "close", "volume"))
            for r in data)
    if not isinstance(data, dict):
        return False
    for period, items in data.items():
        try:
            date.fromisoformat(period)
        except (TypeError, ValueError):
            return False
        if not isinstance(items, dict) or not all(v is None or number(v) for v in items.values()):
            return False
    return True


@dataclass
class MarketAnswer:
    """Data from the adapter with where it came from.

    Attributes:
        data: prices (list of dicts) or fundamentals (``{period_end: {item: value}}``), point-in-time filtered.
        snapshot: the snapshot file it came from.
        fetched_at: when Yahoo answered.
        age_days: age of the snapshot at the reference date.
        fetched_now: True when this call fetched it (False: from a stored snapshot).
        dropped: columns or rows removed because they were not public at ``as_of``.
    """

    data: Any
    snapshot: Path
    fetched_at: datetime
    age_days: float
    fetched_now: bool
    dropped: list[str]


class MarketData:
    """The market-data adapter.

    Args:
        snapshots: the snapshot folder.
        offline: never call the fetcher; answer from snapshots only.
        max_age_days: the staleness limit, in days, measured at the reference date (``as_of``
            when given, else now).
        fetcher: ``fetch(ticker, kind, params)``; ``yfinance_fetch`` by default.
        now: the clock (UTC), for reproducible runs.
    """

    def __init__(self, snapshots: Path, offline: bool = False, max_age_days: float = 7.0, fetcher: Fetcher | None = None,
                 now: Callable[[], datetime] | None = None) -> None:
        self.store = SnapshotStore(snapshots)
        self.offline = offline
        self.max_age_days = max_age_days
        self.fetcher = fetcher or yfinance_fetch
        self.now = now or (lambda: datetime.now(UTC))

    def _get(self, ticker: str, kind: str, params: dict[str, Any], as_of: date | None, allow_stale: bool) -> tuple[Snapshot, bool]:
        reference = datetime.combine(as_of, datetime.max.time(), UTC) if as_of else self.now()
        error = ""
        if not self.offline:
            try:
                data = self.fetcher(ticker, kind, params)
                if not data:
                    raise ValueError("empty response (unknown ticker, or no data for the dates)")
                import yfinance

                snap = self.store.save(ticker, kind, params, data, self.now(), f"yfinance {yfinance.__version__}")
                return snap, True
            except Exception as exc:  # noqa: BLE001 - any provider failure (network, API change) becomes data
                error = f"yfinance failed for {ticker} {kind}: {type(exc).__name__}: {str(exc)[:200]}"
        snap = self.store.latest(ticker, kind)
        if snap is None:
            where = f"; and no snapshot of {ticker} {kind} is stored in {self.store.root}" if error else \
                f"no snapshot of {ticker} {kind} is stored in {self.store.root} (offline)"
            raise MarketDataError((error + where) if error else where + "; run once with network access to record one")
        age = (reference - snap.fetched_at).total_seconds() / 86400
        if age > self.max_age_days and not allow_stale:
            raise StaleMarketData(f"the newest {ticker} {kind} snapshot ({snap.fetched_at:%Y-%m-%d}) is {age:.0f} days old at "
                                  f"{reference:%Y-%m-%d}, over the {self.max_age_days:g}-day limit; refresh it or allow stale data"
                                  + (f" ({error})" if error else ""))
        return snap, False

    def prices(self, ticker: str, start: date, end: date, as_of: date | None = None, allow_stale: bool = False) -> MarketAnswer:
        """Daily prices from ``start`` (inclusive) to ``end`` (exclusive), none after ``as_of``.

        Raises:
            MarketDataError: fetch failed (or offline) and no snapshot; StaleMarketData: too old.
        """
        params = {"start": start.isoformat(), "end": end.isoformat()}
        snap, fresh = self._get(ticker, "prices", params, as_of, allow_stale)
        rows = [r for r in snap.data if start.isoformat() <= r["date"] < end.isoformat()]
        kept = [r for r in rows if as_of is None or r["date"] <= as_of.isoformat()]
        dropped = [r["date"] for r in rows if r not in kept]
        return MarketAnswer(kept, snap.path, snap.fetched_at, self._age(snap, as_of), fresh, dropped)

    def fundamentals(self, ticker: str, as_of: date, quarterly: bool = False, allow_stale: bool = False) -> MarketAnswer:
        """Income-statement items by period end, keeping only periods public at ``as_of``.

        Raises:
            MarketDataError: fetch failed (or offline) and no snapshot; StaleMarketData: too old.
        """
        kind = "income_quarterly" if quarterly else "income_annual"
        snap, fresh = self._get(ticker, kind, {}, as_of, allow_stale)
        lag = timedelta(days=FILING_LAG_DAYS[kind])
        kept = {p: v for p, v in snap.data.items() if date.fromisoformat(p) + lag <= as_of}
        return MarketAnswer(kept, snap.path, snap.fetched_at, self._age(snap, as_of), fresh, sorted(set(snap.data) - set(kept)))

    def _age(self, snap: Snapshot, as_of: date | None) -> float:
        reference = datetime.combine(as_of, datetime.max.time(), UTC) if as_of else self.now()
        return (reference - snap.fetched_at).total_seconds() / 86400

    def report_section(self, ticker: str, as_of: str | None) -> list[str]:
        """Markdown for a report: last close and 52-week range from snapshots, or why there is none.

        Market figures come from snapshots, not filings; they are listed with the snapshot file
        and date instead of a filing page.
        """
        day = date.fromisoformat(as_of) if as_of else self.now().date()
        md = ["## Market data", ""]
        try:
            answer = self.prices(ticker, day - timedelta(days=365), day + timedelta(days=1), as_of=day, allow_stale=True)
        except MarketDataError as exc:
            return [*md, "Not available: " + str(exc).replace(str(self.store.root), f"{self.store.root.name}/") + ".", ""]
        if not answer.data:
            return md + [f"No {ticker} prices in the year to {day} in snapshot {answer.snapshot.name}.", ""]
        closes = [r["close"] for r in answer.data if not math.isnan(r["close"])]
        last = answer.data[-1]
        line = (f"{ticker} (Yahoo Finance via yfinance; snapshot `{answer.snapshot.name}`, fetched {answer.fetched_at:%Y-%m-%d}, "
                f"{answer.age_days:.0f} days before the report date): last close {last['close']:.2f} on {last['date']}, "
                f"52-week range {min(closes):.2f} to {max(closes):.2f}. Nothing after {day} is used.")
        return [*md, line, ""]
