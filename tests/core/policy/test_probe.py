"""The model-server probe (``core.policy.probe``) against real sockets: a closed port, a server
that answers 500, garbage, a non-list JSON, a 404 (a server without the route: passes) and a
proper model list."""

from __future__ import annotations

import pytest

from core.errors import UserError
from core.policy.probe import ModelServerUnreachable, probe_model_server
from tests.core.policy.models_server import ModelsServer, closed_port


def test_a_proper_model_list_passes_and_names_the_models():
    with ModelsServer() as server:
        assert probe_model_server(server.url) == ["m"]
        assert server.paths == ["GET /v1/models"]


def test_a_closed_port_is_reported_with_the_url_and_what_to_do():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(ModelServerUnreachable) as caught:
        probe_model_server(url)
    said = str(caught.value)
    assert isinstance(caught.value, UserError)  # the CLI's exit code 2
    assert f"GET {url}/models" in said and "nothing is listening there" in said
    assert "vLLM" in said and "llama.cpp" in said and "leave it out to use the embedded model" in said and "Nothing was set up" in said


@pytest.mark.parametrize(("status", "body", "content_type", "expected"), [
    (500, b"Internal Server Error: engine crashed", "text/plain", "it answered HTTP 500: 'Internal Server Error: engine crashed'"),
    (503, b'{"error": "loading"}', "application/json", "it answered HTTP 503"),
    (401, b'{"error": "no key"}', "application/json", "HTTP 401 (check HORIZON_API_KEY"),
    (200, b"\x00\xff<html>not json", "text/html", "its answer is not JSON"),
    (200, b'["m"]', "application/json", "not an OpenAI model list"),
    (200, b'{"models": []}', "application/json", "not an OpenAI model list"),
], ids=["500-text", "503-json", "401", "garbage", "json-array", "json-no-data"])
def test_a_server_that_answers_wrong_is_reported(status, body, content_type, expected):
    with ModelsServer(status=status, body=body, content_type=content_type) as server, pytest.raises(ModelServerUnreachable) as caught:
        probe_model_server(server.url)
    assert f"GET {server.url}/models" in str(caught.value) and expected in str(caught.value)


@pytest.mark.parametrize("status", [404, 405, 501])
def test_a_server_without_the_models_route_passes(status):
    with ModelsServer(status=status, body=b'{"error": "no such route"}') as server:
        assert probe_model_server(server.url) == []


def test_a_server_that_never_answers_times_out_in_the_probe_s_time():
    import socket

    with socket.socket() as listening:  # accepts connections (the kernel's backlog) but never answers
        listening.bind(("127.0.0.1", 0))
        listening.listen(1)
        url = f"http://127.0.0.1:{listening.getsockname()[1]}/v1"
        with pytest.raises(ModelServerUnreachable) as caught:
            probe_model_server(url, timeout_s=0.5)
    assert "no answer within 0.5 s" in str(caught.value)
