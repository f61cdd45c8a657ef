"""The finance plugin: filings parsed into DuckDB with provenance, checked, queried and reported."""
