"""The model sees its renders (issue 15, item 4): a real Blender ``render_preview`` in whole episodes
through the real ``OpenAIServerPolicy`` and a fake OpenAI-compatible server that records every
request. A vision server gets the PNG as an ``image_url`` part; a text-only one gets the render's
description; the critic's verdict comes back in the observation. Plus the description on a real
scene (an object off camera, one hidden inside another) and on made-up object maps."""

from __future__ import annotations

import base64
import json
from contextlib import closing
from typing import Any

import numpy as np
import pytest

from core.config import load_settings
from core.export import export_runs
from core.plugin import Task
from core.policy import OpenAIServerPolicy
from core.policy.retry import RetryConfig
from core.runner import Run, open_store
from core.state import ExitStatus, Limits, Pricing
from plugins.threed import tools, view_text
from tests.core.policy.fault_server import FaultServer, completion

# A seat in view, a small block hidden inside it, a block far to the right of the camera.
SCENE = [
    ("add_primitive", {"kind": "cube", "name": "Seat", "size": [1.0, 1.0, 0.4], "location": [0, 0, 0.5]}),
    ("add_primitive", {"kind": "cube", "name": "Hidden", "size": [0.2, 0.2, 0.2], "location": [0, 0, 0.5]}),
    ("add_primitive", {"kind": "cube", "name": "Far", "size": [1.0, 1.0, 1.0], "location": [40, 0, 0.5]}),
    ("add_light", {"name": "Key", "kind": "area", "location": [3, -3, 5], "target": [0, 0, 0], "energy": 800}),
    ("set_camera", {"location": [0, -5, 2], "target": [0, 0, 0.5]}),
]
RENDER = ("render_preview", {"width": 96, "height": 72, "samples": 1})
TURNS = [*SCENE, RENDER, ("finish", {"summary": "a seat"})]
VERDICT = "does not match: a chair needs four legs and a backrest; add them under and behind the seat"


