"""Run a Python snippet on a saved scene, then save it: ``python exec_script.py SCENE SNIPPET``.

Started by the ``run_blender_python`` tool through the episode's sandbox, from a copy next to the
snippet (it needs only bpy; Horizon's source tree may be hidden in the sandbox), a fresh process
each time, never inside the agent or the long-lived worker, so code the model writes is confined
like any other command. Exit status 0 when the snippet ran and the scene was saved, 1 otherwise
(the traceback is on stderr).
"""

from __future__ import annotations

import sys
import traceback


def main(argv: list[str]) -> int:
    """Load ``argv[0]`` (.blend), exec the file ``argv[1]`` with ``bpy`` in scope, save the scene."""
    scene, snippet = argv
    import bpy  # the sandbox gives this process its own copy of Blender

    bpy.ops.wm.open_mainfile(filepath=scene, load_ui=False)
    bpy.context.preferences.filepaths.save_version = 0
    with open(snippet, encoding="utf-8") as f:
        code = f.read()
    try:
        exec(compile(code, "snippet.py", "exec"), {"bpy": bpy, "__name__": "__snippet__"})  # noqa: S102 - the tool's purpose
    except Exception:  # noqa: BLE001 - any error in the model's code is reported, the scene left unsaved
        traceback.print_exc()
        return 1
    bpy.ops.wm.save_as_mainfile(filepath=scene, check_existing=False, compress=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
