"""The 3D plugin: build Blender scenes through typed tools, scored by trimesh geometry checks."""

from __future__ import annotations

from pathlib import Path

from core.api import RewardComponent, RewardResult, Task, Tool, ToolContext, ToolError, Trajectory
from plugins.threed import look, physics
from plugins.threed.live import BlenderLink, parse_options
from plugins.threed.manifest import DESCRIPTION
from plugins.threed.reward import REWARD_VERSION, built_nothing, grade
from plugins.threed.spec import load_spec
from plugins.threed.structure import read_request
from plugins.threed.tools import close_worker, save_task_inputs, task_folder, task_spec, threed_tools, worker

SYSTEM_PROMPT = """\
You are a 3D artist building a scene in Blender through tools. Units: metres, degrees, watts;
colours are linear RGB in [0, 1]. Dimensions are world-axis bounding boxes (x, y, z); z is up.

How to work:
1. Read the requirements in the task message; inspect_scene shows what exists.
2. Build each required object under its exact name: add_primitive (cube size is the full extent)
   or add_mesh (vertices and faces), then transform / apply_scale and add_modifier.
   Round things: lathe (an [r, z] profile revolved around Z) and pipe (a tube through points);
   duplicate, join, parent, apply_modifier, shade_smooth for the rest.
   Keep every object a closed solid (booleans need closed operands).
3. set_material on each object (presets: oak, walnut, pine, steel, brass, glass, ceramic,
   plastic_black, fabric_grey, fabric_shade: cloth light shines through, bulb: glowing; or a
   base_color; emission_color glows), or set_surface for textured wood, glazed ceramic,
   brushed metal, woven fabric or an image, on several objects at once.
4. light_preset (three_point, studio, sun_sky) or add_light, and frame_camera or set_camera for
   the shot; render_preview to look at it (small, fast): it says what the camera shows of each
   object (its share of the frame, hidden, cut off, off camera).
5. inspect_scene again to compare dimensions with the request, fix what is off, then finish.

The scene is saved after every change; the final scene is scored by geometry checks (closed
solid, dimensions within tolerance, bodies, materials, face budget, lights, camera) and checks of
the whole object, from the request's words and where the task states them: the parts asked (name
each after its part: Leg.FL, Seat, Shelf.2), none coincident or poking through another, all joined,
resting on the floor, a cup that holds water, symmetric, seen unhidden by the camera. A failed
whole-object check caps the score far below a build that passes. A thing that must stand
(a chair, table, lamp, bookcase, glass...) is dropped on a floor in a rigid-body simulation:
parts that touch are glued together, loose ones fall; one that tips over or falls apart scores little.
"""


class ThreeDPlugin:
    """Plugin ``threed``: Blender geometry, materials, lights and renders; a geometry-check reward."""

    name = "threed"
    heavy_episodes = True  # each episode drives its own Blender worker process
    description = DESCRIPTION  # plugins/threed/manifest.py: agent plugins lists it without importing this module

    def system_prompt(self, task: Task) -> str:
        """The same text for every run (prefix caching); the requirements go in the task message."""
        return SYSTEM_PROMPT

    def tools(self) -> list[Tool]:
        """inspect_scene, add_primitive, add_mesh, delete_object, transform, apply_scale,
        add_modifier, set_material, add_light, set_camera, set_world, render_preview,
        export_scene, the artist's toolset (``tools_modelling.MODELLING_TOOLS``: duplicate, join,
        parent, apply_modifier, shade_smooth, lathe, pipe, uv_unwrap, set_surface, light_preset,
        frame_camera), [run_blender_python,] finish."""
        return threed_tools()

    def setup(self, task: Task, ctx: ToolContext) -> str:
        """Read task.json, start the Blender worker on the scene (creating an empty one), and
        return the requirements for the task message.

        Raises:
            UserError: task.json is malformed.
        """
        save_task_inputs(ctx)
        spec = task_spec(ctx)
        try:
            scene = worker(ctx).call("inspect_scene", {"limit": 20}, save=False)
        except ToolError as exc:
            return f"{spec.describe()}\n\nBlender could not start yet ({exc}); tools will retry."
        listing = ", ".join(o["name"] for o in scene["objects"]) or "none"
        return f"{spec.describe()}\n\nThe scene has {scene['total']} objects now: {listing}."

    def reward(self, task: Task, trajectory: Trajectory) -> RewardResult:
        """Export every visible mesh from the final scene (modifiers applied, world coordinates)
        and grade it (``plugins.threed.reward.grade``); then stop the episode's worker.

        Returns:
            The verdict, version ``threed-geometry/N``; a scene the worker cannot read scores 0,
            and so does a run that changed nothing (``reward.built_nothing``).

        Raises:
            ValueError: the trajectory has no live ``context`` (the scene is read by its worker).
        """
        ctx = trajectory.require_context(self.name)
        if (nothing := built_nothing(trajectory.tool_data)) is not None:
            close_worker(ctx)
            return nothing
        spec = task_spec(ctx)
        request = f"{spec.request} {task.instruction}"
        folder = ctx.scratch / "verify-meshes"
        try:
            # contacts and the camera's view are measured only when the task states the object or the words name one
            relations = spec.assembly is not None or read_request(f"{spec.request}. {task.instruction}").applies
            exported = worker(ctx).call("mesh_data", {"folder": str(folder), "relations": relations},
                                        save=False, timeout_s=300)
            looked = None
            if look.applies(spec, request):  # the look (materials, lighting) is rendered only when the task's words ask for it
                try:
                    looked = worker(ctx).call("look_data", {"folder": str(folder), "subject": spec.assembly_parts()}, save=False,
                                              timeout_s=300)
                except ToolError as exc:  # the geometry is still judged; every look check fails, saying why
                    looked = {"camera": False, "error": str(exc)}
            dropped = None
            if physics.applies(spec, request):  # the drop test runs only when the words name a thing that must stand
                args = physics.drop_args(spec, {m["name"] for m in exported["meshes"]})
                if args.get("parts") == []:
                    dropped = {"error": "none of the assembly's parts is in the scene"}
                else:
                    try:
                        dropped = worker(ctx).call("drop_test", args, save=False, timeout_s=120)
                    except ToolError as exc:  # judged as not standing, saying why
                        dropped = {"error": str(exc)}
        except ToolError as exc:
            return RewardResult(reward=0.0, correct=False, version=REWARD_VERSION, summary=f"the final scene could not be read: {exc}",
                                components={"scene/readable": RewardComponent(value=0.0, detail={"error": str(exc)})})
        finally:
            close_worker(ctx)
        return grade(spec, exported, task_folder(ctx), looked, request, dropped)  # the reference as set-up saved it, not the workspace's

    def validate(self, task: Task) -> None:
        """Refuse a task folder whose ``task.json`` does not parse, before a run is made.

        Raises:
            UserError: the file is not JSON or not a valid ``TaskSpec`` (the user's file is named).
        """
        if task.repo is not None:
            load_spec(Path(task.repo))

    def mcp_extension(self, options: list[str]) -> BlenderLink | None:
        """``agent mcp threed --blender PORT``: drive the artist's open Blender through the add-on
        listening on that port (``plugins.threed.live``); None without the option.

        Raises:
            UserError: an unknown option or a bad port.
        """
        return parse_options(options)

    def teardown(self, ctx: ToolContext) -> None:
        """Stop the episode's Blender worker when the run closes (ended, stopped or crashed)."""
        close_worker(ctx)
