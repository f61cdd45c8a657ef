"""Tool schemas in the form every trainer keeps, so that SFT and RL prompts show the model the same tools.

verl validates each tool config entry with its pydantic ``OpenAIFunctionToolSchema``
(``verl/tools/schemas.py``, the same in 0.8.0 and 0.9.1) and shows the model
``model_dump(exclude_unset=True, exclude_none=True)`` of it (``ToolAgentLoop``, and
``RLHFDataset``'s length filter). Pydantic ignores keys its models do not declare, so what
survives is exactly (``VERL_KEEPS``):

- a tool: ``type``, ``function``;
- a function: ``name``, ``description``, ``parameters``, ``strict``;
- the parameters: ``type``, ``properties``, ``required``;
- a property: ``type`` (a name or a list of names), ``description``, ``enum``.

Everything else (``default``, ``minimum``/``maximum``, ``minLength``, ``items``, ``anyOf``,
``title``, ``additionalProperties``...) would silently vanish from the RL prompt while an SFT row,
which carries the schema as it is, still shows it. ``portable_schema`` writes each dropped
constraint into the property's description instead (``default 1; minimum 1``), turns an optional
argument's ``anyOf: [T, null]`` into the type ``T`` with "may be null", and drops only ``title``
(pydantic's copy of the argument's name: nothing lost). Every export format uses these schemas,
so what the model sees is the same wherever the rows go.
"""

from __future__ import annotations

import json
from typing import Any

#: The keys verl's ``OpenAIFunctionToolSchema`` keeps, per level.
VERL_KEEPS = {
    "tool": ("type", "function"),
    "function": ("name", "description", "parameters", "strict"),
    "parameters": ("type", "properties", "required"),
    "property": ("type", "description", "enum"),
}
#: Keys dropped without a word: they repeat what the schema says elsewhere (the argument's name).
_REDUNDANT = ("title",)


def _type_of(prop: dict[str, Any]) -> tuple[str | list[str], bool]:
    """The property's type for verl (a name, or a list of names for a union) and whether null is allowed."""
    if "type" in prop:
        kind = prop["type"]
        if isinstance(kind, list):
            names = [t for t in kind if t != "null"]
            return (names[0] if len(names) == 1 else names) or "object", "null" in kind
        return kind, False
    options = prop.get("anyOf") or prop.get("oneOf") or []
    names = [o.get("type") for o in options if isinstance(o, dict) and o.get("type") not in (None, "null")]
    nullable = any(isinstance(o, dict) and o.get("type") == "null" for o in options)
    if not names:
        return "object", nullable
    return (names[0] if len(set(names)) == 1 else sorted(set(names))), nullable


def _constraints(prop: dict[str, Any]) -> list[str]:
    """What verl would drop from one property, as text (``minimum 1``, ``default null``)."""
    out = []
    for key, value in prop.items():
        if key in VERL_KEEPS["property"] or key in _REDUNDANT:
            continue
        if key in ("anyOf", "oneOf"):  # the union's own constraints, e.g. an optional integer's minimum
            for option in value:
                if isinstance(option, dict) and option.get("type") != "null":
                    out += [c for c in _constraints({k: v for k, v in option.items() if k != "type"}) if c not in out]
            continue
        out.append(f"{key} {json.dumps(value, ensure_ascii=False)}")
    return out


def portable_property(prop: dict[str, Any]) -> dict[str, Any]:
    """One argument's schema with only the keys verl keeps, the rest written into its description."""
    if not isinstance(prop, dict):  # JSON Schema's ``true`` (anything goes)
        return {"type": "object"}
    kind, nullable = _type_of(prop)
    notes = _constraints(prop)
    if nullable:
        notes.insert(0, "may be null")
    out: dict[str, Any] = {"type": kind}
    description = (prop.get("description") or "").strip()
    if notes:
        description = f"{description} ({'; '.join(notes)})" if description else "; ".join(notes)
    if description:
        out["description"] = description
    if "enum" in prop:
        out["enum"] = prop["enum"]
    return out


def portable_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (an OpenAI function tool schema, ``Tool.schema()``) in the form verl keeps: the
    same tool, its dropped constraints in the arguments' descriptions (see the module docstring).

    ``portable_schema(portable_schema(s)) == portable_schema(s)``, and verl's
    ``OpenAIFunctionToolSchema.model_validate(s).model_dump(exclude_unset=True, exclude_none=True)``
    gives it back unchanged."""
    function = schema.get("function") or {}
    params = function.get("parameters") or {"type": "object", "properties": {}}
    properties = {name: portable_property(prop) for name, prop in (params.get("properties") or {}).items()}
    out_function: dict[str, Any] = {"name": function["name"], "description": function.get("description") or ""}
    out_function["parameters"] = {"type": params.get("type", "object"), "properties": properties,
                                  "required": list(params.get("required") or [])}
    if "strict" in function:
        out_function["strict"] = function["strict"]
    return {"type": schema.get("type", "function"), "function": out_function}


def dropped_keys(schema: dict[str, Any]) -> list[str]:
    """The keys of ``schema`` verl would drop, as ``tool.argument.key`` paths (what ``portable_schema`` rewrites)."""
    function = schema.get("function") or {}
    name = function.get("name", "?")
    out = [f"{name}.{k}" for k in function if k not in VERL_KEEPS["function"]]
    params = function.get("parameters") or {}
    out += [f"{name}.parameters.{k}" for k in params if k not in VERL_KEEPS["parameters"]]
    for arg, prop in (params.get("properties") or {}).items():
        out += [f"{name}.{arg}.{k}" for k in prop if k not in VERL_KEEPS["property"]]
    return out
