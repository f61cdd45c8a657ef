"""The 3D plugin: Blender scenes through typed tools, a worker process, and geometry-check rewards."""

from plugins.threed.plugin import ThreeDPlugin

__all__ = ["ThreeDPlugin"]
