"""Images in a chat request: a tool's render shown to a vision-language model as ``image_url`` parts.

The loop marks a wire message that carries images with Horizon's own key ``"images"`` (absolute
paths of PNG or JPEG files; ``core.loop.Episode._wire_message``). No server knows that key, so a
policy that talks to a server passes its messages through ``attach_images`` first:

- a text-only server (``vision=False``, the default) gets the key dropped: it reads the
  observation's text, which says what the image shows (the 3D plugin's render description);
- a vision server gets the pixels as OpenAI ``image_url`` content parts with a base64 data URL
  (``data:image/png;base64,...``), the form vLLM and SGLang accept for vision-language models
  (vLLM's "OpenAI Chat Completion Client For Multimodal" example; OpenAI's vision guide).

Where the image goes. OpenAI's Chat Completions accepts image parts in ``user`` messages only: a
``tool`` message's content may be text parts alone, and vLLM refuses an ``image_url`` part in a
``tool`` message (vllm-project/vllm issue #43203); the usual workaround for tool screenshots (an
OpenHands pull request, #10200, and OpenAI's community forum) is a ``user`` message right after the
tool results. So
the images of a run of ``tool`` messages go into ONE ``user`` message after the last of them:
a text part naming the call each image belongs to, then the image. A ``user`` message that carries
``images`` itself (the critic's question, ``core.critic``) gets its parts in place. The tool
messages stay text, so every server's template takes them.

How many. Only the latest ``IMAGES_SENT`` (2) images of the request go as pixels:
the latest render and the one before it, enough to compare a change. An older one is sent as its
observation's text alone (which holds its description), so a request carries at most two images
(vLLM's ``--limit-mm-per-prompt`` must allow 2: its default is 999 per modality on the V1 engine
but 1 on the old V0 engine, per ``vllm.config.multimodal.MultiModalConfig.limit_per_prompt``; a
V0 server needs ``--limit-mm-per-prompt '{"image": 2}'``). Cost for the prefix cache: the request
grows only at its end between renders, so it stays cacheable; each new render beyond the second drops the pixels of the
third-latest, which changes the request from that older render on, and the server recomputes the
turns since it (a few steps, once per render), never the opening.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

#: Images sent as pixels in one request: the latest ones; older ones are sent as their text only.
IMAGES_SENT = 2
#: The key the loop puts on a wire message that carries images (absolute file paths).
IMAGES_KEY = "images"
MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}


def data_url(path: Path) -> str:
    """The file as a ``data:`` URL (RFC 2397): ``data:image/png;base64,<base64 of the bytes>``.

    Raises:
        OSError: the file cannot be read.
        ValueError: not a ``.png``, ``.jpg`` or ``.jpeg`` file.
    """
    mime = MIME.get(path.suffix.lower())
    if mime is None:
        raise ValueError(f"{path.name}: only PNG and JPEG images can be sent to a model")
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def _image_part(path: str) -> dict[str, Any]:
    """One ``image_url`` part, or a text part saying why the image could not be read (a run folder
    whose images were deleted still replays)."""
    try:
        return {"type": "image_url", "image_url": {"url": data_url(Path(path))}}
    except (OSError, ValueError) as exc:
        return {"type": "text", "text": f"[image {Path(path).name} could not be read: {getattr(exc, 'strerror', None) or exc}]"}


def attach_images(messages: list[dict[str, Any]], *, vision: bool, limit: int = IMAGES_SENT) -> list[dict[str, Any]]:
    """The request as a server reads it: Horizon's ``images`` keys dropped, or turned into image parts.

    Args:
        messages: chat-completions message dicts; some may carry ``images`` (absolute paths).
        vision: the server's model sees images (``image_url`` parts); False: text only.
        limit: how many of the latest images go as pixels (module docstring).

    Returns:
        New message dicts (the input is not changed); without any ``images`` key, the same list.
    """
    if not any(IMAGES_KEY in m for m in messages):
        return messages
    if not vision:
        return [{k: v for k, v in m.items() if k != IMAGES_KEY} for m in messages]
    order = [(i, path) for i, m in enumerate(messages) for path in m.get(IMAGES_KEY) or []]
    chosen: dict[int, list[str]] = {}
    for i, path in order[len(order) - limit:] if limit > 0 else []:
        chosen.setdefault(i, []).append(path)
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []  # parts for the user message after the current run of tool messages
    for i, message in enumerate(messages):
        plain = {k: v for k, v in message.items() if k != IMAGES_KEY}
        if message["role"] != "tool" and pending:
            out.append({"role": "user", "content": pending})
            pending = []
        paths = chosen.get(i, [])
        if paths and message["role"] == "tool":
            label = f"The image{'s' * (len(paths) > 1)} of tool call {message.get('tool_call_id')} ({message.get('name') or 'tool'}):"
            pending += [{"type": "text", "text": label}, *(_image_part(p) for p in paths)]
        elif paths and message["role"] == "user":
            text = plain.get("content") or ""
            plain["content"] = [{"type": "text", "text": text}, *(_image_part(p) for p in paths)]
        out.append(plain)
    if pending:
        out.append({"role": "user", "content": pending})
    return out
