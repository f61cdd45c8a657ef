"""The 3D plugin's typed tools. Each validates its arguments here (pydantic), runs one operation
in the episode's Blender worker (``plugins.threed.client``), and returns what changed.

Units: metres, degrees, watts; colours are linear RGB in [0, 1]. Every tool that changes the
scene leaves it saved in the workspace's .blend (the worker saves after each change), so the
framework's snapshot before each call is the checkpoint a resumed run restarts from.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.api import Tool, ToolContext, ToolError, ToolResult, make_dirs, tool, write_new
from plugins.threed import view_text
from plugins.threed.client import BlenderWorker
from plugins.threed.spec import SPEC_FILE, TaskSpec, load_spec

PYTHON_ENV = "HORIZON_THREED_PYTHON"  # "1" offers run_blender_python (raw bpy code, in the sandbox)

Vec3 = Annotated[list[float], Field(min_length=3, max_length=3)]
Positive3 = Annotated[list[Annotated[float, Field(gt=0, le=1000)]], Field(min_length=3, max_length=3)]
Color = Annotated[list[Annotated[float, Field(ge=0, le=1)]], Field(min_length=3, max_length=3)]
Name = Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[^\x00-\x1f]+$")]


class Args(BaseModel):
    """Base of every argument model: unknown keys and NaN/infinity are errors the model sees."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# -- the worker of an episode ----------------------------------------------------------------


#: Where set-up keeps the task's own inputs (``task.json`` and the reference mesh), in scratch:
#: the agent's commands cannot write there, so the reward never reads a file the agent could forge.
TASK_INPUTS = "task-inputs"


def task_folder(ctx: ToolContext) -> Path:
    """The folder the task's inputs are read from: set-up's copy in scratch (``save_task_inputs``),
    or the workspace for an episode set up before copies were kept."""
    saved = ctx.scratch / TASK_INPUTS
    return saved if saved.is_dir() else ctx.workspace


def save_task_inputs(ctx: ToolContext) -> None:
    """Copy ``task.json`` and its objects' reference meshes from the workspace into ``scratch/TASK_INPUTS``
    before the agent starts (regular files only; a reference outside the workspace is left out
    and the reference check then reports it unusable).

    Raises:
        UserError: ``task.json`` is malformed.
    """
    target = ctx.scratch / TASK_INPUTS
    if target.is_dir():
        return  # a resumed run keeps the copy made before its first step
    spec = load_spec(ctx.workspace)
    staging = ctx.scratch / (TASK_INPUTS + ".partial")  # scratch is Horizon's: no command can write it
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    names = [SPEC_FILE] + [o.reference.path for o in spec.objects if o.reference]
    for name in names:
        try:
            source = ctx.resolve(name)
        except ToolError:
            continue
        if source.is_file() and not source.is_symlink():
            rel = source.relative_to(ctx.workspace.resolve())
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            write_new(staging / rel, source.read_bytes())
    os.replace(staging, target)


def task_spec(ctx: ToolContext) -> TaskSpec:
    """The episode's ``task.json`` (read once, kept in ``plugin_state``), from set-up's copy."""
    if "spec" not in ctx.plugin_state:
        ctx.plugin_state["spec"] = load_spec(task_folder(ctx))
    return ctx.plugin_state["spec"]


def worker(ctx: ToolContext) -> BlenderWorker:
    """The episode's Blender worker, created on first use (it starts its process lazily)."""
    if "worker" not in ctx.plugin_state:
        scene = ctx.resolve(task_spec(ctx).scene)
        ctx.plugin_state["worker"] = BlenderWorker(scene, ctx.scratch / "blender-worker.log")
    return ctx.plugin_state["worker"]


def close_worker(ctx: ToolContext) -> None:
    """Stop the episode's worker, if one runs."""
    w = ctx.plugin_state.pop("worker", None)
    if w is not None:
        w.close()


