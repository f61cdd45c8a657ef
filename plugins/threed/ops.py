"""Scene operations that run INSIDE the Blender worker process (they import ``bpy``).

Every operation is ``op(args: dict) -> dict``: ``args`` were already validated by the tool's
pydantic model in the agent process; what needs the scene (does the object exist, is the mesh
closed) is checked here and reported by raising ``OpError`` with a message for the model.
Units: lengths in metres, angles in degrees (converted to Blender's radians here), light power in
watts, colours as linear RGB in [0, 1]. The scene file is saved by the worker after each
operation listed in ``MUTATING``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from typing import Any

import bmesh
import bpy
from mathutils import Matrix, Vector

PRESETS: dict[str, dict[str, Any]] = {
    # base colours are linear RGB, picked to read as the named material under neutral light
    "oak": {"base_color": [0.43, 0.27, 0.13], "roughness": 0.55, "metallic": 0.0, "transmission": 0.0},
    "walnut": {"base_color": [0.18, 0.09, 0.05], "roughness": 0.5, "metallic": 0.0, "transmission": 0.0},
    "pine": {"base_color": [0.62, 0.45, 0.25], "roughness": 0.6, "metallic": 0.0, "transmission": 0.0},
    "steel": {"base_color": [0.56, 0.57, 0.58], "roughness": 0.3, "metallic": 1.0, "transmission": 0.0},
    "brass": {"base_color": [0.78, 0.56, 0.2], "roughness": 0.25, "metallic": 1.0, "transmission": 0.0},
    "glass": {"base_color": [0.95, 0.97, 1.0], "roughness": 0.02, "metallic": 0.0, "transmission": 1.0},
    "ceramic": {"base_color": [0.8, 0.8, 0.78], "roughness": 0.15, "metallic": 0.0, "transmission": 0.0},
    "plastic_black": {"base_color": [0.02, 0.02, 0.02], "roughness": 0.4, "metallic": 0.0, "transmission": 0.0},
    "fabric_grey": {"base_color": [0.3, 0.3, 0.32], "roughness": 0.9, "metallic": 0.0, "transmission": 0.0},
    # a lampshade's cloth: matte, with sheen, letting 45% of the light through diffusely (not glass)
    "fabric_shade": {"base_color": [0.8, 0.7, 0.52], "roughness": 1.0, "metallic": 0.0, "transmission": 0.0,
                     "sheen": 0.5, "translucency": 0.45},
    # a lit bulb: frosted white glass glowing at about 2700 K
    "bulb": {"base_color": [1.0, 0.95, 0.85], "roughness": 0.5, "metallic": 0.0, "transmission": 0.0,
             "emission_color": [1.0, 0.62, 0.3], "emission_strength": 12.0},
}
#: set_material's values and the Principled BSDF inputs they set (``translucency`` is a Translucent
#: BSDF mixed in after it, ``_translucent``)
SOCKETS = {"base_color": "Base Color", "roughness": "Roughness", "metallic": "Metallic", "transmission": "Transmission Weight",
           "emission_color": "Emission Color", "emission_strength": "Emission Strength", "sheen": "Sheen Weight"}
TRANSLUCENT_MIX = "Horizon translucency"  # the Mix Shader node's name

MAX_INSPECT = 200
#: Scene property: the names (newline-separated) of the objects the scene held when the run first
#: opened it (an artist's default Cube, Camera, Light; a task's given parts), set by ``open_scene``
START_OBJECTS = "horizon_start_objects"


def start_objects() -> set[str]:
    """Names of the objects the scene held before the run built anything (``START_OBJECTS``; empty for a new scene)."""
    return set(filter(None, str(bpy.context.scene.get(START_OBJECTS, "")).split("\n")))


class OpError(Exception):
    """A request the scene cannot satisfy; the message says what was wrong and what to do."""


# -- helpers ---------------------------------------------------------------------------------


def _object(name: str) -> bpy.types.Object:
    obj = bpy.data.objects.get(name)
    if obj is None:
        names = ", ".join(sorted(o.name for o in bpy.data.objects)[:30]) or "none"
        raise OpError(f"no object named {name!r} in the scene (objects: {names}); inspect_scene lists them")
    return obj


def _mesh_object(name: str) -> bpy.types.Object:
    obj = _object(name)
    if obj.type != "MESH":
        raise OpError(f"{name!r} is a {obj.type.lower()}, not a mesh; give a mesh object")
    return obj


def _new_name(name: str) -> str:
    if bpy.data.objects.get(name) is not None:
        raise OpError(f"an object named {name!r} already exists; choose another name or delete_object it first")
    if len(name.encode()) > 63:
        raise OpError(f"object name {name!r} is longer than Blender's 63 bytes; use a shorter name")
    return name


def _link(obj: bpy.types.Object) -> bpy.types.Object:
    bpy.context.scene.collection.objects.link(obj)
    return obj


def _rad(degrees: list[float]) -> tuple[float, float, float]:
    return tuple(math.radians(d) for d in degrees)  # type: ignore[return-value]


def _round(values: Any, digits: int = 4) -> list[float]:
    return [round(float(v), digits) for v in values]


def _evaluated_counts(obj: bpy.types.Object) -> tuple[int, int]:
    """Vertices and faces of the object as rendered (modifiers applied)."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        return len(mesh.vertices), len(mesh.polygons)
    finally:
        evaluated.to_mesh_clear()


