"""The artist's toolset as typed tools: duplicate, join, parent, apply_modifier, shade_smooth,
lathe, pipe (``ops_modelling`` in the worker) and uv_unwrap, set_surface, light_preset,
frame_camera (``ops_look``). Each validates its arguments here (pydantic), runs one operation in
the episode's Blender worker and returns what changed. Units: metres, degrees, watts; colours are
linear RGB in [0, 1].
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from core.api import Tool, ToolContext, ToolError, ToolResult, tool
from plugins.threed.tools import Args, Color, Name, Vec3, _at_most, _result, worker

Names = Annotated[list[Name], Field(min_length=1)]  # sizes checked in validators: maxItems bloats llama.cpp grammars
ProfilePoint = Annotated[list[float], Field(min_length=2, max_length=2)]


# -- duplicate, join, parent, apply, shade -------------------------------------------------


class DuplicateArgs(Args):
    name: Name = Field(description="the object to copy")
    count: int = Field(1, ge=1, le=100, description="copies, each `offset` further than the last")
    offset: Vec3 = Field([1.0, 0.0, 0.0], description="metres between consecutive copies")
    offsets: list[Vec3] | None = Field(None, min_length=1,
                                       description="instead of count/offset: one copy per entry, at this offset (m) from the original")
    names: list[Name] | None = Field(None, description="names of the copies, one each (default <name>.001, ...)")
    linked: bool = Field(False, description="share the mesh (edits to one change all)")

    @model_validator(mode="after")
    def _names(self) -> DuplicateArgs:
        _at_most(self.offsets, 100, "offsets")
        copies = len(self.offsets) if self.offsets else self.count
        if self.names is not None and len(self.names) != copies:
            raise ValueError(f"names has {len(self.names)} entries for {copies} copies; give one name per copy or none")
        if self.names is not None and len(set(self.names)) != len(self.names):
            raise ValueError("names repeat; every copy needs its own name")
        return self


@tool
def duplicate(args: DuplicateArgs, ctx: ToolContext) -> ToolResult:
    """Copy an object (mesh, materials and modifiers): `count` copies each `offset` metres further, or one per entry of `offsets` (from the original), named by `names`. Returns each copy.

    Args: ``DuplicateArgs``. Returns ``data["copies"]`` (object descriptions).
    """
    data = worker(ctx).call("duplicate", args.model_dump())
    n = len(data["copies"])
    return _result(f"made {n} {'copy' if n == 1 else 'copies'} of {args.name!r}: {', '.join(c['name'] for c in data['copies'])}", data)


class JoinArgs(Args):
    into: Name = Field(description="the object that receives the others and keeps its name")
    objects: Names = Field(description="the mesh objects to merge into it (they disappear)")


@tool
def join(args: JoinArgs, ctx: ToolContext) -> ToolResult:
    """Join mesh objects into one (`into` keeps its name, transform and materials, plus theirs). Objects must have no live modifiers: apply_modifier first.

    Args: ``JoinArgs``. Returns ``data`` with ``joined``, ``after`` and ``non_manifold_edges``.
    """
    data = worker(ctx).call("join", args.model_dump())
    return _result(f"joined {', '.join(data['joined'])} into {args.into!r}: {data['after']['faces']} faces", data)


class ParentArgs(Args):
    parent: Name
    children: Names
    keep_transform: bool = Field(True, description="children stay where they are in the world")


@tool
def parent(args: ParentArgs, ctx: ToolContext) -> ToolResult:
    """Parent objects to another so they move with it; keep_transform (default) leaves them where they are.

    Args: ``ParentArgs``. Returns ``data`` with ``parent`` and ``children``.
    """
    data = worker(ctx).call("parent", args.model_dump())
    return _result(f"parented {', '.join(args.children)} to {args.parent!r}", data)


class ApplyModifierArgs(Args):
    name: Name = Field(description="the object")
    modifier: Name | None = Field(None, description="the modifier's name (inspect_scene lists them); omit to apply all, in order")


@tool
def apply_modifier(args: ApplyModifierArgs, ctx: ToolContext) -> ToolResult:
    """Apply a live modifier (by name, or all in stack order) to the object's mesh, making its result permanent geometry.

    Args: ``ApplyModifierArgs``. Returns ``data`` with ``applied``, ``remaining``, ``after``, ``non_manifold_edges``.
    """
    data = worker(ctx).call("apply_modifier", args.model_dump())
    return _result(f"applied {', '.join(data['applied'])} on {args.name!r}: {data['after']['faces']} faces", data)


class ShadeArgs(Args):
    objects: Names
    smooth: bool = Field(True, description="smooth shading; false: flat")
    angle_deg: float | None = Field(30.0, gt=0, le=180,
                                    description="auto-smooth: edges sharper than this stay crisp; null smooths every edge")


@tool
def shade_smooth(args: ShadeArgs, ctx: ToolContext) -> ToolResult:
    """Shade objects smooth (rounded surfaces stop looking faceted), keeping edges sharper than angle_deg crisp (auto-smooth); or flat.

    Args: ``ShadeArgs``. Returns ``data`` with ``objects``, ``smooth``, ``angle_deg``.
    """
    data = worker(ctx).call("shade", args.model_dump())
    how = f"smooth (edges over {args.angle_deg:g} degrees kept sharp)" if args.smooth and args.angle_deg else ("smooth" if args.smooth else "flat")
    return _result(f"shaded {', '.join(data['objects'])} {how}", data)


# -- lathe, pipe ---------------------------------------------------------------------------


class LatheArgs(Args):
    name: Name
    profile: list[ProfilePoint] = Field(min_length=2,
                                        description="[r, z] points in metres, r >= 0 the distance from the Z axis; r = 0 is on the axis")
    segments: int = Field(48, ge=3, le=512, description="steps around the axis")
    closed: bool = Field(False, description="join the last point back to the first (a ring or wall cross-section)")
    smooth: int = Field(1, ge=1, le=32, description="points per profile segment on a smooth spline through the points "
                        "(8: a smooth bowl from a few points); 1 = straight segments")
    sharp: list[Annotated[int, Field(ge=0)]] | None = Field(None, description="indices of profile points that stay sharp corners when smooth")
    location: Vec3 = Field([0.0, 0.0, 0.0], description="where the profile's axis origin goes, in metres")

    @model_validator(mode="after")
    def _profile(self) -> LatheArgs:
        _at_most(self.profile, 2000, "profile points")
        if len(self.profile) * self.smooth > 20000:
            raise ValueError(f"{len(self.profile)} points x smooth {self.smooth} is over 20000 revolved points; give fewer points or a lower smooth")
        bad = [i for i in self.sharp or [] if i >= len(self.profile)]
        if bad:
            raise ValueError(f"sharp index {bad[0]} is not a profile point (0..{len(self.profile) - 1})")
        for i, (r, z) in enumerate(self.profile):
            if r < 0 or abs(r) > 1000 or abs(z) > 1000:
                raise ValueError(f"profile point {i} is [{r}, {z}]: r must be >= 0 (the distance from the axis) and both within 1000 m")
        for i in range(len(self.profile) - 1):
            if self.profile[i] == self.profile[i + 1]:
                raise ValueError(f"profile points {i} and {i + 1} are the same; remove the repeat")
        if all(r == 0 for r, _ in self.profile):
            raise ValueError("every profile point is on the axis (r = 0): there is nothing to revolve")
        if self.closed and len(self.profile) < 3:
            raise ValueError("a closed profile needs at least 3 points")
        return self


@tool
def lathe(args: LatheArgs, ctx: ToolContext) -> ToolResult:
    """Revolve a 2D profile of [r, z] points (metres) around the Z axis into a mesh: a mug body, vase, bowl. A profile starting and ending on the axis (r = 0) makes a closed solid; trace a wall's cross-section (out, up, over the rim, down inside) to hollow it. closed joins the last point to the first. smooth=8 curves a spline through the points (a smooth wine-glass bowl from a few), sharp keeps chosen points as corners.

    Args: ``LatheArgs``. Returns ``data`` with ``added``, ``non_manifold_edges``, ``closed_solid``, ``profile_points`` (given, revolved).
    """
    data = worker(ctx).call("lathe", args.model_dump())
    note = "closed solid" if data["closed_solid"] else f"open surface ({data['non_manifold_edges']} open edges): solidify it or end the profile on the axis"
    return _result(f"lathed {args.name!r} ({note}), dimensions {data['added']['dimensions']} m", data)


class PipeArgs(Args):
    name: Name
    points: list[Vec3] = Field(min_length=2, description="points the tube's centre passes through, metres, world")
    radius: float = Field(gt=0, le=100, description="tube radius in metres")
    smooth: bool = Field(True, description="a smooth curve through the points; false: straight segments")
    resolution: int = Field(12, ge=1, le=64, description="steps between points along a smooth curve")
    bevel_resolution: int = Field(4, ge=0, le=16, description="roundness of the cross-section (4 + 2x this sides)")

    @model_validator(mode="after")
    def _distinct(self) -> PipeArgs:
        _at_most(self.points, 1000, "points")
        for i in range(len(self.points) - 1):
            if self.points[i] == self.points[i + 1]:
                raise ValueError(f"points {i} and {i + 1} are the same; remove the repeat")
        return self


@tool
def pipe(args: PipeArgs, ctx: ToolContext) -> ToolResult:
    """A round tube of a radius (metres) through points (metres), capped: a mug handle, chair frame tubes, rails. Built from a bevelled curve and turned into a closed mesh. To branch: a second pipe starting inside the first, then add_modifier boolean union and apply_modifier.

    Args: ``PipeArgs``. Returns ``data`` with ``added``, ``non_manifold_edges``, ``closed_solid``.
    """
    data = worker(ctx).call("pipe", args.model_dump())
    note = "closed solid" if data["closed_solid"] else f"{data['non_manifold_edges']} open edges"
    return _result(f"made pipe {args.name!r} ({note}), dimensions {data['added']['dimensions']} m", data)


# -- surfaces, light, camera ---------------------------------------------------------------


class UvUnwrapArgs(Args):
    objects: Names
    angle_limit_deg: float = Field(66.0, gt=0, le=89, description="faces meeting at more than this start a new UV island")
    island_margin: float = Field(0.02, ge=0, le=0.5, description="space between islands, fraction of the UV square")


@tool
def uv_unwrap(args: UvUnwrapArgs, ctx: ToolContext) -> ToolResult:
    """Unwrap UVs by smart projection on each object (needed for image textures). Returns the UV area used per object (0-1).

    Args: ``UvUnwrapArgs``. Returns ``data["uv_area"]``.
    """
    data = worker(ctx).call("uv_unwrap", args.model_dump())
    return _result(f"unwrapped {', '.join(data['uv_area'])}", data)


class SetSurfaceArgs(Args):
    objects: Names = Field(description="every object that gets this material (all its faces)")
    material: Name = Field(description="material name, e.g. 'Oak'; rebuilt if it exists")
    preset: Literal["oak", "walnut", "pine", "ceramic", "brushed_metal", "fabric", "image"] = Field(
        description="oak / walnut / pine: procedural grain; ceramic: glossy glaze; brushed_metal; fabric: woven cloth that light "
                    "shines through (a lampshade); image: an image file through the UV map")
    color: Color | None = Field(None, description="ceramic glaze, metal or fabric colour, linear RGB")
    emission_color: Color | None = Field(None, description="make it glow this colour (linear RGB), on top of the preset")
    emission_strength: float | None = Field(None, ge=0, le=1000, description="glow strength: 1 = the colour's own brightness; a lit bulb 5-20")
    grain_axis: Literal["x", "y", "z"] = Field("x", description="object axis the wood grain or brushing runs along (a leg: z)")
    scale: float = Field(1.0, gt=0, le=100, description="pattern size factor (2 = grain twice as coarse)")
    image_path: str | None = Field(None, description="image preset: PNG/JPEG path relative to the workspace")

    @model_validator(mode="after")
    def _image(self) -> SetSurfaceArgs:
        if (self.preset == "image") != (self.image_path is not None):
            raise ValueError("image_path goes with preset 'image' and only with it")
        return self


@tool
def set_surface(args: SetSurfaceArgs, ctx: ToolContext) -> ToolResult:
    """Give objects a textured material from a preset: oak, walnut or pine (procedural grain along grain_axis), ceramic (glossy glaze, color), brushed_metal (color), fabric (woven cloth light shines through, color), or image (a workspace image through UVs: uv_unwrap first). Replaces their materials; emission_color/emission_strength make it glow.

    Args: ``SetSurfaceArgs``. Returns ``data`` with ``material``, ``preset``, ``objects``, ``settings``.
    """
    payload = args.model_dump()
    if args.image_path is not None:
        target = ctx.resolve(args.image_path)
        if not target.is_file():
            raise ToolError(f"image {args.image_path} does not exist in the workspace; give a PNG or JPEG path relative to it")
        payload.update(image_path=str(target), root=str(ctx.workspace.resolve()))
    data = worker(ctx).call("set_surface", payload)
    return _result(f"{args.preset} material {data['material']!r} on {', '.join(data['objects'])}", data)


class LightPresetArgs(Args):
    preset: Literal["three_point", "studio", "sun_sky"] = Field(
        description="three_point: key, fill, rim; studio: seamless curved backdrop and soft boxes; sun_sky: sun, physical sky, ground")
    objects: list[Name] | None = Field(None, description="the subject the lights are sized and aimed for (default: every visible mesh)")
    strength: float = Field(1.0, gt=0, le=100, description="multiplies every light's power")
    sun_elevation_deg: float = Field(35.0, ge=1, le=90, description="sun_sky: the sun's height above the horizon")
    sun_azimuth_deg: float = Field(60.0, ge=-360, le=360, description="sun_sky: where the sun is, 0 = front (-Y), 90 = right (+X); "
                                   "away from the camera's side, shadows fall where it sees them")


@tool
def light_preset(args: LightPresetArgs, ctx: ToolContext) -> ToolResult:
    """Light the subject with a preset sized from its bounding box, replacing an earlier preset: three_point, studio (seamless cyclorama backdrop with no horizon line, overhead softbox, key and fill) or sun_sky.

    Args: ``LightPresetArgs``. Returns ``data`` with ``preset``, ``added``, ``removed``, ``subject``.
    """
    data = worker(ctx).call("light_preset", args.model_dump())
    return _result(f"{args.preset} lighting: added {', '.join(o['name'] for o in data['added'])}", data)


class FrameCameraArgs(Args):
    objects: list[Name] | None = Field(None, description="what to frame (default: every visible mesh this run built, not preset backdrops)")
    include_existing: bool = Field(False, description="also frame the meshes the scene started with (e.g. the default Cube); default: only what this run built")
    azimuth_deg: float = Field(-35.0, ge=-360, le=360, description="view direction around Z: 0 = from the front (-Y), 90 = from +X")
    elevation_deg: float = Field(20.0, ge=-89, le=89, description="camera height angle above the subject's centre")
    lens_mm: float = Field(50.0, ge=5, le=500, description="focal length (36 mm sensor on the frame's longer side)")
    margin: float = Field(0.1, ge=0, le=0.45, description="fraction of the frame left empty on the tightest side (each side)")
    width: int = Field(320, ge=16, le=4096, description="the frame's width in pixels (render at this aspect)")
    height: int = Field(240, ge=16, le=4096)


@tool
def frame_camera(args: FrameCameraArgs, ctx: ToolContext) -> ToolResult:
    """Place the camera so the objects' bounding box (default: what this run built) fills the frame up to a margin, seen from an azimuth and elevation through a lens; centred. Sets the render size to width x height (render at that aspect).

    Args: ``FrameCameraArgs``. Returns ``data`` with ``camera``, ``distance_m``, ``frame_filled``, ``subject``.
    """
    data = worker(ctx).call("frame_camera", args.model_dump())
    f = data["frame_filled"]
    head = f"camera {data['distance_m']} m from the subject; it fills {f['horizontal']:.0%} x {f['vertical']:.0%} of the frame"
    if data.get("left_out"):
        head += f"; left out what the scene started with: {', '.join(data['left_out'][:8])} (include_existing=true frames them too)"
    return _result(head, data)


#: The toolset, in the order offered to the model (after the basic tools, before finish).
MODELLING_TOOLS: list[Tool] = [duplicate, join, parent, apply_modifier, shade_smooth, lathe, pipe, uv_unwrap, set_surface,
                               light_preset, frame_camera]