def _result(headline: str, data: dict[str, Any]) -> ToolResult:
    note = data.pop("_note", "")
    text = f"{headline}\n{json.dumps(data, separators=(',', ':'))}"
    return ToolResult(output=f"{note}\n{text}" if note else text, data=data)


def _objects_line(obj: dict[str, Any]) -> str:
    dims = " x ".join(f"{d:.4g}" for d in obj["dimensions"])
    extra = ""
    if obj["type"] == "mesh":
        mods = ",".join(m["type"] for m in obj["modifiers"]) or "-"
        extra = f" faces={obj['faces']} materials={','.join(obj['materials']) or '-'} modifiers={mods}"
    elif obj["type"] == "light":
        extra = f" {obj['light']['kind']} {obj['light']['energy_w']} W"
    return f"{obj['name']} [{obj['type']}] at {obj['location']} rot={obj['rotation_deg']} dims={dims} m{extra}"


# -- inspect ---------------------------------------------------------------------------------


class InspectSceneArgs(Args):
    offset: int = Field(0, ge=0, description="first object to list (objects are sorted by name)")
    limit: int = Field(50, ge=1, le=200, description="most objects to list (1-200)")
    name_contains: str = Field("", description="list only objects whose name contains this text (case-insensitive)")


@tool(read_only=True)
def inspect_scene(args: InspectSceneArgs, ctx: ToolContext) -> ToolResult:
    """List the scene's objects sorted by name, a page at a time: type, location (m), rotation (degrees), world dimensions (m), faces, materials, modifiers; plus the camera and all materials.

    Args: ``InspectSceneArgs``. Returns ``data`` with ``total``, ``offset``, ``objects`` (one dict each), ``camera``, ``materials``.
    """
    data = worker(ctx).call("inspect_scene", args.model_dump(), save=False)
    note = data.pop("_note", "")
    shown = len(data["objects"])
    head = f"{data['total']} objects; showing {args.offset}..{args.offset + shown - 1 if shown else args.offset}"
    lines = [_objects_line(o) for o in data["objects"]]
    more = args.offset + shown < data["total"]
    tail = [f"(more: call inspect_scene with offset={args.offset + shown})"] if more else []
    text = "\n".join([*([note] if note else []), head, *lines, *tail,
                      f"camera: {data['camera']}; materials: {', '.join(data['materials']) or '-'}"])
    return ToolResult(output=text, data=data)


# -- geometry --------------------------------------------------------------------------------


class AddPrimitiveArgs(Args):
    name: Name = Field(description="unique object name, e.g. 'Tabletop'")
    kind: Literal["cube", "cylinder", "cone", "uv_sphere", "ico_sphere", "torus", "plane"]
    size: list[Annotated[float, Field(gt=0, le=1000)]] | None = Field(
        None, min_length=2, max_length=3, description="cube: [x, y, z] in metres; plane: [x, y]")
    radius: float | None = Field(None, gt=0, le=1000, description="cylinder, cone (bottom), spheres, torus (major) radius in metres")
    radius_top: float = Field(0.0, ge=0, le=1000, description="cone: top radius in metres (0 for a point)")
    minor_radius: float | None = Field(None, gt=0, le=1000, description="torus: tube radius in metres")
    depth: float | None = Field(None, gt=0, le=1000, description="cylinder, cone: height along local z in metres")
    segments: int = Field(32, ge=3, le=256, description="segments around round shapes")
    location: Vec3 = Field([0.0, 0.0, 0.0], description="centre in metres")
    rotation_deg: Vec3 = Field([0.0, 0.0, 0.0], description="XYZ Euler rotation in degrees")

    @model_validator(mode="after")
    def _sizes(self) -> AddPrimitiveArgs:
        need = {"cube": ("size",), "plane": ("size",), "cylinder": ("radius", "depth"), "cone": ("radius", "depth"),
                "uv_sphere": ("radius",), "ico_sphere": ("radius",), "torus": ("radius", "minor_radius")}[self.kind]
        missing = [n for n in need if getattr(self, n) is None]
        if missing:
            raise ValueError(f"a {self.kind} needs {' and '.join(missing)}")
        if self.kind == "cube" and len(self.size or []) != 3:
            raise ValueError("a cube's size is [x, y, z]")
        return self


