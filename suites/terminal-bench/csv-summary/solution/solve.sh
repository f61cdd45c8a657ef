#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
import json
from collections import Counter, defaultdict

revenue, units = defaultdict(float), Counter()
with open("/app/sales.csv", newline="") as handle:
    for row in csv.DictReader(handle):
        revenue[row["region"]] += int(row["units"]) * float(row["unit_price"])
        units[row["product"]] += int(row["units"])
top = min(units, key=lambda product: (-units[product], product))
summary = {
    "revenue_by_region": {region: round(value, 2) for region, value in sorted(revenue.items())},
    "total_revenue": round(sum(revenue.values()), 2),
    "top_product": top,
}
with open("/app/summary.json", "w") as out:
    json.dump(summary, out, indent=2)
PY
