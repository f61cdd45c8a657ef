"""The finance plugin: filings parsed into DuckDB with provenance, checked, queried and reported."""

from plugins.finance.plugin import FinancePlugin

__all__ = ["FinancePlugin"]