@tool
def add_primitive(args: AddPrimitiveArgs, ctx: ToolContext) -> ToolResult:
    """Add a mesh primitive (cube, cylinder, cone, uv_sphere, ico_sphere, torus, plane) with sizes in metres; cube size is its full [x, y, z] extent. Returns the new object's dimensions and face count.

    Args: ``AddPrimitiveArgs``. Returns ``data["added"]``, the object as ``inspect_scene`` shows it.
    """
    data = worker(ctx).call("add_primitive", args.model_dump())
    return _result(f"added {args.kind} {data['added']['name']!r}", data)


MAX_MESH_VERTICES = 100_000
MAX_MESH_FACES = 200_000


def _at_most(items: list | None, limit: int, what: str) -> None:
    # size limits are checked here, not as schema maxItems: llama.cpp turns maxItems into one
    # grammar rule per item, and a 100,000-item limit made a 15 MB grammar for the embedded model
    if items is not None and len(items) > limit:
        raise ValueError(f"at most {limit:,} {what} per call, got {len(items):,}")


class AddMeshArgs(Args):
    name: Name
    vertices: list[Vec3] = Field(min_length=3, description=f"[[x, y, z], ...] in metres, relative to location (at most {MAX_MESH_VERTICES:,})")
    faces: list[Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=3)]] = Field(
        min_length=1, description=f"faces as lists of 0-based vertex indices, counter-clockwise seen from outside (at most {MAX_MESH_FACES:,})")
    location: Vec3 = [0.0, 0.0, 0.0]
    rotation_deg: Vec3 = [0.0, 0.0, 0.0]

    @model_validator(mode="after")
    def _sizes(self) -> AddMeshArgs:
        _at_most(self.vertices, MAX_MESH_VERTICES, "vertices")
        _at_most(self.faces, MAX_MESH_FACES, "faces")
        return self


@tool
def add_mesh(args: AddMeshArgs, ctx: ToolContext) -> ToolResult:
    """Add a mesh object from vertices and faces (e.g. a tapered leg as 8 vertices and 6 quads). Returns its dimensions and how many edges are not manifold (0 for a closed solid).

    Args: ``AddMeshArgs``. Returns ``data["added"]`` and ``data["non_manifold_edges"]``.
    """
    data = worker(ctx).call("add_mesh", args.model_dump())
    holes = data["non_manifold_edges"]
    note = "closed surface" if holes == 0 else f"{holes} non-manifold edges: not a closed solid yet"
    return _result(f"added mesh {data['added']['name']!r} ({note})", data)


class DeleteObjectArgs(Args):
    name: Name


@tool
def delete_object(args: DeleteObjectArgs, ctx: ToolContext) -> ToolResult:
    """Delete an object from the scene.

    Args: ``DeleteObjectArgs``. Returns ``data["deleted"]``.
    """
    return _result(f"deleted {args.name!r}", worker(ctx).call("delete_object", args.model_dump()))


class TransformArgs(Args):
    name: Name
    location: Vec3 | None = Field(None, description="new location in metres")
    translate: Vec3 | None = Field(None, description="move by this offset in metres")
    rotation_deg: Vec3 | None = Field(None, description="new XYZ Euler rotation in degrees")
    scale: Positive3 | None = Field(None, description="new scale factors")
    dimensions: Positive3 | None = Field(None, description="new bounding dimensions in metres (sets scale)")

    @model_validator(mode="after")
    def _something(self) -> TransformArgs:
        if all(getattr(self, k) is None for k in ("location", "translate", "rotation_deg", "scale", "dimensions")):
            raise ValueError("give at least one of location, translate, rotation_deg, scale, dimensions")
        return self


