"""The 3D reward: geometry checks of the final scene against ``task.json``.

Each requested object gets the checks its spec asks for (``exists``, ``closed_solid``,
``dimensions``, ``bodies``, ``materials``, ``face_count``, ``reference``), named
``"<object>/<check>"``; the scene gets ``scene/overall_dimensions``, ``scene/lights`` and
``scene/camera`` when asked. Every check has a value in [0, 1] and weight 1, except the assembly's (below):

    reward = sum(weight * value) / sum(weight)        passed = every judged check passed

With no ``task.json`` (a free-form request), every visible mesh must be a closed solid with a
material (``<object>/closed_solid``, ``<object>/materials``), and an empty scene scores 0.
``REWARD_VERSION`` is stored with every verdict and changes whenever this definition does
(2: meshes welded at ``checks.MERGE_DISTANCE_M`` before the checks, OBJ objects kept apart,
bodies joined through non-manifold edges too; 3: the whole-object checks below; 4: a run whose
successful tool calls never changed the scene scores 0 (``built_nothing``: the starting scene's
light and camera would otherwise pass a task's light and camera checks for doing nothing), and
a part missing from the scene joins no group of ``assembly/connected``; 5: the look checks below;
6: the look gates the reward, below; 7: the drop test gates it, below; 8: the whole-object checks
derived from the request's words, and every failed whole-object check gates it, below).

The structure the words ask (``plugins.threed.structure``, version 8, with or without an
``assembly``): ``structure/parts`` (the counts the words give), ``distinct`` (no coincident parts,
no fused shelves), ``through`` (no part poking through another; manifold3d boolean volumes),
``connected``, ``on_floor`` and ``cavity`` (a vessel holds something), on the task's objects or,
free-form, every visible mesh a lighting preset did not make. An ``assembly`` adds to them; its
``connected``, ``on_floor`` and ``cavity`` replace the derived ones. They weigh as the assembly's.

The gate (version 8, extending version 7's drop test): when any check in ``GATED`` fails (the
derived ones, ``assembly/connected``, ``on_floor``, ``cavity``, ``physics/stands``),
``reward = GATE_CAP * mean`` (0.25), once however many fail.

Does it stand (``plugins.threed.physics``, when the words name a thing that must stand: a chair,
table, lamp, bookcase, glass...): the worker drops the object on a floor in Blender's rigid body
world (``physics_probe.drop_test``: parts that touch glued into one body, released level and
nudged 5° in 8 directions), and ``physics/stands`` (weight 1) says stands, tipped, fell apart or
did not settle, with the tilt and settle time. A build that does not stand scores
``physics.PHYSICS_CAP`` (0.25) times the mean; otherwise listed as not applicable (weight 0).

The look (``plugins.threed.look``, when the task's words ask a material, a colour or light):
``<object>/material_look`` judges each object's measured base colour, roughness, metallic and
transmission (its node tree evaluated in a small render) against the words' ranges, and
``scene/exposure``, ``key_fill``, ``contact_shadow`` and (a "product shot") ``key_power`` judge
the lighting by what a small render of the camera's view shows, never by lights' names or count.
The look the words ask is a gate, not a share of the average: when any judged look check fails
(a ``material_look``, ``exposure``, ``key_fill``, ``shadow`` or ``key_power`` check; one listed as
not judged does not count), the reward is 0 and the summary names each failing look check with its
measurements; the average above applies only when the requested look holds. Otherwise ~40 passing
geometry checks outweigh them (RH25, docs/security.md: a mirror-pink metal "oak" table lit by two
10 W lights scored 0.948). A task whose words ask no look is scored as before.

The object as a whole (``task.json``'s ``assembly``; ``plugins.threed.assembly``) adds
``assembly/contacts``, ``connected``, ``on_floor``, ``stands``, ``cavity``, ``symmetry`` and
``in_view``. Together they weigh as much as all the other checks together (each has weight
``max(1, n_other / n_assembly)``), so a chair whose legs all stand at its centre, or one hidden
inside a cube, cannot score near 1 on its parts' sizes alone. A check the task file does not ask
for, or every one of them without an ``assembly`` section (a free-form request), is listed as a
component with weight 0, value 0 and ``detail["status"] = "not_applicable"`` saying why: not
judged, never a free 1.0, and named in the summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import trimesh

from core.api import RewardComponent, RewardResult
from plugins.threed import assembly, checks, look, physics, structure
from plugins.threed.checks import Check
from plugins.threed.spec import ObjectSpec, TaskSpec

#: The version of this reward, stored with every verdict (``RewardResult.version``).
REWARD_VERSION = "threed-geometry/8"

#: Whole-object checks that gate the reward (``GATE_CAP``): a build failing any of them scores at most
#: that share of what it would score (coincident or missing parts, a part passing through another, a
#: floating part, a vessel that holds nothing, a thing that does not stand).
GATED = ("structure/parts", "structure/distinct", "structure/through", "structure/connected", "structure/on_floor",
         "structure/cavity", "assembly/connected", "assembly/on_floor", "assembly/cavity", "physics/stands")
#: The cap: ``reward = GATE_CAP * mean`` when a gated check fails (the drop test's ``physics.PHYSICS_CAP``).
GATE_CAP = physics.PHYSICS_CAP


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


#: The whole-object checks (``plugins.threed.assembly``), named ``assembly/<check>``.
ASSEMBLY_CHECKS = ("contacts", "connected", "on_floor", "stands", "cavity", "symmetry", "in_view")


def assembly_checks(spec: TaskSpec, meshes: dict[str, tuple[trimesh.Trimesh, list[str | None]]],
                    exported: dict[str, Any]) -> tuple[dict[str, Check], dict[str, str]]:
    """The whole-object checks ``spec.assembly`` asks for, and why each other one is not judged.

    Returns:
        ``({check name: Check}, {check name: reason not judged})``, together covering ``ASSEMBLY_CHECKS``.
    """
    a = spec.assembly
    if a is None:
        why = ("no task.json states the intended object" if not spec.objects else "task.json has no \"assembly\" section") + \
            " (which parts touch, what stands, cavity, symmetry, view), so this is not judged"
        return {}, {name: why for name in ASSEMBLY_CHECKS}
    scale = checks.UNIT_TO_M[spec.unit]
    tol = a.contact_tolerance * scale
    parts = spec.assembly_parts()
    present = {p: meshes[p][0] for p in parts if p in meshes}
    found: dict[str, Check] = {}
    skipped: dict[str, str] = {}
    distances = assembly.contact_distances(exported.get("contacts", []))
    if a.touch:
        found["contacts"] = assembly.touching_pairs([tuple(t) for t in a.touch], distances, tol)
    else:
        skipped["contacts"] = "task.json names no pairs of parts that must touch"
    if a.connected and len(parts) > 1:
        found["connected"] = assembly.connected(parts, distances, tol, present=set(present))
    else:
        skipped["connected"] = "not asked" if not a.connected else "the assembly has one part"
    if not present:
        for name in ("on_floor", "stands", "symmetry", "in_view"):
            found[name] = Check(name, False, 0.0, "none of the assembly's parts is in the scene")
    else:
        missing_floor = [p for p in a.on_floor if p not in present]
        floor = assembly.on_floor(present, [p for p in a.on_floor if p in present], a.floor_z * scale, tol)
        if missing_floor:
            floor = Check("on_floor", False, 0.0, f"missing part(s) {', '.join(missing_floor)}; {floor.message}", floor.detail)
        found["on_floor"] = floor
        if a.stands:
            found["stands"] = assembly.stands(list(present.values()), a.floor_z * scale, tol, a.min_tip_angle_deg)
        else:
            skipped["stands"] = "not asked"
        if a.symmetry:
            found["symmetry"] = assembly.symmetry(checks.combine(list(present.values())), a.symmetry.axis, a.symmetry.tolerance * scale)
        else:
            skipped["symmetry"] = "task.json asks no symmetry"
        if a.view:
            view = exported.get("view")
            depth = np.load(view["file"])["depth"] if view else None
            found["in_view"] = assembly.in_view(depth, [m["name"] for m in exported["meshes"]], parts, a.view.min_coverage, a.view.min_visible)
        else:
            skipped["in_view"] = "task.json asks nothing of the camera's view"
    if a.cavity:
        if a.cavity.part in meshes:
            found["cavity"] = assembly.cavity(a.cavity.part, meshes[a.cavity.part][0], a.cavity.min_volume * scale**3)
        else:
            found["cavity"] = Check("cavity", False, 0.0, f"no object named {a.cavity.part!r} to hold the water")
    else:
        skipped["cavity"] = "task.json asks no cavity"
    return found, skipped


def structure_parts(spec: TaskSpec, exported: dict[str, Any], meshes: dict[str, tuple[trimesh.Trimesh, list[str | None]]]
                    ) -> tuple[dict[str, trimesh.Trimesh], list[str], float]:
    """The object's parts in the scene, every part it should have, and the floor's height (m): the
    task's assembly parts (its objects) on ``assembly.floor_z`` (0), or in a free-form scene every
    visible mesh a lighting preset did not make, less the supports it stands on (a floor plane, a
    table top: ``structure.supports``), on the highest support's top, else on z = 0 (or the lowest
    point, when it is below that)."""
    if spec.objects:
        expected = spec.assembly_parts()
        floor_z = spec.assembly.floor_z * checks.UNIT_TO_M[spec.unit] if spec.assembly else 0.0
        return {p: meshes[p][0] for p in expected if p in meshes}, expected, floor_z
    expected = [m["name"] for m in exported["meshes"] if not m.get("preset")]
    present = {p: meshes[p][0] for p in expected if p in meshes}
    under = structure.supports(present, structure.CONTACT_TOLERANCE_M)
    if under:
        floor_z = max(float(present[n].bounds[1][2]) for n in under)
        present = {n: m for n, m in present.items() if n not in under}
        expected = [n for n in expected if n not in under]
    else:
        floor_z = min([0.0, *(float(m.bounds[0][2]) for m in present.values())])
    return present, expected, floor_z


def derived_checks(spec: TaskSpec, meshes: dict[str, tuple[trimesh.Trimesh, list[str | None]]], exported: dict[str, Any],
                   request: str) -> tuple[dict[str, Check], dict[str, str]]:
    """The whole-object checks the request's words ask (``plugins.threed.structure``), without the
    ones the task's ``assembly`` states itself."""
    asked = structure.read_request(f"{spec.request}. {request}")
    present, expected, floor_z = structure_parts(spec, exported, meshes)
    a = spec.assembly
    scale = checks.UNIT_TO_M[spec.unit]
    tol = a.contact_tolerance * scale if a else structure.CONTACT_TOLERANCE_M
    stated = set()
    if a is not None:
        stated |= {"connected"} if a.connected else set()
        stated |= {"on_floor"} if a.on_floor else set()
        stated |= {"cavity"} if a.cavity else set()
    distances = assembly.contact_distances(exported["contacts"]) if "contacts" in exported else None
    return structure.structure_checks(asked, present, expected, distances, tol, floor_z, stated)


