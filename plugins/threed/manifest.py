"""What ``agent plugins`` lists of the 3D plugin without importing it (``core.plugin.describe_plugin``):
its description, its tools' names in order and the modules of its extra that loading it imports.
The plugin's ``description`` is this one; ``tests/core/test_plugin_manifests.py`` checks the
rest against the loaded plugin, so that it cannot drift."""

DESCRIPTION = "Build 3D scenes in Blender (bpy) with typed tools; graded by trimesh geometry checks."
TOOLS = ("inspect_scene", "add_primitive", "add_mesh", "delete_object", "transform", "apply_scale", "add_modifier", "set_material",
         "add_light", "set_camera", "set_world", "render_preview", "export_scene", "duplicate", "join", "parent", "apply_modifier",
         "shade_smooth", "lathe", "pipe", "uv_unwrap", "set_surface", "light_preset", "frame_camera", "finish")
REQUIRES = ("trimesh", "manifold3d", "scipy", "networkx")