@tool
def transform(args: TransformArgs, ctx: ToolContext) -> ToolResult:
    """Move, rotate or scale an object, or set its bounding dimensions in metres. Returns the object before and after.

    Args: ``TransformArgs``. Returns ``data["before"]`` and ``data["after"]``.
    """
    data = worker(ctx).call("transform", args.model_dump())
    return _result(f"transformed {args.name!r}: dimensions now {data['after']['dimensions']} m", data)


class ApplyScaleArgs(Args):
    name: Name


@tool
def apply_scale(args: ApplyScaleArgs, ctx: ToolContext) -> ToolResult:
    """Apply an object's scale to its mesh (scale becomes 1, dimensions stay), so bevels and solidify act in true metres.

    Args: ``ApplyScaleArgs``. Returns ``data["applied_scale"]`` and ``data["after"]``.
    """
    data = worker(ctx).call("apply_scale", args.model_dump())
    return _result(f"applied scale {data['applied_scale']} to {args.name!r}", data)


class AddModifierArgs(Args):
    name: Name = Field(description="the object to modify")
    kind: Literal["bevel", "boolean", "array", "mirror", "solidify", "subdivision"]
    width: float = Field(0.005, gt=0, le=10, description="bevel: width in metres")
    segments: int = Field(2, ge=1, le=16, description="bevel: segments")
    object: Name | None = Field(None, description="boolean: the operand object; mirror: optional mirror centre object")
    operation: Literal["difference", "union", "intersect"] = Field("difference", description="boolean operation")
    hide_operand: bool = Field(True, description="boolean: hide the operand from renders and checks")
    count: int = Field(2, ge=1, le=1000, description="array: number of copies")
    offset: Vec3 = Field([1.0, 0.0, 0.0], description="array: offset between copies in metres")
    axes: list[Literal["x", "y", "z"]] = Field(["x"], min_length=1, description="mirror: axes")
    thickness: float = Field(0.01, gt=-10, le=10, description="solidify: thickness in metres")
    levels: int = Field(1, ge=0, le=4, description="subdivision: levels")

    @model_validator(mode="after")
    def _operand(self) -> AddModifierArgs:
        if self.kind == "boolean" and not self.object:
            raise ValueError("a boolean needs object (the operand)")
        return self


@tool
def add_modifier(args: AddModifierArgs, ctx: ToolContext) -> ToolResult:
    """Add a live modifier: bevel (width, segments), boolean (object, operation; exact solver; both must be closed solids), array (count, offset m), mirror (axes), solidify (thickness m), subdivision (levels). Returns the face count before and after.

    Args: ``AddModifierArgs``. Returns ``data`` with ``modifier``, ``faces_before``, ``faces_after``, ``after``.
    """
    data = worker(ctx).call("add_modifier", args.model_dump())
    head = f"added {args.kind} to {args.name!r}: {data['faces_before']} -> {data['faces_after']} faces"
    if data.get("warning"):
        head += f"; WARNING: {data['warning']}"
    return _result(head, data)


# -- look ------------------------------------------------------------------------------------