def describe(obj: bpy.types.Object) -> dict[str, Any]:
    """One object as plain data: name, type, transform, world-space dimensions (m), materials, modifiers."""
    info: dict[str, Any] = {
        "name": obj.name,
        "type": obj.type.lower(),
        "location": _round(obj.location),
        "rotation_deg": _round([math.degrees(a) for a in obj.rotation_euler], 2),
        "scale": _round(obj.scale),
        "dimensions": _round(obj.dimensions),
    }
    if obj.type == "MESH":
        info["vertices"], info["faces"] = _evaluated_counts(obj)
        info["materials"] = [s.material.name for s in obj.material_slots if s.material]
        info["modifiers"] = [_describe_modifier(m) for m in obj.modifiers]
    elif obj.type == "LIGHT":
        info["light"] = {"kind": obj.data.type.lower(), "energy_w": round(obj.data.energy, 3), "color": _round(obj.data.color, 3)}
    elif obj.type == "CAMERA":
        info["lens_mm"] = round(obj.data.lens, 2)
    return info


def _describe_modifier(mod: bpy.types.Modifier) -> dict[str, Any]:
    keys = {
        "BEVEL": ("width", "segments"), "BOOLEAN": ("operation", "solver"), "ARRAY": ("count",),
        "MIRROR": ("use_axis",), "SOLIDIFY": ("thickness",), "SUBSURF": ("levels",),
    }.get(mod.type, ())
    out: dict[str, Any] = {"name": mod.name, "type": mod.type.lower()}
    for key in keys:
        value = getattr(mod, key)
        out[key] = list(value) if not isinstance(value, (int, float, str, bool)) else value
    if mod.type == "BOOLEAN":
        out["object"] = mod.object.name if mod.object else None
    return out


# -- scene file ------------------------------------------------------------------------------


