import json
from pathlib import Path


def test_pretty():
    assert json.loads(Path("/app/pretty.json").read_text()) == json.loads(Path("/app/data.json").read_text())
