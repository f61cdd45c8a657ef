"""The market-data adapter: snapshots, offline runs, staleness, point-in-time fundamentals, failures.

No test touches the network. Snapshots are written by the adapter itself from data these tests
make up (prices of a fictitious ticker "TEST"); a yfinance outage is reproduced with a fetcher
that raises the error requests raises when a host cannot be reached.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from plugins.finance.market import MarketData, MarketDataError, SnapshotStore, StaleMarketData

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PRICES = [{"date": f"2026-11-{d:02d}", "open": 10.0 + d, "high": 11.0 + d, "low": 9.0 + d, "close": 10.5 + d, "volume": 1e6}
          for d in range(2, 28)]
INCOME = {"2026-09-30": {"Total Revenue": 120.0}, "2026-06-30": {"Total Revenue": 110.0}, "2025-12-31": {"Total Revenue": 400.0}}


def offline_error(*_):
    raise ConnectionError("HTTPSConnectionPool(host='query2.finance.yahoo.com'): Max retries exceeded")


def recorded(tmp_path, fetched=NOW):
    SnapshotStore(tmp_path).save("TEST", "prices", {"start": "2026-11-01", "end": "2026-11-28"}, PRICES, fetched, "test fixture")
    SnapshotStore(tmp_path).save("TEST", "income_quarterly", {}, INCOME, fetched, "test fixture")
    return tmp_path


def test_every_response_is_snapshotted_and_replayed_offline(tmp_path):
    calls = []

    def fetch(ticker, kind, params):
        calls.append((ticker, kind))
        return PRICES

    online = MarketData(tmp_path, fetcher=fetch, now=lambda: NOW)
    first = online.prices("TEST", date(2026, 11, 1), date(2026, 11, 28))
    assert first.fetched_now and first.snapshot.is_file() and first.snapshot.parent == tmp_path / "TEST" / "prices"
    offline = MarketData(tmp_path, offline=True, fetcher=offline_error, now=lambda: NOW)
    again = offline.prices("TEST", date(2026, 11, 1), date(2026, 11, 28))
    assert not again.fetched_now and again.data == first.data and calls == [("TEST", "prices")]


def test_prices_after_the_report_date_are_not_used(tmp_path):
    market = MarketData(recorded(tmp_path), offline=True, now=lambda: NOW)
    answer = market.prices("TEST", date(2026, 11, 1), date(2026, 11, 28), as_of=date(2026, 11, 20))
    assert answer.data[-1]["date"] == "2026-11-20" and "2026-11-21" in answer.dropped


def test_fundamentals_are_limited_to_what_was_public(tmp_path):
    market = MarketData(recorded(tmp_path), offline=True, now=lambda: NOW)
    # on 2026-11-10 the quarter ended 2026-09-30 may not be filed yet (10-Q deadline: 45 days)
    answer = market.fundamentals("TEST", as_of=date(2026, 11, 10), quarterly=True)
    assert set(answer.data) == {"2026-06-30", "2025-12-31"} and answer.dropped == ["2026-09-30"]
    later = market.fundamentals("TEST", as_of=date(2026, 11, 15), quarterly=True)
    assert "2026-09-30" in later.data


def test_stale_snapshots_are_refused_unless_allowed(tmp_path):
    market = MarketData(recorded(tmp_path, fetched=datetime(2026, 10, 1, tzinfo=UTC)), offline=True, max_age_days=7, now=lambda: NOW)
    with pytest.raises(StaleMarketData, match="60 days old"):
        market.prices("TEST", date(2026, 9, 1), date(2026, 11, 28))
    assert market.prices("TEST", date(2026, 9, 1), date(2026, 11, 28), allow_stale=True).age_days == pytest.approx(60.5)


def test_a_yfinance_failure_falls_back_to_snapshots_or_says_what_to_do(tmp_path):
    with_snapshot = MarketData(recorded(tmp_path / "a"), fetcher=offline_error, now=lambda: NOW)
    assert with_snapshot.prices("TEST", date(2026, 11, 1), date(2026, 11, 28)).data == PRICES
    nothing = MarketData(tmp_path / "b", fetcher=offline_error, now=lambda: NOW)
    with pytest.raises(MarketDataError, match="yfinance failed for TEST prices: ConnectionError.*no snapshot"):
        nothing.prices("TEST", date(2026, 11, 1), date(2026, 11, 28))
    with pytest.raises(MarketDataError, match="offline.*run once with network access"):
        MarketData(tmp_path / "b", offline=True).prices("TEST", date(2026, 11, 1), date(2026, 11, 28))


def test_damaged_snapshots_are_skipped(tmp_path):
    recorded(tmp_path, fetched=datetime(2026, 11, 29, tzinfo=UTC))
    (tmp_path / "TEST" / "prices" / "20261130T000000Z.json").write_text("{not json")
    answer = MarketData(tmp_path, offline=True, now=lambda: NOW).prices("TEST", date(2026, 11, 1), date(2026, 11, 28))
    assert answer.snapshot.name == "20261129T000000Z.json"


def test_report_section_cites_the_snapshot_or_the_reason(tmp_path):
    market = MarketData(recorded(tmp_path), offline=True, now=lambda: NOW)
    text = "\n".join(market.report_section("TEST", "2026-11-20"))
    assert "last close 30.50 on 2026-11-20" in text and "20261130T120000Z.json" in text
    missing = "\n".join(MarketData(tmp_path / "none", offline=True).report_section("MMM", "2019-02-07"))
    assert "Not available" in missing and "no snapshot of MMM prices" in missing
