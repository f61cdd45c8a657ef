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
      "camera": true,
      "assembly": {"touch": [["Tabletop", "Leg.FL"]], "on_floor": ["Leg.FL"],
                   "symmetry": {"axis": "x"}, "view": {"min_coverage": 0.05}}
    }

``assembly`` (optional) says how the objects make one thing (``AssemblySpec``: which parts touch,
which reach the floor, whether it must stand, a cavity, a symmetry, what the camera must show);
``plugins/threed/assembly.py`` judges it. Lengths are in ``unit`` (``m``, ``cm`` or ``mm``); tolerances are absolute, per axis, in the same
unit. A missing ``task.json`` means a free-form request: no object is required, and every mesh
in the final scene must be a closed solid with a material.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.api import UserError

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


class CavitySpec(BaseModel):
    """A part that must hold liquid poured in from above (a mug, a vase, a bowl)."""

    model_config = ConfigDict(extra="forbid")
    part: str = Field(min_length=1, max_length=63, description="the object that holds it")
    min_volume: float = Field(gt=0, description="least volume held, in the task's unit cubed (cm³ = ml for unit cm)")


class SymmetrySpec(BaseModel):
    """The assembly is its own mirror image across the plane through its bounding-box centre normal to ``axis``."""

    model_config = ConfigDict(extra="forbid")
    axis: Literal["x", "y"]
    tolerance: float = Field(0.005, gt=0, description="largest Chamfer distance to the mirror image, in the task's unit")


class ViewSpec(BaseModel):
    """What the scene camera must show of the assembly."""

    model_config = ConfigDict(extra="forbid")
    min_coverage: float = Field(0.05, gt=0, le=1, description="least fraction of the frame the assembly fills, seen first")
    min_visible: float = Field(0.8, gt=0, le=1, description="least fraction of the assembly's silhouette not hidden by other objects")


class AssemblySpec(BaseModel):
    """How the requested objects make one thing: which parts touch, what stands on the floor, and
    the cavity, symmetry and view the request needs (``plugins.threed.assembly`` judges it).

    ``parts`` defaults to every requested object. Lengths are in the task's unit.
    """

    model_config = ConfigDict(extra="forbid")
    parts: list[str] | None = Field(None, min_length=1, description="the objects that make up the assembly (default: all objects)")
    contact_tolerance: float = Field(0.002, gt=0, description="parts closer than this touch, in the task's unit")
    touch: list[tuple[str, str]] = Field(default_factory=list, description="pairs of parts that must touch")
    connected: bool = Field(True, description="every part is joined to the others through touching parts")
    on_floor: list[str] = Field(default_factory=list, description="parts whose lowest point must be on the floor")
    floor_z: float = Field(0.0, description="the floor's height")
    stands: bool = Field(True, description="the centre of mass is over the support polygon with margin")
    min_tip_angle_deg: float = Field(10.0, gt=0, lt=90, description="least tilt (degrees) that would tip the assembly over")
    cavity: CavitySpec | None = None
    symmetry: SymmetrySpec | None = None
    view: ViewSpec | None = None


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
    assembly: AssemblySpec | None = None

    @model_validator(mode="after")
    def _assembly_names(self) -> TaskSpec:
        if self.assembly is None:
            return self
        known = {o.name for o in self.objects}
        a = self.assembly
        named = list(a.parts or []) + [n for pair in a.touch for n in pair] + list(a.on_floor) + ([a.cavity.part] if a.cavity else [])
        unknown = sorted({n for n in named if n not in known})
        if unknown:
            which = f"{unknown[0]}, which is" if len(unknown) == 1 else f"{', '.join(unknown)}, which are"
            raise ValueError(f"assembly names {which} not in objects ({', '.join(sorted(known)) or 'none'}); "
                             "list every part under objects first")
        same = sorted({x for x, y in a.touch if x == y})
        if same:
            raise ValueError(f"assembly.touch pairs {', '.join(same)} with itself; a pair names two different parts")
        return self

    def assembly_parts(self) -> list[str]:
        """The assembly's part names (all requested objects unless ``assembly.parts`` names some)."""
        if self.assembly and self.assembly.parts:
            return list(self.assembly.parts)
        return [o.name for o in self.objects]

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
        if self.assembly:
            lines.extend(self._describe_assembly())
        return "\n".join(lines)

    def _describe_assembly(self) -> list[str]:
        a, u = self.assembly, self.unit
        lines = [f"The parts {', '.join(self.assembly_parts())} make one object (parts closer than {a.contact_tolerance:g} {u} touch):"]
        if a.touch:
            lines.append("- these pairs touch: " + "; ".join(f"{x} and {y}" for x, y in a.touch))
        if a.connected:
            lines.append("- every part is joined to the rest through touching parts (nothing floats)")
        if a.on_floor:
            lines.append(f"- {', '.join(a.on_floor)} reach the floor at z = {a.floor_z:g} {u}")
        if a.stands:
            lines.append(f"- it stands: its centre of mass is over its footprint on the floor, tipping needs a {a.min_tip_angle_deg:g} degree tilt")
        if a.cavity:
            lines.append(f"- {a.cavity.part} holds at least {a.cavity.min_volume:g} {u}³ of water poured from above")
        if a.symmetry:
            lines.append(f"- it is mirror-symmetric across {a.symmetry.axis} (within {a.symmetry.tolerance:g} {u})")
        if a.view:
            lines.append(f"- the camera sees it: at least {a.view.min_coverage:.0%} of the frame, {a.view.min_visible:.0%} of it unhidden")
        return lines


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
        # a check of the whole file has no field to name; pydantic prefixes its message with "Value error, "
        problems = "; ".join((f"{'.'.join(map(str, e['loc']))}: " if e["loc"] else "") + e["msg"].removeprefix("Value error, ")
                             for e in exc.errors())
        raise UserError(f"{path} does not describe a 3D task: {problems}") from None