#: Tools that look at or save the scene without changing it: calling only these builds nothing.
LOOKING_TOOLS = frozenset({"inspect_scene", "render_preview", "export_scene", "finish"})


def built_nothing(tool_data: list[dict[str, Any]]) -> RewardResult | None:
    """The verdict for a run none of whose successful tool calls could change the scene, else None.

    Args:
        tool_data: ``Trajectory.tool_data`` (``{"tool", "is_error", ...}`` per executed call).
    """
    if any(not c.get("is_error") and c.get("tool") not in LOOKING_TOOLS for c in tool_data):
        return None
    why = "no successful tool call changed the scene (only looked at it, or every change failed): a run that built nothing scores 0"
    return RewardResult(reward=0.0, correct=False, version=REWARD_VERSION, summary=why,
                        components={"scene/built": RewardComponent(value=0.0, detail={"passed": False, "message": why})})


def look_gate_summary(named: dict[str, Check], off_look: list[str], passing: int) -> str:
    """The summary of a verdict whose requested look fails: each failing look check, its message
    (what was measured against what was wanted), and how the rest fared."""
    told = "; ".join(f"{n}: {named[n].message}" for n in off_look)
    return (f"the requested look fails, so the reward is 0 ({len(off_look)} look check(s): {told}); "
            f"{passing}/{len(named)} checks pass")


