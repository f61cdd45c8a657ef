"""Adapters that let RL trainers roll out Horizon episodes themselves.

``core.export`` turns finished runs into training data; the modules here go the other way: a
trainer that samples its own trajectories (verl's multi-turn rollout: ``core.trainers.verl``)
calls Horizon's plugins through them, so that each trajectory is a real Horizon episode (a
private workspace copy, the sandbox, the plugin's tools, set-up and reward) without Horizon's
loop or run store. Horizon does not depend on any trainer: each adapter imports its trainer's
interface when it is installed and falls back to a local stand-in otherwise.
"""
