"""task.json: the defaults, the requirements text, and clear errors for broken files."""

from __future__ import annotations

import json

import pytest

from core.errors import UserError
from plugins.threed.spec import load_spec


def test_missing_task_json_is_a_free_form_task(tmp_path):
    spec = load_spec(tmp_path)
    assert spec.objects == [] and spec.scene == "scene.blend" and spec.unit == "m"


def test_requirements_text_names_every_check(tmp_path):
    (tmp_path / "task.json").write_text(json.dumps({
        "unit": "cm", "objects": [{"name": "Seat", "dimensions": [40, 40, None], "tolerance": 0.5, "materials": ["Oak"], "max_faces": 900}],
        "min_lights": 2, "camera": True,
    }))
    text = load_spec(tmp_path).describe()
    assert "- Seat dimensions 40 x 40 x any cm ± 0.5 closed solid 1 body material Oak at most 900 triangles" in text
    assert "At least 2 light(s)." in text and "A camera" in text and "Lengths are in cm" in text


@pytest.mark.parametrize("content, words", [
    ("{not json", "not valid JSON"),
    (json.dumps({"objects": [{"name": "A", "dimensions": [1, 2]}]}), "objects.0.dimensions"),
    (json.dumps({"objects": [{"name": "A", "colour": "red"}]}), "objects.0.colour: Extra inputs"),
    (json.dumps({"unit": "inch"}), "unit"),
])
def test_broken_task_json_is_a_clear_user_error(tmp_path, content, words):
    (tmp_path / "task.json").write_text(content)
    with pytest.raises(UserError, match=words):
        load_spec(tmp_path)


def test_assembly_section_is_described_and_checks_its_names(tmp_path):
    objects = [{"name": "Seat"}, {"name": "Leg"}]
    (tmp_path / "task.json").write_text(json.dumps({"objects": objects, "assembly": {
        "touch": [["Seat", "Leg"]], "on_floor": ["Leg"], "cavity": {"part": "Seat", "min_volume": 0.001},
        "symmetry": {"axis": "x"}, "view": {"min_coverage": 0.1}}}))
    spec = load_spec(tmp_path)
    text = spec.describe()
    assert spec.assembly_parts() == ["Seat", "Leg"]
    assert "these pairs touch: Seat and Leg" in text and "Leg reach the floor" in text and "tipping needs a 10 degree tilt" in text
    assert "Seat holds at least 0.001 m³" in text and "mirror-symmetric across x" in text and "at least 10% of the frame" in text
    (tmp_path / "task.json").write_text(json.dumps({"objects": objects, "assembly": {"touch": [["Seat", "Backrest"]]}}))
    with pytest.raises(UserError, match="assembly names Backrest, which is not in objects"):
        load_spec(tmp_path)
    (tmp_path / "task.json").write_text(json.dumps({"objects": objects, "assembly": {"touch": [["Seat", "Seat"]]}}))
    with pytest.raises(UserError, match="assembly.touch pairs Seat with itself"):
        load_spec(tmp_path)
    (tmp_path / "task.json").write_text(json.dumps({"objects": objects, "assembly": {"parts": []}}))
    with pytest.raises(UserError, match="assembly.parts"):
        load_spec(tmp_path)