class SetMaterialArgs(Args):
    object: Name
    material: Name = Field(description="material name, e.g. 'Oak'; reused if it exists")
    preset: str | None = Field(None, description="starting values: oak, walnut, pine, steel, brass, glass, ceramic, plastic_black, fabric_grey, "
                               "fabric_shade (translucent lampshade cloth), bulb (glowing warm white)")
    base_color: Color | None = Field(None, description="linear RGB, each 0-1")
    roughness: float | None = Field(None, ge=0, le=1)
    metallic: float | None = Field(None, ge=0, le=1)
    transmission: float | None = Field(None, ge=0, le=1, description="glass-like: light refracts through it")
    emission_color: Color | None = Field(None, description="the colour it glows, linear RGB 0-1 (a bulb, a screen)")
    emission_strength: float | None = Field(None, ge=0, le=1000, description="glow strength: 1 = the colour's own brightness; a lit bulb 5-20")
    sheen: float | None = Field(None, ge=0, le=1, description="cloth's soft rim highlight")
    translucency: float | None = Field(None, ge=0, le=1, description="fraction of light passing diffusely through (cloth, paper); not glass")
    faces: list[Annotated[int, Field(ge=0)]] | None = Field(None, description="face indices to assign to; omit for the whole object")
    faces_facing: Literal["+x", "-x", "+y", "-y", "+z", "-z"] | None = Field(
        None, description="assign to the faces whose world normal points this way (within 30 degrees), e.g. '+z' for tops")

    @model_validator(mode="after")
    def _one_selection(self) -> SetMaterialArgs:
        if self.faces is not None and self.faces_facing is not None:
            raise ValueError("give faces or faces_facing, not both")
        _at_most(self.faces, 1_000_000, "face indices")
        return self


@tool
def set_material(args: SetMaterialArgs, ctx: ToolContext) -> ToolResult:
    """Assign a Principled BSDF material to an object or some of its faces (by index, or by the direction they face). A new material needs a preset or a base_color; an existing one is reused and updated with any values given. emission_color/emission_strength make it glow (a bulb); translucency lets light through like cloth (a lampshade: preset fabric_shade).

    Args: ``SetMaterialArgs``. Returns ``data`` with ``material``, ``created``, ``faces``, ``settings`` (the values given)
    and ``material_now`` (every value read back from the material's nodes).
    """
    data = worker(ctx).call("set_material", args.model_dump())
    verb = "created and assigned" if data["created"] else "assigned"
    return _result(f"{verb} {data['material']!r} to {data['faces']} faces of {args.object!r}", data)


class AddLightArgs(Args):
    name: Name
    kind: Literal["point", "sun", "spot", "area"] = "area"
    location: Vec3
    target: Vec3 | None = Field(None, description="point the light aims at (area, spot, sun)")
    rotation_deg: Vec3 | None = None
    energy: float = Field(100.0, gt=0, le=1e6, description="power in watts (sun: W/m²)")
    color: Color = [1.0, 1.0, 1.0]
    size: float = Field(1.0, gt=0, le=100, description="area light size / point radius in metres")


@tool
def add_light(args: AddLightArgs, ctx: ToolContext) -> ToolResult:
    """Add a light (point, sun, spot, area) at a location in metres, optionally aimed at a target point; energy in watts.

    Args: ``AddLightArgs``. Returns ``data["added"]``.
    """
    return _result(f"added {args.kind} light {args.name!r}", worker(ctx).call("add_light", args.model_dump()))


class SetCameraArgs(Args):
    location: Vec3
    target: Vec3 = Field(description="point the camera looks at, in metres")
    lens_mm: float = Field(50.0, ge=5, le=500, description="focal length in millimetres (36 mm sensor)")


@tool
def set_camera(args: SetCameraArgs, ctx: ToolContext) -> ToolResult:
    """Place the scene camera (created if missing) at a location, looking at a target point.

    Args: ``SetCameraArgs``. Returns ``data`` with ``created`` and ``camera``.
    """
    return _result("camera placed", worker(ctx).call("set_camera", args.model_dump()))


class SetWorldArgs(Args):
    color: Color
    strength: float = Field(1.0, ge=0, le=100)


@tool
def set_world(args: SetWorldArgs, ctx: ToolContext) -> ToolResult:
    """Set the world background colour (linear RGB) and strength, the ambient light of renders.

    Args: ``SetWorldArgs``. Returns ``data`` with ``color`` and ``strength``.
    """
    return _result("world set", worker(ctx).call("set_world", args.model_dump()))


