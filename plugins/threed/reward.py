"""The 3D reward: geometry checks of the final scene against ``task.json``.

Each requested object gets the checks its spec asks for (``exists``, ``closed_solid``,
``dimensions``, ``bodies``, ``materials``, ``face_count``, ``reference``), named
``"<object>/<check>"``; the scene gets ``scene/overall_dimensions``, ``scene/lights`` and
``scene/camera`` when asked. Every check has weight 1 and a value in [0, 1]:

    reward = sum(value) / number of checks            passed = every check passed

With no ``task.json`` (a free-form request), every visible mesh must be a closed solid with a
material (``<object>/closed_solid``, ``<object>/materials``), and an empty scene scores 0.
``REWARD_VERSION`` is stored with every verdict and changes whenever this definition does
(2: meshes welded at ``checks.MERGE_DISTANCE_M`` before the checks, OBJ objects kept apart,
bodies joined through non-manifold edges too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import trimesh

from core.reward import RewardComponent, RewardResult
from plugins.threed import checks
from plugins.threed.checks import Check
from plugins.threed.spec import ObjectSpec, TaskSpec

#: The version of this reward, stored with every verdict (``RewardResult.version``).
REWARD_VERSION = "threed-geometry/2"


def _missing(name: str, spec: ObjectSpec) -> list[Check]:
    wanted = ["closed_solid"] * spec.closed_solid + ["dimensions"] * bool(spec.dimensions) + ["bodies"] * bool(spec.bodies)
    wanted += ["materials"] * bool(spec.materials) + ["face_count"] * bool(spec.max_faces) + ["reference"] * bool(spec.reference)
    return [Check("exists", False, 0.0, f"no object named {name!r} in the scene")] + [
        Check(w, False, 0.0, "object missing") for w in wanted
    ]


def object_checks(spec: ObjectSpec, mesh: trimesh.Trimesh, slots: list[str | None], unit: str, task_folder: Path) -> list[Check]:
    """The checks ``spec`` asks for, on one object's evaluated mesh (world coordinates, metres)."""
    scale = checks.UNIT_TO_M[unit]
    found = [Check("exists", True, 1.0, "present")]
    if spec.closed_solid:
        found.append(checks.closed_solid([mesh]))
    if spec.dimensions:
        found.append(checks.dimensions(mesh, spec.dimensions, spec.tolerance, unit))
    if spec.bodies:
        found.append(checks.bodies([mesh], spec.bodies))
    if spec.materials:
        found.append(checks.materials(slots, spec.materials, mesh.metadata.get("faces_per_slot")))
    if spec.max_faces:
        found.append(checks.face_count(mesh, spec.max_faces))
    if spec.reference:
        try:
            ref = checks.combine(checks.load_parts(task_folder / spec.reference.path, scale))
            found.append(checks.reference(mesh, ref, spec.reference.max_chamfer * scale, spec.reference.min_iou))
        except checks.MeshFileError as exc:
            found.append(Check("reference", False, 0.0, f"reference mesh unusable: {exc}"))
    return found


def load_scene_meshes(exported: dict[str, Any]) -> dict[str, tuple[trimesh.Trimesh, list[str | None]]]:
    """``{object name: (mesh, material slot names)}`` from the worker's ``mesh_data`` answer."""
    out = {}
    for item in exported["meshes"]:
        mesh = checks.load_npz(Path(item["file"]))
        used = np.bincount(np.load(item["file"])["material_index"], minlength=len(item["materials"]))
        mesh.metadata["faces_per_slot"] = used[: len(item["materials"])].tolist()
        out[item["name"]] = (mesh, item["materials"])
    return out


def grade(spec: TaskSpec, exported: dict[str, Any], task_folder: Path) -> RewardResult:
    """Score the scene the worker exported (``ops.mesh_data``) against ``spec``.

    Returns:
        A scored ``RewardResult`` (``REWARD_VERSION``); components are named ``"<object>/<check>"`` and ``"scene/<check>"``,
        each with its message and measurements in ``detail``.
    """
    meshes = load_scene_meshes(exported)
    named: dict[str, Check] = {}
    for obj in spec.objects:
        if obj.name in meshes:
            mesh, slots = meshes[obj.name]
            results = object_checks(obj, mesh, slots, spec.unit, task_folder)
        else:
            results = _missing(obj.name, obj)
        named.update({f"{obj.name}/{c.name}": c for c in results})
    if not spec.objects:  # free-form: every mesh must be a solid with a material
        for name, (mesh, slots) in meshes.items():
            named[f"{name}/closed_solid"] = checks.closed_solid([mesh])
            named[f"{name}/materials"] = checks.materials(slots, [])
        if not meshes:
            named["scene/has_meshes"] = Check("has_meshes", False, 0.0, "the scene has no mesh objects")
    if spec.overall:
        present = [meshes[o.name][0] for o in spec.objects if o.name in meshes]
        if present:
            named["scene/overall_dimensions"] = checks.dimensions(checks.combine(present), spec.overall.dimensions, spec.overall.tolerance, spec.unit)
        else:
            named["scene/overall_dimensions"] = Check("overall_dimensions", False, 0.0, "none of the required objects exists")
    if spec.min_lights:
        n = len(exported["lights"])
        named["scene/lights"] = Check("lights", n >= spec.min_lights, 1.0 if n >= spec.min_lights else 0.0,
                                      f"{n} light(s), asked at least {spec.min_lights}", {"lights": exported["lights"]})
    if spec.camera:
        cam = exported["camera"]
        named["scene/camera"] = Check("camera", cam is not None, 1.0 if cam else 0.0, f"camera {cam}" if cam else "no camera")
    reward = sum(c.value for c in named.values()) / len(named)
    failing = [n for n, c in named.items() if not c.passed]
    if failing:
        first = named[failing[0]]
        summary = f"{len(named) - len(failing)}/{len(named)} checks pass; failing: {', '.join(failing[:6])} ({failing[0]}: {first.message})"
    else:
        summary = f"all {len(named)} checks pass"
    return RewardResult(
        reward=round(reward, 6), correct=not failing, summary=summary, version=REWARD_VERSION,
        components={n: RewardComponent(value=c.value, weight=1.0, detail={"passed": c.passed, "message": c.message, **c.detail})
                    for n, c in named.items()},
    )
