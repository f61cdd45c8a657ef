"""csv-summary: /app/summary.json agrees with /app/sales.csv."""

import csv
import hashlib
import json
from collections import Counter, defaultdict
from pathlib import Path

SALES = Path("/app/sales.csv")
SUMMARY = Path("/app/summary.json")
SALES_SHA256 = "40432e5b7f4386db0acda006644f5aa3e06644ae726f8638afd820d138d8e526"


def expected():
    revenue, units = defaultdict(float), Counter()
    with SALES.open(newline="") as handle:
        for row in csv.DictReader(handle):
            revenue[row["region"]] += int(row["units"]) * float(row["unit_price"])
            units[row["product"]] += int(row["units"])
    top = sorted(units.items(), key=lambda item: (-item[1], item[0]))[0][0]
    return {k: round(v, 2) for k, v in revenue.items()}, round(sum(revenue.values()), 2), top


def test_sales_file_unchanged():
    assert hashlib.sha256(SALES.read_bytes()).hexdigest() == SALES_SHA256


def test_summary_is_a_json_object():
    assert isinstance(json.loads(SUMMARY.read_text()), dict)


def test_revenue_by_region():
    by_region, _, _ = expected()
    got = json.loads(SUMMARY.read_text())["revenue_by_region"]
    assert set(got) == set(by_region)
    for region, value in by_region.items():
        assert abs(got[region] - value) < 0.005, region


def test_total_revenue():
    _, total, _ = expected()
    assert abs(json.loads(SUMMARY.read_text())["total_revenue"] - total) < 0.005


def test_top_product():
    _, _, top = expected()
    assert json.loads(SUMMARY.read_text())["top_product"] == top
