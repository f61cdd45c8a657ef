"""Horizon's core: the agent loop, plugin protocol, model backends, sandbox and run store."""