class RenderPreviewArgs(Args):
    path: str = Field("renders/preview.png", description="PNG path relative to the workspace, ending in .png")
    engine: Literal["cycles", "eevee"] = Field("cycles", description="cycles (CPU) or eevee")
    width: int | None = Field(None, ge=16, le=1280, description="pixels; default: the scene's aspect ratio (frame_camera's), the longer side 320")
    height: int | None = Field(None, ge=16, le=1280, description="pixels; default: as width")
    samples: int = Field(16, ge=1, le=1024)
    time_limit_s: float = Field(60.0, gt=0, le=600, description="seconds before the render is stopped")

    @model_validator(mode="after")
    def _png(self) -> RenderPreviewArgs:
        # checked here, not as a schema pattern: llama.cpp's grammar builder takes only ^...$ patterns
        if not self.path.lower().endswith(".png"):
            raise ValueError(f"path must end in .png, got {self.path!r}")
        return self


@tool
def render_preview(args: RenderPreviewArgs, ctx: ToolContext) -> ToolResult:
    """Render the camera's view to a small PNG (Cycles on the CPU by default) within a time limit. Returns the path, seconds taken, mean brightness (0 = black, 1 = white) and what the render shows: per object its share of the frame and where, what hides it, what the frame cuts off, its colour; a model that sees images also gets the picture.

    The description comes from a ray-cast object map of the camera's frame taken right after the
    render (``plugins.threed.probe.render_view``, ``plugins.threed.view_text``); the PNG is the
    result's image (``ToolResult.images``), shown to a vision model (``core.policy.images``).

    Args: ``RenderPreviewArgs``. Returns ``data`` with ``path``, ``seconds``, ``mean_brightness``
    and ``view`` (``view_text.summarize``'s numbers, None without a camera).
    """
    target = ctx.resolve(args.path)
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = {**args.model_dump(), "path": str(target)}
    try:
        data = worker(ctx).call("render_preview", payload, timeout_s=args.time_limit_s)
    except ToolError as exc:
        if "time limit" in str(exc):
            raise ToolError(f"{exc}. The render exceeded time_limit_s={args.time_limit_s:g}; use fewer samples, a smaller size, or a longer limit") from None
        raise
    data["path"] = args.path
    dark = " (very dark: add or strengthen lights)" if data["mean_brightness"] < 0.03 else ""
    view = data.pop("view", None)
    result = _result(f"rendered {args.path} in {data['seconds']} s, mean brightness {data['mean_brightness']}{dark}", data)
    seen = f"\n{view_text.describe(view)}" if view else ""  # after the numbers: what a text-only model sees instead of the picture
    return result.model_copy(update={"output": result.output + seen, "data": {**result.data, "view": view}, "images": [target]})


class ExportSceneArgs(Args):
    format: Literal["gltf", "stl", "obj", "blend"]
    path: str = Field(description="output path relative to the workspace: .glb, .stl, .obj or .blend")
    objects: list[Name] | None = Field(None, description="objects to export; omit for all visible meshes (not for blend)")


_SUFFIX = {"gltf": ".glb", "stl": ".stl", "obj": ".obj", "blend": ".blend"}


@tool
def export_scene(args: ExportSceneArgs, ctx: ToolContext) -> ToolResult:
    """Export meshes (modifiers applied) to glTF binary (.glb), STL or OBJ, or save a copy of the .blend. Returns the path and size in bytes.

    Args: ``ExportSceneArgs``. Returns ``data`` with ``path``, ``bytes``.
    """
    if not args.path.lower().endswith(_SUFFIX[args.format]):
        raise ToolError(f"a {args.format} export needs a path ending in {_SUFFIX[args.format]}, got {args.path!r}")
    target = ctx.resolve(args.path)
    if target == ctx.resolve(task_spec(ctx).scene):
        raise ToolError(f"{args.path} is the working scene file, saved after every change already; choose another path")
    target.parent.mkdir(parents=True, exist_ok=True)
    w = worker(ctx)
    if args.format == "blend":
        data = w.call("save_scene", {"path": str(target), "copy": True}, save=False)
    else:
        data = w.call("export_scene", {**args.model_dump(), "path": str(target)}, save=False)
    data["path"] = args.path
    return _result(f"wrote {args.path} ({data['bytes']} bytes)", data)