def new_scene(args: dict[str, Any]) -> dict[str, Any]:
    """Start an empty scene (no default cube, camera or light) with a neutral grey world."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    _prepare_session()
    world = bpy.data.worlds.new("World")
    world.color = (0.05, 0.05, 0.05)
    bpy.context.scene.world = world
    _set_world_color(world, (0.05, 0.05, 0.055), 1.0)
    return {"objects": 0}


def _set_world_color(world: bpy.types.World, color: tuple[float, float, float], strength: float) -> None:
    world.use_nodes = True
    background = world.node_tree.nodes.get("Background")
    if background is not None:
        background.inputs["Color"].default_value = (*color, 1.0)
        background.inputs["Strength"].default_value = strength


def _prepare_session() -> None:
    # no scene.blend1 backup next to every save: the run's git snapshots already keep history
    bpy.context.preferences.filepaths.save_version = 0
    # a .blend in the workspace may carry Python (text blocks set to register, driver expressions)
    # and a sandboxed run_blender_python step can write one: never run it; this worker is not
    # sandboxed. bpy as a module starts with auto-run off, but the user's preferences can turn
    # it on; open_scene also passes use_scripts=False.
    bpy.context.preferences.filepaths.use_scripts_auto_execute = False


# -- files this unsandboxed process reads and writes in the workspace -------------------------


def _real_folder(path: str, what: str) -> None:
    """Raise ``OpError`` unless the folder of ``path`` (absolute) is reached without a symbolic link."""
    folder = os.path.dirname(path)
    if not os.path.isabs(path) or os.path.realpath(folder) != folder:
        raise OpError(f"the folder of {what} {path} is, or passes through, a symbolic link (or the path is not absolute); "
                      "Blender only reads and writes plain folders of the workspace")


def _prepare_write(path: str) -> None:
    """Make ``path`` safe to write from this process: no link on the way, no link or special file there.

    A link at ``path`` itself is removed (Blender then writes a new file, never through the link);
    so is Blender's temporary ``<path>@`` that ``save_as_mainfile`` writes before renaming it.

    Raises:
        OpError: the folder passes through a link, or ``path`` is a folder, FIFO or device.
    """
    _real_folder(path, "output file")
    for candidate in (path, path + "@"):
        if os.path.islink(candidate) or (candidate.endswith("@") and os.path.isfile(candidate)):
            os.unlink(candidate)
        elif os.path.lexists(candidate) and not os.path.isfile(candidate):
            raise OpError(f"{candidate} exists and is not a regular file (a folder, FIFO or device); choose another path")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _confine_file_paths(root: str) -> list[str]:
    """Drop every external file a loaded .blend names outside ``root``; returns the paths dropped.

    A .blend can name files anywhere (linked libraries, images, fonts, sounds, movie clips,
    volumes, Alembic/USD caches, simulation cache folders); this process is not sandboxed, so
    it would read (render, export) or write (caches) them. Libraries outside ``root`` are
    removed with the data linked from them; every other path outside ``root`` is replaced by a
    name in the scene's own folder (``//<file name>``, usually missing). Paths are resolved as
    Blender resolves them (``//`` from the .blend, others from this process's folder), links
    included; the paths returned are absolute.
    """
    root = os.path.realpath(root)
    dropped: list[str] = []

    def outside(raw: str, library: Any = None) -> str | None:
        """The absolute path ``raw`` names when it is outside ``root``, else None."""
        full = bpy.path.abspath(raw, library=library)
        real = os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))
        return None if _inside(real, root) else real

    for lib in list(bpy.data.libraries):
        try:
            far = outside(lib.filepath, getattr(lib, "parent", None))  # an indirect library: relative to its parent
        except ReferenceError:
            continue  # removed with its parent already
        if far:
            dropped.append(far)
            bpy.data.libraries.remove(lib)

    def visit(block: Any, path: str, _meta: Any) -> str | None:
        far = None if not path or path.startswith("<") else outside(path, getattr(block, "library", None))
        if far is None:
            return None  # "<builtin>" font, or a path inside root
        dropped.append(far)
        name = os.path.basename(path.rstrip("/\\"))
        return "//" + (name if name not in ("", ".", "..") else "missing")

    bpy.data.file_path_foreach(visit)
    return dropped


def open_scene(args: dict[str, Any]) -> dict[str, Any]:
    """Load ``args["path"]`` (an absolute .blend path), replacing the current scene, with no script run.

    Python in the file (text blocks registered as modules, driver expressions) is not run, and
    every file it names outside ``args["root"]`` (default: the scene's folder) is dropped
    (``_confine_file_paths``).

    Returns:
        ``{"objects": n, "scripts_blocked": bool, "dropped": [path, ...]}``; ``scripts_blocked``
        is True when the file carried Python that would have run with auto-run on.

    Raises:
        OpError: the file is missing, not a regular file, or reached through a symbolic link.
    """
    path = args["path"]
    _real_folder(path, "scene file")
    if os.path.islink(path):
        raise OpError(f"scene file {path} is a symbolic link; Blender opens only a regular file of the workspace")
    if not os.path.isfile(path):
        what = "is not a regular file (a folder, FIFO or device)" if os.path.lexists(path) else "does not exist"
        raise OpError(f"scene file {path} {what}")
    _prepare_session()
    bpy.ops.wm.open_mainfile(filepath=path, load_ui=False, use_scripts=False)
    _prepare_session()
    blocked = bool(bpy.app.autoexec_fail)
    dropped = _confine_file_paths(args.get("root") or os.path.dirname(path))
    scene = bpy.context.scene
    if START_OBJECTS not in scene:  # the first open of the run's scene: what was there before the run built anything
        scene[START_OBJECTS] = "\n".join(sorted(o.name for o in bpy.data.objects))
    return {"objects": len(bpy.data.objects), "scripts_blocked": blocked, "dropped": dropped}


def save_scene(args: dict[str, Any]) -> dict[str, Any]:
    """Save the scene to ``args["path"]`` (absolute; uncompressed .blend; the checkpoint of each step).

    Raises:
        OpError: the path is not safe to write (``_prepare_write``).
    """
    _prepare_write(args["path"])
    bpy.ops.wm.save_as_mainfile(filepath=args["path"], check_existing=False, compress=False, copy=args.get("copy", False))
    return {"path": args["path"], "bytes": os.path.getsize(args["path"])}


# -- inspect ---------------------------------------------------------------------------------


def inspect_scene(args: dict[str, Any]) -> dict[str, Any]:
    """Objects sorted by name, ``args["offset"]`` .. ``offset + limit``, plus scene totals."""
    objects = sorted(bpy.data.objects, key=lambda o: o.name)
    if args.get("name_contains"):
        objects = [o for o in objects if args["name_contains"].lower() in o.name.lower()]
    offset, limit = args.get("offset", 0), min(args.get("limit", 50), MAX_INSPECT)
    page = objects[offset: offset + limit]
    scene = bpy.context.scene
    return {
        "total": len(objects),
        "offset": offset,
        "objects": [describe(o) for o in page],
        "camera": scene.camera.name if scene.camera else None,
        "materials": sorted(m.name for m in bpy.data.materials),
        "render": {"engine": scene.render.engine.lower(), "resolution": [scene.render.resolution_x, scene.render.resolution_y]},
    }


# -- geometry --------------------------------------------------------------------------------


def add_primitive(args: dict[str, Any]) -> dict[str, Any]:
    """Add a cube, cylinder, cone, uv_sphere, ico_sphere, torus or plane as a new mesh object.

    Sizes: cube ``size`` [x, y, z] (m); cylinder ``radius``, ``depth``; cone ``radius``
    (bottom), ``radius_top``, ``depth``; spheres ``radius``; torus ``radius`` (major) and
    ``minor_radius``; plane ``size`` [x, y]. ``segments`` sets the round resolution.
    """
    name = _new_name(args["name"])
    kind, seg = args["kind"], args.get("segments", 32)
    bm = bmesh.new()
    try:
        if kind == "cube":
            bmesh.ops.create_cube(bm, size=1.0)
            sx, sy, sz = args["size"]
            bmesh.ops.scale(bm, vec=(sx, sy, sz), verts=bm.verts)
        elif kind == "plane":
            bmesh.ops.create_grid(bm, x_segments=1, y_segments=1, size=0.5)
            sx, sy = args["size"][:2]
            bmesh.ops.scale(bm, vec=(sx, sy, 1.0), verts=bm.verts)
        elif kind in ("cylinder", "cone"):
            top = args["radius"] if kind == "cylinder" else args.get("radius_top", 0.0)
            bmesh.ops.create_cone(bm, cap_ends=True, cap_tris=False, segments=seg, radius1=args["radius"], radius2=top, depth=args["depth"])
        elif kind == "uv_sphere":
            bmesh.ops.create_uvsphere(bm, u_segments=seg, v_segments=max(3, seg // 2), radius=args["radius"])
        elif kind == "ico_sphere":
            bmesh.ops.create_icosphere(bm, subdivisions=max(1, min(6, seg // 8)), radius=args["radius"])
        elif kind == "torus":
            _torus(bm, args["radius"], args["minor_radius"], seg, max(3, seg // 2))
        else:  # the tool's Literal forbids this; kept for direct callers
            raise OpError(f"unknown primitive {kind!r}")
        mesh = bpy.data.meshes.new(name)
        bm.to_mesh(mesh)
    finally:
        bm.free()
    obj = _link(bpy.data.objects.new(name, mesh))
    obj.location = args.get("location", [0, 0, 0])
    obj.rotation_euler = _rad(args.get("rotation_deg", [0, 0, 0]))
    bpy.context.view_layer.update()
    return {"added": describe(obj)}


def _torus(bm: bmesh.types.BMesh, major: float, minor: float, u: int, v: int) -> None:
    rings = []
    for i in range(u):
        a = 2 * math.pi * i / u
        ring = []
        for j in range(v):
            b = 2 * math.pi * j / v
            r = major + minor * math.cos(b)
            ring.append(bm.verts.new((r * math.cos(a), r * math.sin(a), minor * math.sin(b))))
        rings.append(ring)
    for i in range(u):
        for j in range(v):
            a, b = rings[i], rings[(i + 1) % u]
            bm.faces.new((a[j], b[j], b[(j + 1) % v], a[(j + 1) % v]))
    bmesh.ops.recalc_face_normals(bm, faces=bm.faces)


def add_mesh(args: dict[str, Any]) -> dict[str, Any]:
    """A new mesh object from ``vertices`` ([[x, y, z], ...] in metres, object space) and
    ``faces`` (lists of 0-based vertex indices, 3 or more each, counter-clockwise seen from outside)."""
    name = _new_name(args["name"])
    verts, faces = args["vertices"], args["faces"]
    for n, face in enumerate(faces):
        bad = [i for i in face if not 0 <= i < len(verts)]
        if bad:
            raise OpError(f"face {n} uses vertex index {bad[0]}, but there are only {len(verts)} vertices (indices 0..{len(verts) - 1})")
        if len(set(face)) != len(face):
            raise OpError(f"face {n} repeats a vertex ({face}); each face needs distinct vertices")
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(v) for v in verts], [], [tuple(f) for f in faces])
    if mesh.validate(clean_customdata=False):
        raise OpError("the faces are invalid (duplicate faces or edges Blender had to remove); check the face list")
    mesh.update()
    obj = _link(bpy.data.objects.new(name, mesh))
    obj.location = args.get("location", [0, 0, 0])
    obj.rotation_euler = _rad(args.get("rotation_deg", [0, 0, 0]))
    bpy.context.view_layer.update()
    return {"added": describe(obj), "non_manifold_edges": non_manifold_edges(obj)}


def non_manifold_edges(obj: bpy.types.Object) -> int:
    """Edges not shared by exactly two faces (holes, fins): 0 for a closed solid's surface."""
    bm = bmesh.new()
    try:
        bm.from_mesh(obj.data)
        return sum(1 for e in bm.edges if not e.is_manifold)
    finally:
        bm.free()


def delete_object(args: dict[str, Any]) -> dict[str, Any]:
    """Remove an object (its mesh data too when nothing else uses it)."""
    obj = _object(args["name"])
    data = obj.data
    bpy.data.objects.remove(obj)
    if isinstance(data, bpy.types.Mesh) and data.users == 0:
        bpy.data.meshes.remove(data)
    return {"deleted": args["name"]}


def transform(args: dict[str, Any]) -> dict[str, Any]:
    """Set location (m), rotation (degrees, XYZ Euler), scale, or target dimensions (m); or move by ``translate``."""
    obj = _object(args["name"])
    before = describe(obj)
    if args.get("location") is not None:
        obj.location = args["location"]
    if args.get("translate") is not None:
        obj.location = Vector(obj.location) + Vector(args["translate"])
    if args.get("rotation_deg") is not None:
        obj.rotation_euler = _rad(args["rotation_deg"])
    if args.get("scale") is not None:
        obj.scale = args["scale"]
    if args.get("dimensions") is not None:
        if obj.type != "MESH":
            raise OpError(f"{obj.name!r} is a {obj.type.lower()}; dimensions apply to meshes")
        if any(d == 0 for d in obj.dimensions):
            raise OpError(f"{obj.name!r} is flat along an axis (dimensions {list(obj.dimensions)}); set scale instead")
        obj.dimensions = args["dimensions"]
    bpy.context.view_layer.update()
    return {"before": before, "after": describe(obj)}


def apply_scale(args: dict[str, Any]) -> dict[str, Any]:
    """Bake the object's scale into its mesh, so scale becomes [1, 1, 1] and dimensions stay."""
    obj = _mesh_object(args["name"])
    scale = Vector(obj.scale)
    if obj.data.users > 1:
        raise OpError(f"the mesh of {obj.name!r} is shared by {obj.data.users} objects; applying scale would change them all")
    obj.data.transform(Matrix.Diagonal(scale.to_4d()))
    obj.scale = (1.0, 1.0, 1.0)
    obj.data.update()
    bpy.context.view_layer.update()
    return {"applied_scale": _round(scale), "after": describe(obj)}


# -- modifiers -------------------------------------------------------------------------------

_MOD_TYPES = {"bevel": "BEVEL", "boolean": "BOOLEAN", "array": "ARRAY", "mirror": "MIRROR", "solidify": "SOLIDIFY",
              "subdivision": "SUBSURF"}


def add_modifier(args: dict[str, Any]) -> dict[str, Any]:
    """Add one modifier (kept live, not applied: checks and renders see its result)."""
    obj = _mesh_object(args["name"])
    kind = args["kind"]
    if kind == "boolean":
        cutter = _mesh_object(args["object"])
        if cutter == obj:
            raise OpError("a boolean needs a second object as its operand, not the object itself")
        for target in (obj, cutter):
            holes = non_manifold_edges(target)
            if holes:
                raise OpError(
                    f"boolean needs closed solids, but {target.name!r} has {holes} non-manifold edges (holes or "
                    "edges shared by more than two faces); close it (e.g. rebuild it as a primitive, or add_modifier "
                    "solidify) before using it in a boolean"
                )
    _, before_f = _evaluated_counts(obj)
    mod = obj.modifiers.new(name=args.get("modifier_name") or kind.capitalize(), type=_MOD_TYPES[kind])
    if kind == "bevel":
        mod.width, mod.segments = args.get("width", 0.005), args.get("segments", 2)
        mod.limit_method = "ANGLE"
    elif kind == "boolean":
        mod.operation = args.get("operation", "difference").upper()
        mod.object = cutter
        mod.solver = "EXACT"
        if args.get("hide_operand", True):
            cutter.hide_render = True
            cutter.hide_set(True)
            cutter.display_type = "WIRE"
    elif kind == "array":
        mod.count = args.get("count", 2)
        mod.use_relative_offset = False
        mod.use_constant_offset = True
        mod.constant_offset_displace = args.get("offset", [1.0, 0.0, 0.0])
    elif kind == "mirror":
        axes = args.get("axes", ["x"])
        mod.use_axis = ("x" in axes, "y" in axes, "z" in axes)
        if args.get("object"):
            mod.mirror_object = _object(args["object"])
    elif kind == "solidify":
        mod.thickness = args.get("thickness", 0.01)
    elif kind == "subdivision":
        mod.levels = mod.render_levels = args.get("levels", 1)
    bpy.context.view_layer.update()
    _, after_f = _evaluated_counts(obj)
    out = {"modifier": _describe_modifier(mod), "faces_before": before_f, "faces_after": after_f, "after": describe(obj)}
    if kind == "boolean" and after_f == 0:
        out["warning"] = "the boolean removed every face; check the operand's position and the operation"
    return out


# -- materials -------------------------------------------------------------------------------


def _principled(mat: bpy.types.Material) -> bpy.types.ShaderNode:
    mat.use_nodes = True
    node = next((n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED"), None)
    if node is None:
        node = mat.node_tree.nodes.new("ShaderNodeBsdfPrincipled")
        output = next((n for n in mat.node_tree.nodes if n.type == "OUTPUT_MATERIAL"), None) or mat.node_tree.nodes.new("ShaderNodeOutputMaterial")
        mat.node_tree.links.new(node.outputs["BSDF"], output.inputs["Surface"])
    return node


_AXES = {"+x": (1, 0, 0), "-x": (-1, 0, 0), "+y": (0, 1, 0), "-y": (0, -1, 0), "+z": (0, 0, 1), "-z": (0, 0, -1)}


def _translucent(mat: bpy.types.Material, principled: Any, amount: float | None) -> None:
    """Mix a Translucent BSDF (diffuse light through a thin sheet: cloth, paper) of the base colour
    after the Principled BSDF: ``amount`` 0-1 of the light goes through (None: keep the mix's)."""
    tree = mat.node_tree
    mix = tree.nodes.get(TRANSLUCENT_MIX)
    if mix is None:
        output = next((n for n in tree.nodes if n.type == "OUTPUT_MATERIAL"), None) or tree.nodes.new("ShaderNodeOutputMaterial")
        mix = tree.nodes.new("ShaderNodeMixShader")
        mix.name = mix.label = TRANSLUCENT_MIX
        translucent = tree.nodes.new("ShaderNodeBsdfTranslucent")
        tree.links.new(principled.outputs["BSDF"], mix.inputs[1])
        tree.links.new(translucent.outputs["BSDF"], mix.inputs[2])
        tree.links.new(mix.outputs["Shader"], output.inputs["Surface"])
    translucent = mix.inputs[2].links[0].from_node
    translucent.inputs["Color"].default_value = principled.inputs["Base Color"].default_value
    if amount is not None:
        mix.inputs["Fac"].default_value = amount


def _faces_facing(obj: bpy.types.Object, axis: str) -> list[int]:
    """Indices of faces whose world-space normal is within 30 degrees of ``axis`` (e.g. "+z": tops)."""
    rotation = obj.matrix_world.to_3x3().inverted_safe().transposed()  # normals transform by the inverse transpose
    want = Vector(_AXES[axis])
    limit = math.cos(math.radians(30))
    return [p.index for p in obj.data.polygons if (rotation @ p.normal).normalized().dot(want) >= limit]


def set_material(args: dict[str, Any]) -> dict[str, Any]:
    """Assign a Principled BSDF material to an object, or to some of its faces.

    An existing material is reused (its settings updated by any values given); a new one needs a
    ``preset`` (see ``PRESETS``) or a ``base_color``.
    """
    obj = _mesh_object(args["object"])
    name = args["material"]
    mat = bpy.data.materials.get(name)
    preset = args.get("preset")
    values: dict[str, Any] = {}
    if preset is not None:
        if preset not in PRESETS:
            raise OpError(f"no material preset {preset!r}; presets: {', '.join(PRESETS)}; or give base_color (linear RGB 0-1) instead")
        values.update(PRESETS[preset])
    values.update({k: args[k] for k in (*SOCKETS, "translucency") if args.get(k) is not None})
    if values.get("emission_color") is not None and "emission_strength" not in values:
        values["emission_strength"] = 1.0  # a colour alone would not glow (Blender's default strength is 0)
    created = mat is None
    if created:
        if not values:
            existing = ", ".join(sorted(m.name for m in bpy.data.materials)) or "none"
            raise OpError(
                f"material {name!r} does not exist (existing: {existing}); to create it give a preset "
                f"({', '.join(PRESETS)}) or a base_color"
            )
        mat = bpy.data.materials.new(name)
    node = _principled(mat)
    for key, value in values.items():
        if key in SOCKETS:
            node.inputs[SOCKETS[key]].default_value = (*value, 1.0) if key.endswith("_color") else value
    if "translucency" in values or mat.node_tree.nodes.get(TRANSLUCENT_MIX) is not None:
        _translucent(mat, node, values.get("translucency"))
    if "base_color" in values:
        mat.diffuse_color = (*values["base_color"], 1.0)  # the viewport's solid-mode colour
    slot = next((i for i, s in enumerate(obj.material_slots) if s.material == mat), None)
    if slot is None:
        obj.data.materials.append(mat)
        slot = len(obj.material_slots) - 1
    faces = args.get("faces")
    polygons = obj.data.polygons
    if args.get("faces_facing"):
        faces = _faces_facing(obj, args["faces_facing"])
        if not faces:
            raise OpError(f"no face of {obj.name!r} faces {args['faces_facing']} (within 30 degrees); inspect_scene shows its rotation")
    if faces:
        bad = [f for f in faces if not 0 <= f < len(polygons)]
        if bad:
            raise OpError(f"face index {bad[0]} does not exist; {obj.name!r} has {len(polygons)} faces (0..{len(polygons) - 1})")
        for f in faces:
            polygons[f].material_index = slot
    else:
        for p in polygons:
            p.material_index = slot
    return {
        "material": mat.name, "created": created, "object": obj.name, "faces": len(faces) if faces else len(polygons),
        "settings": {k: (list(v) if isinstance(v, list) else v) for k, v in values.items()},
        "material_now": material_settings(mat),
    }


def material_settings(mat: bpy.types.Material) -> dict[str, Any]:
    """What ``mat``'s Principled BSDF is set to, read from its nodes: each of ``SOCKETS`` (colours as
    linear RGB lists) and ``translucency`` (the Translucent BSDF's share, 0 without one)."""
    node = _principled(mat)
    out: dict[str, Any] = {}
    for key, socket in SOCKETS.items():
        value = node.inputs[socket].default_value
        out[key] = _round(value[:3]) if key.endswith("_color") else round(float(value), 4)
    mix = mat.node_tree.nodes.get(TRANSLUCENT_MIX)
    out["translucency"] = round(float(mix.inputs["Fac"].default_value), 4) if mix is not None else 0.0
    return out


# -- lights, camera, world -------------------------------------------------------------------


def _aim(obj: bpy.types.Object, target: list[float]) -> None:
    direction = Vector(target) - Vector(obj.location)
    if direction.length == 0:
        raise OpError("target is at the object's own location; give a different target point")
    obj.rotation_euler = direction.to_track_quat("-Z", "Y").to_euler()


def add_light(args: dict[str, Any]) -> dict[str, Any]:
    """Add a point, sun, spot or area light; ``energy`` in watts (sun: irradiance in W/m²)."""
    name = _new_name(args["name"])
    data = bpy.data.lights.new(name, type=args.get("kind", "area").upper())
    data.energy = args.get("energy", 100.0)
    data.color = args.get("color", [1.0, 1.0, 1.0])
    if data.type == "AREA":
        data.size = args.get("size", 1.0)
    elif data.type in ("POINT", "SPOT"):
        data.shadow_soft_size = args.get("size", 0.25)
    obj = _link(bpy.data.objects.new(name, data))
    obj.location = args["location"]
    if args.get("target") is not None:
        _aim(obj, args["target"])
    elif args.get("rotation_deg") is not None:
        obj.rotation_euler = _rad(args["rotation_deg"])
    bpy.context.view_layer.update()
    return {"added": describe(obj)}


def scene_camera(scene: Any) -> tuple[Any, bool]:
    """The scene's camera object, made (named ``Camera``) and set as the scene camera when it has
    none. Returns ``(camera object, whether it was made)``."""
    if scene.camera is not None:
        return scene.camera, False
    scene.camera = _link(bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera")))
    return scene.camera, True


def set_camera(args: dict[str, Any]) -> dict[str, Any]:
    """Create or move the scene camera to ``location``, aimed at ``target``, with ``lens_mm``."""
    cam, created = scene_camera(bpy.context.scene)
    cam.location = args["location"]
    _aim(cam, args["target"])
    cam.data.lens = args.get("lens_mm", 50.0)
    bpy.context.view_layer.update()
    return {"created": created, "camera": describe(cam)}


def set_world(args: dict[str, Any]) -> dict[str, Any]:
    """Set the background colour (linear RGB) and strength of the world lighting."""
    scene = bpy.context.scene
    if scene.world is None:
        scene.world = bpy.data.worlds.new("World")
    _set_world_color(scene.world, tuple(args["color"]), args.get("strength", 1.0))
    return {"color": args["color"], "strength": args.get("strength", 1.0)}


# -- render and export -----------------------------------------------------------------------


def preview_size(scene: Any, width: int | None, height: int | None, longest: int = 320) -> tuple[int, int]:
    """A preview's size in pixels: the given width and height; a missing one follows the scene's
    aspect ratio (what ``frame_camera`` framed for), the longer side ``longest`` when neither is given."""
    sx, sy = max(1, scene.render.resolution_x), max(1, scene.render.resolution_y)
    if width and height:
        return width, height
    if width:
        return width, max(16, round(width * sy / sx))
    if height:
        return max(16, round(height * sx / sy)), height
    scale = longest / max(sx, sy)
    return max(16, round(sx * scale)), max(16, round(sy * scale))


def render_preview(args: dict[str, Any]) -> dict[str, Any]:
    """Render the camera's view to a PNG; returns its path, seconds and the mean brightness (0-1)."""
    scene = bpy.context.scene
    if scene.camera is None:
        raise OpError("the scene has no camera; call set_camera first")
    engine = args.get("engine", "cycles")
    scene.render.engine = "CYCLES" if engine == "cycles" else "BLENDER_EEVEE"
    if engine == "cycles":
        scene.cycles.device = "CPU"
        scene.cycles.samples = args.get("samples", 16)
        scene.cycles.use_denoising = True
    else:
        scene.eevee.taa_render_samples = args.get("samples", 16)
    scene.render.resolution_x, scene.render.resolution_y = preview_size(scene, args.get("width"), args.get("height"))
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    if engine == "cycles":
        scene.cycles.shading_system = False  # no OSL: script nodes in the file are never compiled here
    scene.render.filepath = args["path"]
    _prepare_write(args["path"])
    start = time.perf_counter()
    bpy.ops.render.render(write_still=True)
    seconds = time.perf_counter() - start
    image = bpy.data.images.load(args["path"], check_existing=False)
    try:
        pixels = list(image.pixels)  # RGBA floats, 0-1
    finally:
        bpy.data.images.remove(image)
    rgb = [sum(pixels[i:i + 3]) / 3 for i in range(0, len(pixels), 4)]
    from plugins.threed import probe

    start = time.perf_counter()
    view = probe.render_view(scene, args["path"])  # what it shows of each object, in numbers (plugins.threed.view_text)
    return {"path": args["path"], "seconds": round(seconds, 2), "mean_brightness": round(sum(rgb) / max(1, len(rgb)), 4),
            "engine": engine, "size": [scene.render.resolution_x, scene.render.resolution_y], "view": view,
            "view_seconds": round(time.perf_counter() - start, 2)}


def export_scene(args: dict[str, Any]) -> dict[str, Any]:
    """Export meshes to glTF (.glb), STL or OBJ at ``path``; all meshes unless ``objects`` names some."""
    names = args.get("objects") or [o.name for o in bpy.data.objects if o.type == "MESH" and not o.hide_render]
    objs = [_mesh_object(n) for n in names]
    if not objs:
        raise OpError("the scene has no mesh objects to export")
    for o in bpy.data.objects:
        o.select_set(False)
    for o in objs:
        o.hide_set(False)
        o.select_set(True)
    bpy.context.view_layer.objects.active = objs[0]
    fmt, path = args["format"], args["path"]
    _prepare_write(path)
    if fmt == "obj":
        _prepare_write(os.path.splitext(path)[0] + ".mtl")  # written next to the .obj
    if fmt == "gltf":
        bpy.ops.export_scene.gltf(filepath=path, export_format="GLB", use_selection=True, export_apply=True)
    elif fmt == "stl":
        bpy.ops.wm.stl_export(filepath=path, export_selected_objects=True, apply_modifiers=True)
    elif fmt == "obj":
        bpy.ops.wm.obj_export(filepath=path, export_selected_objects=True, apply_modifiers=True, export_materials=True)
    return {"path": path, "format": fmt, "objects": names, "bytes": os.path.getsize(path)}


def mesh_data(args: dict[str, Any]) -> dict[str, Any]:
    """Write each renderable mesh object, modifiers applied, in world coordinates (m), to
    ``<folder>/<index>.npz`` (``vertices`` float64 (n, 3), ``triangles`` int64 (m, 3),
    ``material_index`` int64 (m,)); return ``[{name, file, materials, preset}]`` (``preset``: a lighting preset made it) and the scene's lights/camera,
    and unless ``args["relations"]`` is False the meshes' ``contacts`` and the camera's ``view``
    (``probe.relations``)."""
    import numpy as np  # bpy ships numpy

    from plugins.threed import probe
    from plugins.threed.ops_look import PRESET_TAG

    folder = args["folder"]
    os.makedirs(folder, exist_ok=True)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    out, geometry = [], []
    for i, obj in enumerate(sorted((o for o in bpy.data.objects if o.type == "MESH" and not o.hide_render), key=lambda o: o.name)):
        world, tris, mats = probe.evaluated_triangles(obj, depsgraph, material_index=True)
        slots = [s.material.name if s.material else None for s in obj.material_slots]
        path = os.path.join(folder, f"{i}.npz")
        np.savez(path, vertices=world, triangles=tris, material_index=mats)
        out.append({"name": obj.name, "file": path, "materials": slots, "preset": PRESET_TAG in obj})
        geometry.append((world, tris))
    scene = bpy.context.scene
    lights = [o.name for o in bpy.data.objects if o.type == "LIGHT"]
    found = {"meshes": out, "lights": lights, "camera": scene.camera.name if scene.camera else None}
    if args.get("relations", True):
        found.update(probe.relations(scene, [m["name"] for m in out], geometry, folder))
    return found


# -- the table of operations -----------------------------------------------------------------

OPS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    f.__name__: f
    for f in (new_scene, open_scene, save_scene, inspect_scene, add_primitive, add_mesh, delete_object, transform,
              apply_scale, add_modifier, set_material, add_light, set_camera, set_world, render_preview, export_scene,
              mesh_data)
}

#: Operations that change the scene; the worker saves the .blend after each.
MUTATING = {"new_scene", "add_primitive", "add_mesh", "delete_object", "transform", "apply_scale", "add_modifier",
            "set_material", "add_light", "set_camera", "set_world", "render_preview"}
