"""``core.policy.images``: where a tool's images go in a request, how many, and what a text-only server gets."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import pytest

from core.policy.images import IMAGES_SENT, attach_images, data_url
from core.policy.text_actions import to_text_wire


def png(path: Path, shade: int) -> Path:
    """A real 2x2 grey PNG (signature, IHDR, IDAT, IEND) at ``path``."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + bytes([shade, shade, shade]) * 2 for _ in range(2))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return path


def turn(i: int, images: list[Path] | None = None, calls: int = 1) -> list[dict]:
    """An assistant turn with ``calls`` tool calls and their observations; the first carries ``images``."""
    ids = [f"c{i}_{k}" for k in range(calls)]
    out = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": "render_preview", "arguments": "{}"}} for cid in ids]}]
    for k, cid in enumerate(ids):
        message = {"role": "tool", "content": f"rendered {i}.{k}", "tool_call_id": cid, "name": "render_preview"}
        if k == 0 and images:
            message["images"] = [str(p) for p in images]
        out.append(message)
    return out


OPENING = [{"role": "system", "content": "sys"}, {"role": "user", "content": "build a chair"}]


def image_parts(messages: list[dict]) -> list[str]:
    return [p["image_url"]["url"] for m in messages if isinstance(m.get("content"), list)
            for p in m["content"] if p.get("type") == "image_url"]


def test_text_only_server_gets_no_image_and_no_key(tmp_path):
    wire = OPENING + turn(1, [png(tmp_path / "a.png", 10)])
    sent = attach_images(wire, vision=False)
    assert all("images" not in m for m in sent)
    assert [m["content"] for m in sent] == [m["content"] for m in wire]  # the text is all there is
    assert "images" in wire[3]  # the caller's messages are not changed


def test_vision_server_gets_the_image_in_a_user_message_after_the_tool_results(tmp_path):
    image = png(tmp_path / "a.png", 10)
    wire = OPENING + turn(1, [image], calls=2)
    sent = attach_images(wire, vision=True)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert all(isinstance(m["content"], str) or m["content"] is None for m in sent[:5])  # tool messages stay text
    parts = sent[-1]["content"]
    assert parts[0] == {"type": "text", "text": "The image of tool call c1_0 (render_preview):"}
    url = parts[1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,") and base64.b64decode(url.split(",", 1)[1]) == image.read_bytes()
    assert all("images" not in m for m in sent)


def test_only_the_latest_images_are_sent_and_older_ones_become_text(tmp_path):
    images = [png(tmp_path / f"{i}.png", 20 * i) for i in range(4)]
    wire = OPENING + [m for i, image in enumerate(images) for m in turn(i, [image])]
    sent = attach_images(wire, vision=True)
    assert IMAGES_SENT == 2
    assert image_parts(sent) == [data_url(images[2]), data_url(images[3])]
    # the older renders' observations are still there, as their text
    assert [m["content"] for m in sent if m["role"] == "tool"] == [f"rendered {i}.0" for i in range(4)]
    # the request before the 4th render shares its whole start with this one up to the 2nd render's observation
    before = attach_images(OPENING + [m for i, image in enumerate(images[:3]) for m in turn(i, [image])], vision=True)
    assert before[:6] == sent[:6]


def test_a_user_message_with_images_gets_its_parts_in_place(tmp_path):
    image = png(tmp_path / "a.png", 10)
    sent = attach_images([{"role": "user", "content": "judge this", "images": [str(image)]}], vision=True)
    assert sent == [{"role": "user", "content": [{"type": "text", "text": "judge this"},
                                                   {"type": "image_url", "image_url": {"url": data_url(image)}}]}]


def test_a_missing_image_becomes_a_note_not_a_failure(tmp_path):
    sent = attach_images(OPENING + turn(1, [tmp_path / "gone.png"]), vision=True)
    note = sent[-1]["content"][1]
    assert note["type"] == "text" and "gone.png could not be read" in note["text"]


def test_text_tool_format_keeps_the_images_of_folded_tool_results(tmp_path):
    image = png(tmp_path / "a.png", 10)
    folded = to_text_wire(OPENING + turn(1, [image], calls=2), [])
    assert folded[-1]["role"] == "user" and folded[-1]["images"] == [str(image)]
    sent = attach_images(folded, vision=True)
    assert sent[-1]["content"][0]["type"] == "text" and "<tool_response>" in sent[-1]["content"][0]["text"]
    assert image_parts(sent) == [data_url(image)]


def test_data_url_refuses_other_kinds(tmp_path):
    (tmp_path / "a.gif").write_bytes(b"GIF89a")
    with pytest.raises(ValueError, match="only PNG and JPEG"):
        data_url(tmp_path / "a.gif")
    assert json.dumps(attach_images(OPENING, vision=True)) == json.dumps(OPENING)


def test_the_vision_and_critic_settings_reach_the_policy_and_the_run_config():
    from core.config import Settings
    from core.runner import make_policy, policy_spec

    settings = Settings(base_url="http://127.0.0.1:9/v1", model="vl", vision=True, critic=True)
    spec = policy_spec("openai", settings)
    assert (spec["vision"], spec["critic"]) == (True, True)  # recorded: a resumed run keeps them
    assert make_policy(spec, settings).vision is True
    assert make_policy({**spec, "vision": False}, settings).vision is False
    assert Settings().vision is False and Settings().critic is False  # off unless asked for