class VisionServer(FaultServer):
    """Answers request N (N = assistant messages in it) with the N-th of ``TURNS``; a request
    without tools is the critic's and gets ``VERDICT``."""

    def __init__(self) -> None:
        super().__init__(responder=self._reply)

    def _reply(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("tools"):
            return completion(content=VERDICT, finish_reason="stop")
        index = sum(1 for m in body["messages"] if m["role"] == "assistant")
        name, arguments = TURNS[index]
        return completion([{"name": name, "arguments": json.dumps(arguments), "id": f"call_{index}"}])


def run_vision_episode(*, vision: bool, critic: bool) -> dict[str, Any]:
    """One episode with the turns above; returns the requests, the stored rows and the run folder."""
    with VisionServer() as server:
        policy = OpenAIServerPolicy(server.url, "vl-model", timeout_s=60, vision=vision, retry=RetryConfig(max_attempts=1))
        started = Run.start(
            Task(plugin="threed", instruction="model a chair with four legs and a backrest", repo=None), policy,
            policy_config={"kind": "openai", "base_url": server.url, "model": "vl-model", "vision": vision, "critic": critic},
            limits=Limits(max_steps=len(TURNS) + 1), pricing=Pricing(),
        )
        try:
            result = started.execute()
        finally:
            started.close()
        requests = [body for _, body in server.requests if body is not None]
    with closing(open_store(result.run_id)) as store:
        records = store.tool_call_records()
        messages = store.messages()
    assert result.exit_status == ExitStatus.SUBMITTED, result.exit_detail
    render = next(r for r in records if r["tool"] == "render_preview")
    observation = next(m.content for m in messages if m.role == "tool" and m.tool_call_id == render["tool_call_id"])
    return {"requests": requests, "render": render, "observation": observation, "folder": started.folder, "run_id": result.run_id}


def image_urls(body: dict[str, Any]) -> list[str]:
    return [p["image_url"]["url"] for m in body["messages"] if isinstance(m.get("content"), list)
            for p in m["content"] if isinstance(p, dict) and p.get("type") == "image_url"]


def test_a_render_reaches_a_vision_server_as_an_image_part_and_the_critic_judges_it():
    run = run_vision_episode(vision=True, critic=True)
    acting = [b for b in run["requests"] if b.get("tools")]
    critic = [b for b in run["requests"] if not b.get("tools")]
    after_render = acting[TURNS.index(RENDER) + 1]  # the request that follows the render
    # the store keeps the image's path (a copy the environment made), never its pixels
    (stored,) = run["render"]["data"]["images"]
    copy = run["folder"] / stored
    assert stored.startswith("scratch/images/") and copy.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert copy.read_bytes() == (run["folder"] / "workspace" / "renders" / "preview.png").read_bytes()
    (url,) = image_urls(after_render)
    assert url.startswith("data:image/png;base64,") and base64.b64decode(url.split(",", 1)[1]) == copy.read_bytes()
    # the image follows the tool message, in a user message (tool messages stay text)
    roles = [m["role"] for m in after_render["messages"]]
    assert roles[-2:] == ["tool", "user"] and isinstance(after_render["messages"][-2]["content"], str)
    assert all("images" not in m for b in run["requests"] for m in b["messages"])  # Horizon's key never reaches a server
    assert not any(image_urls(b) for b in acting[: TURNS.index(RENDER) + 1])  # no image before the render
    # the critic saw the same picture and the request; its verdict is in the observation the model read
    (question,) = critic
    assert image_urls(question) == [url] and "four legs and a backrest" in question["messages"][-1]["content"][0]["text"]
    assert f"[critic: {VERDICT}]" in run["observation"]
    assert f"[critic: {VERDICT}]" in after_render["messages"][-2]["content"]
    assert run["render"]["data"]["critic"]["verdict"] == VERDICT
    # export: the JSONL rows hold the observation's text (the description), never the pixels
    out = run["folder"].parent / "vision.jsonl"
    export_runs([run["run_id"]], "sft-jsonl", out, keep_flagged=True)
    text = out.read_text()
    assert "What the render shows" in text and "data:image" not in text and '"images"' not in text.split('"tools"')[0]
    # a reopened run (resume) rebuilds the request with the image from the store's path
    reopened = Run.open(run["run_id"], settings=load_settings(), policy=OpenAIServerPolicy("http://127.0.0.1:9/v1", "m", vision=True))
    try:
        marked = [m for m in reopened.episode._wire if "images" in m]
    finally:
        reopened.close()
    assert [(m["role"], m["images"]) for m in marked] == [("tool", [str(copy)])]


def test_a_text_only_server_reads_the_description_instead():
    run = run_vision_episode(vision=False, critic=True)
    assert not any(image_urls(b) for b in run["requests"])
    assert all("images" not in m for b in run["requests"] for m in b["messages"])
    after_render = [b for b in run["requests"] if b.get("tools")][TURNS.index(RENDER) + 1]
    described = after_render["messages"][-1]["content"]
    assert after_render["messages"][-1]["role"] == "tool" and "What the render shows" in described
    assert "- Seat: " in described and "Far: not in the picture (off camera: right of the frame)" in described
    assert "Hidden: hidden: entirely behind Seat" in described
    # the text-only critic was given the description
    (question,) = [b for b in run["requests"] if not b.get("tools")]
    assert "Far: not in the picture" in question["messages"][-1]["content"]
    assert run["render"]["data"]["images"]  # the image is kept all the same: a vision model could replay the run


def call(t, scene_ctx, **args):
    result = t.fn(t.parse(args), scene_ctx)
    assert not result.is_error, result.output
    return result


def test_description_of_a_real_scene_names_what_is_off_camera_hidden_and_cut(scene_ctx):
    for name, args in SCENE:
        call(getattr(tools, name), scene_ctx, **args)
    call(tools.add_primitive, scene_ctx, kind="uv_sphere", name="Edge", radius=0.5, location=[2.1, 0, 0.5])  # at the frame's right edge
    call(tools.add_primitive, scene_ctx, kind="cube", name="Behind", size=[1, 1, 1], location=[0, -9, 2])  # behind the camera
    result = call(tools.render_preview, scene_ctx, width=96, height=72, samples=1)
    assert result.images == [scene_ctx.workspace / "renders" / "preview.png"]
    view = {o["name"]: o for o in result.data["view"]["objects"]}
    assert view["Far"]["status"] == "off camera: right of the frame" and view["Far"]["outline"] == 0
    assert view["Behind"]["status"] == "off camera: behind the camera"
    assert view["Hidden"]["status"] == "hidden" and view["Hidden"]["share"] == 0 and set(view["Hidden"]["hidden_by"]) == {"Seat"}
    assert view["Seat"]["status"] == "shown" and 0.05 < view["Seat"]["share"] < 0.6 and view["Seat"]["where"] == "middle centre"
    assert view["Edge"]["status"] == "shown" and "right" in view["Edge"]["cut"] and view["Edge"]["where"].endswith("right")
    shares = sum(o["share"] for o in view.values()) + result.data["view"]["background"]
    assert shares == pytest.approx(1.0)
    assert "- Behind: not in the picture (off camera: behind the camera)" in result.output
    assert "cut off by the frame's right edge" in result.output


def test_summarize_on_a_made_up_map():
    inf = np.inf
    # 2 objects on a 3x3 frame: A fills the left column, B the centre; B is behind A in the top-left cell
    depth = np.full((2, 3, 3), inf)
    depth[0, :, 0] = 1.0
    depth[1, :, 1] = 2.0
    depth[1, 0, 0] = 3.0
    pixels = np.zeros((3, 3, 3))
    pixels[:, 0] = [0.9, 0.1, 0.1]
    extents = [{"x": [-0.2, 0.3], "y": [0.0, 1.0]}, {"x": [0.0, 0.7], "y": [0.0, 1.0]}]
    summary = view_text.summarize(["A", "B"], depth, extents, pixels)
    a, b = summary["objects"]
    assert a["share"] == pytest.approx(3 / 9) and a["cut"] == ["left"] and a["where"] == "middle left"
    assert a["colour"] == {"rgb": [230, 26, 26], "name": "red"}
    assert b["outline"] == pytest.approx(4 / 9) and b["hidden_by"] == {"A": pytest.approx(1 / 4)}
    assert summary["background"] == pytest.approx(3 / 9)
    with pytest.raises(ValueError, match="2 objects"):
        view_text.summarize(["A", "B"], depth[:1], extents, None)
