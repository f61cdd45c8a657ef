"""The ``market_data`` tool: prices and point-in-time fundamentals from the adapter, failures as observations.

Snapshots live in the workspace folder named by ``task.json``'s ``market.snapshots`` (default
``market/``), so a run's recorded responses travel with its patch and a later run can replay
them offline. ``HORIZON_FINANCE_OFFLINE=1`` forces snapshot-only mode.
"""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, Field

from core.api import ToolContext, ToolError, ToolResult, tool
from plugins.finance.episode import EpisodeFiles
from plugins.finance.market import MarketData, MarketDataError


class MarketArgs(BaseModel):
    ticker: str = Field("", description="ticker symbol; empty for the task's ticker")
    kind: Literal["prices", "fundamentals"] = Field("prices", description="daily prices, or income-statement items by period")
    as_of: str = Field("", description="report date YYYY-MM-DD: nothing published after it is used; empty for today")
    days: int = Field(365, ge=1, le=3660, description="for prices: how many days before as_of")
    quarterly: bool = Field(False, description="for fundamentals: quarterly instead of annual periods")
    allow_stale: bool = Field(False, description="accept a snapshot older than the staleness limit")


@tool
def market_data(args: MarketArgs, ctx: ToolContext) -> ToolResult:
    """Get market data from Yahoo Finance (yfinance), stored as dated snapshots: daily prices up to the report date, or fundamentals limited to periods already public then. When the provider fails, the newest snapshot is used; if there is none, the error says so.

    Returns a result whose ``data`` is ``{"snapshot", "fetched_now", "rows"}``.
    """
    spec = EpisodeFiles(ctx).load_task()
    ticker = (args.ticker or spec.ticker or "").strip().upper()
    if not ticker:
        raise ToolError("no ticker: give one, or set 'ticker' in task.json")
    try:
        as_of = date.fromisoformat(args.as_of) if args.as_of else datetime.now(UTC).date()
    except ValueError:
        raise ToolError(f"as_of {args.as_of!r} is not a date; use YYYY-MM-DD") from None
    settings = spec.market or {}
    offline = bool(settings.get("offline", False)) or os.environ.get("HORIZON_FINANCE_OFFLINE") == "1"
    market = MarketData(ctx.resolve(settings.get("snapshots", "market")), offline=offline,
                        max_age_days=float(settings.get("max_age_days", 7)))
    try:
        if args.kind == "prices":
            answer = market.prices(ticker, as_of - timedelta(days=args.days), as_of + timedelta(days=1), as_of=as_of,
                                   allow_stale=args.allow_stale)
            rows = answer.data
            body = "\n".join(f"{r['date']}  close {r['close']:.2f}  volume {r['volume']:,.0f}" for r in rows[-15:])
            head = f"{ticker}: {len(rows)} daily prices to {as_of} (last 15 shown)"
        else:
            answer = market.fundamentals(ticker, as_of, quarterly=args.quarterly, allow_stale=args.allow_stale)
            rows = answer.data
            body = "\n".join(f"{period}: " + ", ".join(f"{k}={v:,.0f}" for k, v in list(items.items())[:8] if v is not None)
                             for period, items in sorted(rows.items()))
            head = f"{ticker}: {len(rows)} periods public at {as_of}" + (f" (not yet public: {', '.join(answer.dropped)})" if answer.dropped else "")
    except MarketDataError as exc:
        raise ToolError(f"market data unavailable: {exc}") from None
    source = f"snapshot {answer.snapshot.name} fetched {answer.fetched_at:%Y-%m-%d %H:%M} UTC ({'now' if answer.fetched_now else f'{answer.age_days:.0f} days old'})"
    return ToolResult(output=f"{head}; {source}\n{body}", data={"snapshot": answer.snapshot.name, "fetched_now": answer.fetched_now,
                                                                "rows": len(rows)})
