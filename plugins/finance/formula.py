"""A recorded derivation: an arithmetic formula over stored facts, evaluated safely.

A formula names facts by id in braces and combines them with ``+ - * /``, powers ``**``,
parentheses and numbers, e.g. ``{NIKE_2021_10K:p59:l7:c0} / (({NIKE_2021_10K:p61:l11:c0} + {NIKE_2021_10K:p61:l11:c1}) / 2)``,
or a compound annual growth rate over three years, ``(({A:p40:l3:c0} / {A:p40:l3:c3}) ** (1 / 3) - 1) * 100``
(a root is a fractional power). Each ``{fact_id}`` stands for the fact's value in its unit (USD,
not millions). Only those operators are evaluated (Python's ``ast``, no names, calls or
attributes), so a formula can be stored and re-checked later by anyone. A power's exponent is at
most ``MAX_EXPONENT`` in size, and a negative base with a fractional exponent (a complex number) or
a result too large for a float is a ``FormulaError``.
"""

from __future__ import annotations

import ast
import operator
import re

_FACT = re.compile(r"\{([^{}]+)\}")
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
#: The largest exponent a formula may use (a growth rate over decades needs 1/30, never 10**6).
MAX_EXPONENT = 100.0


class FormulaError(ValueError):
    """The formula is malformed, names an unknown fact, or divides by zero; the message says which."""


def fact_ids(formula: str) -> list[str]:
    """The fact ids a formula names, in order of first appearance."""
    return list(dict.fromkeys(m.strip() for m in _FACT.findall(formula)))


def evaluate(formula: str, values: dict[str, float]) -> float:
    """Evaluate ``formula`` with ``values`` (``{fact_id: value}``).

    Raises:
        FormulaError: unknown fact id, syntax other than numbers, ``+ - * / **`` and parentheses,
            division by zero, an exponent over ``MAX_EXPONENT``, a negative base with a fractional
            exponent, a result too large for a float, or nesting deeper than Python's parser or stack allows (a formula
            can come from a file in the workspace).
    """
    names: dict[str, str] = {}

    def name_for(match: re.Match[str]) -> str:
        fid = match[1].strip()
        if fid not in values:
            raise FormulaError(f"unknown fact {fid!r}; use fact ids from get_statement or the facts table")
        return names.setdefault(fid, f"f{len(names)}")

    expression = _FACT.sub(name_for, formula)
    bound = {v: values[k] for k, v in names.items()}
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"formula is not valid arithmetic ({exc.msg}): {formula[:200]!r}") from None
    except (RecursionError, MemoryError, ValueError):  # nesting or length past the parser's limits
        raise FormulaError(f"formula is too deeply nested or too long ({len(formula)} characters)") from None

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in bound:
            return bound[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return -walk(node.operand) if isinstance(node.op, ast.USub) else walk(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            return _power(walk(node.left), walk(node.right), formula)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            try:
                return _OPS[type(node.op)](walk(node.left), walk(node.right))
            except ZeroDivisionError:
                raise FormulaError(f"division by zero in {formula!r}") from None
        raise FormulaError(f"only numbers, {{fact_id}}, + - * / ** and parentheses are allowed in a formula: {formula!r}")

    try:
        return walk(tree)
    except RecursionError:  # a chain of thousands of operators
        raise FormulaError(f"formula is too deeply nested ({len(formula)} characters)") from None


def _power(base: float, exponent: float, formula: str) -> float:
    """``base ** exponent`` within the formula's limits (see ``evaluate``)."""
    if abs(exponent) > MAX_EXPONENT:
        raise FormulaError(f"exponent {exponent:g} is larger than {MAX_EXPONENT:g} in {formula!r}")
    if base < 0 and exponent != int(exponent):
        raise FormulaError(f"a negative number ({base:g}) to a fractional power ({exponent:g}) has no real value in {formula!r}")
    if base == 0 and exponent < 0:
        raise FormulaError(f"division by zero (0 to a negative power) in {formula!r}")
    try:
        return float(base ** exponent)
    except OverflowError:
        raise FormulaError(f"{base:g} ** {exponent:g} is too large in {formula!r}") from None


def has_power(formula: str) -> bool:
    """Whether the formula raises something to a power (a compound rate or a root needs one)."""
    try:
        tree = ast.parse(_FACT.sub("f", formula), mode="eval")
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return False
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow) for n in ast.walk(tree))
