"""``agent mcp PLUGIN``: a plugin's tools served to MCP clients, every session a Horizon run.

An MCP client (Claude Desktop, an IDE, another agent) calls the plugin's tools over the official
``mcp`` SDK (stdio or streamable HTTP). What it gets is what ``agent run`` gives a model: the same
typed schemas, the same sandbox and limits, the same observations, and a run in the run store
(``agent runs``, ``agent show``, ``agent export``, ``agent apply``) with its reward and patch.

Design: the MCP client is the run's policy. A tool call does not run a tool here; it becomes
``McpPolicy``'s answer to the loop's next model request (an assistant turn holding that one
call), and the real loop (``core.loop``, in a thread of its own) validates it, runs it, shapes
and stores the observation, journals and checkpoints the step, counts it against the limits,
and asks the policy for the next turn. That request is the moment the observation is handed back
to the MCP client: it is read from the history the loop just stored, so the client sees exactly
what a model would (a refusal's text, the output cap, the budget note). ``finish`` (or a limit)
ends the episode the loop's way: the plugin's reward judges it, the patch is written, and the
verdict goes back with the call that ended it. Running a tool call is therefore written once, in
the loop; ``--policy human`` (``core.policy.human``) is the same idea over the OpenAI wire.

The other choice, calling ``Tool.fn`` from the MCP handler and writing the store from here, would
have needed a second copy of validation, error policy, observation cutting, the stuck detector,
the crash journal, checkpoints, limits and the reward's trigger, and would drift from the loop.

- ``session``: ``McpSession`` (runs started on demand, calls handed to the loop one at a time)
  and ``McpPolicy`` (the loop's side of the hand-off).
- ``McpExtension``: what a plugin adds through its ``mcp_extension(options)`` hook (the options
  ``agent mcp`` does not know): a task made per run (the 3D plugin: a copy of the artist's open
  Blender scene) and a note after each call (the step applied to that Blender, or why not).
- ``server``: the SDK's low-level ``Server`` built from a plugin and a session; stdio and HTTP.
- ``client``: the other direction, external MCP servers whose tools join an episode's tools
  (``McpToolset``, made by ``core.environment.Environment``); not imported here, because the
  environment imports it and this package imports the loop.
"""

from core.mcp.session import CallNote, CallOutcome, McpExtension, McpPolicy, McpSession

__all__ = ["CallNote", "CallOutcome", "McpExtension", "McpPolicy", "McpSession"]
