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
