"""What ``agent plugins`` lists of the coding plugin without importing it (``core.plugin.describe_plugin``):
its description, its tools' names in order and the modules of its extra that loading it imports.
The plugin's ``description`` is this one; ``tests/core/test_plugin_manifests.py`` checks the
rest against the loaded plugin, so that it cannot drift."""

DESCRIPTION = "Fix bugs in Python, Java, JavaScript/TypeScript and Go repositories; graded by fail-to-pass and pass-to-pass tests."
TOOLS = ("search_code", "find_symbol", "repo_map", "view_file", "edit_file", "apply_patch", "run_tests", "static_check", "shell", "finish")
REQUIRES = ()  # loading it imports nothing of its extra (scipy and the grammars load when a tool needs them)
