"""The scene task folder's ``task.json``: what the user asked for, in checkable terms.

Example (``examples/threed/low-table/task.json``)::

    {
      "scene": "scene.blend",
      "unit": "m",
      "objects": [
        {"name": "Tabletop", "dimensions": [1.2, 0.6, 0.04], "tolerance": 0.005,
         "materials": ["Oak"], "max_faces": 5000}
      ],
      "overall": {"dimensions": [1.2, 0.6, 0.45], "tolerance": 0.005},
      "min_lights": 1,
      "camera": true
    }

Lengths are in ``unit`` (``m``, ``cm`` or ``mm``); tolerances are absolute, per axis, in the same
unit. A missing ``task.json`` means a free-form request: no object is required, and every mesh
in the final scene must be a closed solid with a material.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.errors import UserError

SPEC_FILE = "task.json"


class ReferenceSpec(BaseModel):
    """A reference mesh the object should match (path relative to the task folder)."""

    model_config = ConfigDict(extra="forbid")
    path: str
    max_chamfer: float = Field(0.005, gt=0, description="largest symmetric Chamfer distance allowed, in the task's unit")
    min_iou: float = Field(0.8, ge=0, le=1, description="smallest filled-voxel IoU allowed")


class ObjectSpec(BaseModel):
    """One requested object and what it must satisfy."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=63)
    description: str = ""
    dimensions: list[float | None] | None = Field(None, min_length=3, max_length=3, description="x, y, z bounding sizes")
    tolerance: float = Field(0.005, ge=0)
    closed_solid: bool = True
    bodies: int | None = Field(1, ge=1)
    materials: list[str] = Field(default_factory=list)
    max_faces: int | None = Field(None, ge=1)
    reference: ReferenceSpec | None = None


class OverallSpec(BaseModel):
    """Bounding sizes of all requested objects together (e.g. a table's height including its legs)."""

    model_config = ConfigDict(extra="forbid")
    dimensions: list[float | None] = Field(min_length=3, max_length=3)
    tolerance: float = Field(0.005, ge=0)


class TaskSpec(BaseModel):
    """The whole ``task.json``."""

    model_config = ConfigDict(extra="forbid")
    request: str = ""
    scene: str = "scene.blend"
    unit: Literal["m", "cm", "mm"] = "m"
    objects: list[ObjectSpec] = Field(default_factory=list)
    overall: OverallSpec | None = None
    min_lights: int = Field(0, ge=0)
    camera: bool = False

    def describe(self) -> str:
        """The requirements as text for the task message."""
        lines = [f"The scene is saved in {self.scene} after every change. Lengths are in {self.unit}."]
        if self.objects:
            lines.append("Required objects (exact names; dimensions are the world-axis bounding box x, y, z):")
        else:  # no task.json: nothing in the request can be checked, and the user should know it
            lines.append("No objects are specified (no task.json): only generic checks (closed solids, materials) score the scene.")
        for o in self.objects:
            parts = [f"- {o.name}"]
            if o.description:
                parts.append(f"({o.description})")
            if o.dimensions:
                dims = " x ".join("any" if d is None else f"{d:g}" for d in o.dimensions)
                parts.append(f"dimensions {dims} {self.unit} ± {o.tolerance:g}")
            if o.closed_solid:
                parts.append("closed solid")
            if o.bodies:
                parts.append(f"{o.bodies} bod{'y' if o.bodies == 1 else 'ies'}")
            if o.materials:
                parts.append("material " + ", ".join(o.materials))
            if o.max_faces:
                parts.append(f"at most {o.max_faces} triangles")
            if o.reference:
                parts.append(f"matches the reference mesh {o.reference.path}")
            lines.append(" ".join(parts))
        if self.overall:
            dims = " x ".join("any" if d is None else f"{d:g}" for d in self.overall.dimensions)
            lines.append(f"All required objects together: {dims} {self.unit} ± {self.overall.tolerance:g}.")
        if self.min_lights:
            lines.append(f"At least {self.min_lights} light(s).")
        if self.camera:
            lines.append("A camera framing the objects.")
        return "\n".join(lines)


def load_spec(folder: Path) -> TaskSpec:
    """Read ``folder/task.json``; a missing file gives the free-form default.

    Raises:
        UserError: the file is not valid JSON or does not match ``TaskSpec`` (the problems are listed).
    """
    path = Path(folder) / SPEC_FILE
    if not path.is_file():
        return TaskSpec()
    try:
        return TaskSpec.model_validate(json.loads(path.read_text()))
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}); fix the file") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise UserError(f"{path} does not describe a 3D task: {problems}") from None