def grade(spec: TaskSpec, exported: dict[str, Any], task_folder: Path, looked: dict[str, Any] | None = None,
          request: str = "", dropped: dict[str, Any] | None = None) -> RewardResult:
    """Score the scene the worker exported (``ops.mesh_data``) against ``spec``; with ``looked``
    (``look_probe.look_data``'s answer) also the look the request's words ask (``plugins.threed.look``);
    with ``dropped`` (``physics_probe.drop_test``'s answer, or ``{"error": ...}``) whether it stands
    (``physics/stands``, one of the checks that gate it: ``GATED``, ``GATE_CAP``). ``request`` (the
    run's words, with ``spec.request``) also says which whole-object checks are derived
    (``derived_checks``, ``plugins.threed.structure``).

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
    seen, unseen = look.look_checks(spec, meshes, looked, request) if looked is not None else ({}, {})
    named.update(seen)
    stated, unstated = assembly_checks(spec, meshes, exported)
    derived, underived = derived_checks(spec, meshes, exported, request)
    whole = {f"assembly/{n}": c for n, c in stated.items()} | {f"structure/{n}": c for n, c in derived.items()}
    unjudged = {f"assembly/{n}": why for n, why in unstated.items()} | {f"structure/{n}": why for n, why in underived.items()}
    # the object as a whole weighs as much as all its parts' own checks together
    whole_weight = max(1.0, len(named) / len(whole)) if whole else 1.0
    weights = {n: 1.0 for n in named}
    for name, check in whole.items():
        named[name] = check
        weights[name] = whole_weight
    standing = physics.check(dropped) if dropped is not None else None
    if standing is not None:
        named["physics/stands"], weights["physics/stands"] = standing, 1.0
    reward = sum(c.value * weights[n] for n, c in named.items()) / sum(weights.values())
    failing = [n for n, c in named.items() if not c.passed]
    off_look = [n for n in seen if not named[n].passed]
    if off_look:  # the look asked is a gate: partial credit only when it holds
        reward = 0.0
        summary = look_gate_summary(named, off_look, len(named) - len(failing))
    elif failing:
        first = named[failing[0]]
        summary = f"{len(named) - len(failing)}/{len(named)} checks pass; failing: {', '.join(failing[:6])} ({failing[0]}: {first.message})"
    else:
        summary = f"all {len(named)} checks pass"
    gates = [n for n in GATED if n in named and not named[n].passed]
    if gates:  # the object as a whole is wrong: capped far below any build that passes (version 8; the drop test's, version 7)
        reward *= GATE_CAP
        told = "; ".join(f"{n}: {named[n].message}" for n in gates[:4])
        what = "the object as a whole fails" if "physics/stands" not in gates else \
            "it does not stand" + (" and the object as a whole fails" if len(gates) > 1 else "")
        if off_look:  # already 0: the look's summary stays first
            summary += f"; {what} too ({told})"
        else:
            summary = f"{what}, so the reward is capped at {GATE_CAP:g} of the rest ({told}); {summary}"
    if unjudged or unseen:
        short = [n.removeprefix("assembly/") for n in unjudged] + [n.split("/")[-1] for n in unseen]
        summary += f"; not judged: {', '.join(short)}"
    components = {n: RewardComponent(value=c.value, weight=weights[n], detail={"passed": c.passed, "message": c.message, **c.detail})
                  for n, c in named.items()}
    for name, why in unjudged.items():  # weight 0: listed, never averaged in, never a free 1.0
        components[name] = RewardComponent(value=0.0, weight=0.0, detail={"status": "not_applicable", "message": why})
    for name, why in unseen.items():
        components[name] = RewardComponent(value=0.0, weight=0.0, detail={"status": "not_applicable", "message": why})
    if standing is None:
        components["physics/stands"] = RewardComponent(value=0.0, weight=0.0, detail={
            "status": "not_applicable", "message": "the request names nothing that must stand (a chair, table, lamp, bookcase, glass...)"})
    return RewardResult(reward=round(reward, 6), correct=not failing, summary=summary, version=REWARD_VERSION, components=components)
