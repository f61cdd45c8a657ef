"""Model backends behind one interface (``Policy``): a model server, an embedded model, a script."""

from core.policy.base import Policy, PolicyResponse
from core.policy.embedded import EmbeddedPolicy
from core.policy.openai_server import EndpointFailed, OpenAIServerPolicy
from core.policy.router import FallbackPolicy, with_fallback
from core.policy.scripted import ScriptedPolicy, load_script

__all__ = ["EmbeddedPolicy", "EndpointFailed", "FallbackPolicy", "OpenAIServerPolicy", "Policy", "PolicyResponse", "ScriptedPolicy", "load_script", "with_fallback"]
