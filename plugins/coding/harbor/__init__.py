"""Horizon as an agent inside Harbor (``docs/harbor.md``).

Harbor (https://harborframework.com), the reference harness of Terminal-Bench 2, loads an agent
class by import path::

    harbor run --path TASK --agent-import-path plugins.coding.harbor:HorizonAgent \\
        --model openai/MODEL --agent-kwarg base_url=http://localhost:8000/v1

``HorizonAgent`` (``agent.py``) runs Horizon's own loop against Harbor's environment: its commands
through ``environment.exec`` (``sandbox.py``), its file tools on a local mirror of the container's
working folder kept in step with the container (``mirror.py``), Horizon's synchronous loop in a
worker thread bridged to Harbor's event loop (``bridge.py``). It needs only
``horizon-agents[coding]`` (no 3D extra) in Harbor's Python 3.12+ environment; ``harbor`` itself is
imported only when installed.
"""

from plugins.coding.harbor.agent import HarborCodingPlugin, HorizonAgent

__all__ = ["HarborCodingPlugin", "HorizonAgent"]
