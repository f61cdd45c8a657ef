"""Fixtures for the finance plugin's tests: the real filings, ingested once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from plugins.finance.ingest import INGESTED, ingest
from plugins.finance.model import create_views
from plugins.finance.store import connect

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / ".." / "shared" / "data"
FILINGS = DATA / "filings"
PDFS = DATA / "pdfs"


def episode_context(database: Path, folder: Path):
    """A tool context under ``folder`` whose scratch holds a copy of the filings ``database`` and an
    empty task (no filings, no ticker), as the finance tools see an episode's files."""
    import shutil

    from core.tools import ToolContext
    from plugins.finance.episode import EpisodeFiles

    context = ToolContext(workspace=folder / "ws", sandbox=None, scratch=folder / "scratch")
    context.workspace.mkdir()
    files = EpisodeFiles(context)
    files.root.mkdir(parents=True)
    shutil.copy(database, files.db)
    files.write_json(files.task, {"filings": [], "ticker": None})
    return context


def need_data() -> None:
    """Skip the calling test when the shared test data is not checked out next to the repository."""
    if not (FILINGS / "questions.jsonl").is_file():
        pytest.skip(f"real filings not found at {FILINGS.resolve()} (../shared/data is not present)")


@pytest.fixture(scope="session")
def finance_cache(tmp_path_factory) -> Path:
    """A parse cache shared by every test of the session (ingestion runs once per filing)."""
    return tmp_path_factory.mktemp("finance-cache")


@pytest.fixture(scope="session")
def filings_db(tmp_path_factory, finance_cache) -> Path:
    """A filings database holding all twelve real filings and the modelling views (open it read-only)."""
    need_data()
    path = tmp_path_factory.mktemp("filings") / "filings.duckdb"
    con = connect(path)
    statuses = ingest(con, sorted(FILINGS.glob("*.pdf")), finance_cache)
    create_views(con)
    con.close()
    assert all(s.status in INGESTED for s in statuses), [s for s in statuses if s.status not in INGESTED]
    return path


def financebench_db(tmp_path_factory, finance_cache: Path, docs: list[str], name: str) -> Path:
    """A filings database (path) of the named ../shared/data/financebench filings (``docs``: file names
    without ``.pdf``) with the modelling views, ingested through the session's parse cache; skips the
    test when the data or a filing is absent."""
    need_data()
    paths = [DATA / "financebench" / f"{d}.pdf" for d in docs]
    if not all(p.is_file() for p in paths):
        pytest.skip("the FinanceBench filings are not in ../shared/data/financebench")
    path = tmp_path_factory.mktemp(name) / "filings.duckdb"
    con = connect(path)
    ingest(con, paths, finance_cache)
    create_views(con)
    con.close()
    return path


def segments_and_revenue(con, doc: str) -> tuple[object, dict[str, float]]:
    """The company report's segment breakdown of one filing (``segments.Breakdown`` or None) and the
    income statement's revenue by fiscal year ($m), as ``company_report`` reads them."""
    from plugins.finance.company_report import company_data
    from plugins.finance.segments import company_breakdowns

    data = company_data(con, [doc])
    revenue = {y: f["revenue"][0] for y, f in data.facts.items() if "revenue" in f}
    income = {y: f["operating_income"][0] for y, f in data.facts.items() if "operating_income" in f}
    revenue_value = {y: con.execute("SELECT value FROM facts WHERE fact_id = ?", [i]).fetchone()[0] for y, i in revenue.items()}
    return company_breakdowns(con, data.docs, revenue, income).get("segment"), revenue_value


@pytest.fixture
def db(filings_db):
    """A read-only connection to the session's filings database."""
    con = connect(filings_db, read_only=True)
    yield con
    con.close()


@pytest.fixture
def use_cache(monkeypatch, finance_cache) -> Path:
    """Point the plugin at the session's parse cache (runs started in the test reuse it)."""
    monkeypatch.setenv("HORIZON_FINANCE_CACHE", str(finance_cache))
    return finance_cache