class RunPythonArgs(Args):
    code: str = Field(min_length=1, description="Python using bpy; the scene is loaded before and saved after (at most 100,000 characters)")
    timeout_s: float = Field(60.0, gt=0, le=600)

    @model_validator(mode="after")
    def _size(self) -> RunPythonArgs:
        _at_most(self.code, 100_000, "characters of code")
        return self


@tool
def run_blender_python(args: RunPythonArgs, ctx: ToolContext) -> ToolResult:
    """Run raw Python (bpy) on the scene in a separate sandboxed Blender process; the scene is saved after it and reloaded. Prefer the typed tools; output is stdout and stderr.

    Args: ``RunPythonArgs``. Returns ``data`` with ``exit_code`` and ``timed_out``.
    """
    if os.environ.get(PYTHON_ENV) != "1":
        raise ToolError(f"raw Python is disabled; the user enables it with {PYTHON_ENV}=1")
    if "\0" in args.code:
        raise ToolError("the code contains a NUL byte; remove it")
    w = worker(ctx)
    w.ensure_started()  # the scene file exists and holds the last step
    script_dir = ctx.workspace / ".horizon" / "threed"
    make_dirs(script_dir, ctx.workspace)  # links the agent planted there are replaced, not followed
    script, runner = script_dir / "snippet.py", script_dir / "exec_script.py"
    write_new(script, args.code)
    # The runner is copied next to the snippet: Horizon's own source tree may not be visible in the
    # sandbox (a checkout under the home or /tmp is hidden), and the runner needs only bpy.
    write_new(runner, (Path(__file__).parent / "exec_script.py").read_bytes())
    limits = ctx.sandbox.limits.model_copy(update={"timeout_s": args.timeout_s})
    proc = ctx.sandbox.run(
        [sys.executable, str(runner), str(w.scene_path), str(script)], env={"HOME": str(ctx.workspace)}, limits=limits,
    )
    script.unlink(missing_ok=True)
    runner.unlink(missing_ok=True)
    w.call("open_scene", {"path": str(w.scene_path)}, save=False)
    status = f"timed out after {args.timeout_s:g} s" if proc.timed_out else f"exit code {proc.exit_code}"
    text = f"{status}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr[-4000:]}"
    return ToolResult(output=text, is_error=not proc.ok, data={"exit_code": proc.exit_code, "timed_out": proc.timed_out})


class FinishArgs(Args):
    summary: str = Field(min_length=1, description="what you built and how you checked it")


@tool(read_only=True)
def finish(args: FinishArgs, ctx: ToolContext) -> ToolResult:
    """Finish: call once the scene is built and checked; the scene is then scored by geometry checks.

    Args: ``FinishArgs``. Returns a result with ``done=True``.
    """
    summary = args.summary.strip()
    if not summary:
        raise ToolError("summary is empty; say what you built")
    return ToolResult(output=f"Finished: {summary}", done=True, data={"summary": summary})


#: The typed tools, in the order offered to the model.
THREED_TOOLS: list[Tool] = [
    inspect_scene, add_primitive, add_mesh, delete_object, transform, apply_scale, add_modifier, set_material,
    add_light, set_camera, set_world, render_preview, export_scene, finish,
]


def threed_tools() -> list[Tool]:
    """The tools, with the artist's toolset (``tools_modelling``) before ``finish``;
    ``run_blender_python`` is added only when ``HORIZON_THREED_PYTHON=1``."""
    from plugins.threed.tools_modelling import MODELLING_TOOLS  # it imports this module

    extra = [run_blender_python] if os.environ.get(PYTHON_ENV) == "1" else []
    return [*THREED_TOOLS[:-1], *MODELLING_TOOLS, *extra, THREED_TOOLS[-1]]


