"""The critic: one extra model call that judges a tool's image (a render) against the task.

Research systems for 3D modelling with language models (LL3M: render, a vision critic, refine)
get much of their quality from a critic that looks at each render and says what is wrong. Here
it is optional (``Settings.critic``, ``agent run --critic``; off by default) and small: after a
tool call whose result carries images, the run's own policy is asked, with no tools, whether what
the observation shows matches the request. Its answer is appended to the observation as
``[critic: ...]``, so the acting model reads it next step and the run store keeps it.

What the critic sees: the task, the tool call, the observation's text (for the 3D plugin that
holds the render's description) and, for a vision policy, the image itself (the ``images`` key,
``core.policy.images``). A failing critic call never fails the run: the note says it failed.
Its tokens are not counted in the episode's budgets (the observation's data records them).
"""

from __future__ import annotations

from typing import Any

from core.errors import ModelUnavailable
from core.policy.base import Policy
from core.state import ToolCall, Usage

SYSTEM = ("You are a strict reviewer of an agent's work. You are shown what the user asked for and the result of one of "
          "the agent's tool calls, a picture of its work so far (or a description of that picture). Judge only what is "
          "shown.")
QUESTION = ("Does this match the request so far? Answer in at most three sentences: begin with 'matches' or 'does not "
            "match', then say what is wrong or missing and the one change that would help most.")
#: The longest verdict kept, in characters (a critic that rambles is cut).
MAX_VERDICT_CHARS = 600


def critique(policy: Policy, request: str, call: ToolCall, observation: str, images: list[str]) -> tuple[str, dict[str, Any]]:
    """Ask ``policy`` to judge one observation against ``request``.

    Args:
        policy: the run's policy (its ``vision`` attribute says whether it sees ``images``).
        request: the task as the user wrote it.
        call: the tool call whose result is judged.
        observation: the observation's text as the model sees it.
        images: absolute paths of the observation's images (sent only to a vision policy).

    Returns:
        The note to append (``"\\n\\n[critic: ...]"``) and a record for the observation's data:
        ``{"verdict", "prompt_tokens", "completion_tokens"}`` or ``{"error"}``.
    """
    question: dict[str, Any] = {
        "role": "user",
        "content": f"The request:\n{request}\n\nThe agent's call: {call.name}({call.arguments})\n\nIts result:\n{observation}\n\n{QUESTION}",
    }
    if images and getattr(policy, "vision", False):
        question["images"] = images
    try:
        response = policy.complete([{"role": "system", "content": SYSTEM}, question], [])
    except ModelUnavailable as exc:
        return f"\n\n[critic: no verdict, the model call failed: {exc}]", {"error": str(exc)}
    verdict = " ".join((response.message.content or "").split())[:MAX_VERDICT_CHARS] or "(the critic said nothing)"
    usage: Usage = response.usage
    return f"\n\n[critic: {verdict}]", {"verdict": verdict, "prompt_tokens": usage.prompt_tokens,
                                        "completion_tokens": usage.completion_tokens}
