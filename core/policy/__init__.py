"""Model backends behind one interface (``Policy``): a model server, an embedded model, a script.

The names are imported when first used (PEP 562): ``agent human wait`` reads an exchange folder
through ``core.policy.human`` without loading the OpenAI client or llama.cpp.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.policy.base import Policy, PolicyResponse
    from core.policy.embedded import EmbeddedPolicy
    from core.policy.openai_server import EndpointFailed, OpenAIServerPolicy
    from core.policy.router import FallbackPolicy, with_fallback
    from core.policy.scripted import ScriptedPolicy, load_script

#: Each public name and the module that defines it.
_WHERE = {"Policy": "base", "PolicyResponse": "base", "EmbeddedPolicy": "embedded", "EndpointFailed": "openai_server",
          "OpenAIServerPolicy": "openai_server", "FallbackPolicy": "router", "with_fallback": "router",
          "ScriptedPolicy": "scripted", "load_script": "scripted"}

__all__ = ["EmbeddedPolicy", "EndpointFailed", "FallbackPolicy", "OpenAIServerPolicy", "Policy", "PolicyResponse", "ScriptedPolicy",
           "load_script", "with_fallback"]
assert sorted(__all__) == sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'core.policy' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"core.policy.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
