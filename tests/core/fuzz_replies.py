"""Seeded malformed model replies for the fuzz tests, for any plugin's tools.

Replies are generated with a seeded ``random.Random`` (hypothesis is not used): invalid JSON
arguments, wrong types, unknown tools, 1 MB strings, unicode oddities (lone surrogates, NUL,
right-to-left marks, emoji, undecodable bytes through ``surrogateescape``), missing, duplicate
and empty call ids, replies without calls, many calls in one turn, ``None`` content, nested
garbage.

What a plugin's tools look like to the generator is a ``Vocabulary``: core's loop tests use the
``notes`` test plugin's (``tests/core/test_fuzz_model_output.py``), the coding tools' fuzz uses
the coding plugin's (``tests/plugins/coding/test_coding_fuzz.py``). For the coding vocabulary the
generator draws from its ``random.Random`` exactly as it did before it took a vocabulary, so the
seeded replies are the same ones.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from core.errors import ToolError
from core.state import Message, ToolCall
from core.tools import Tool, ToolContext, ToolResult

MB = 1 << 20


@dataclass(frozen=True)
class Vocabulary:
    """A plugin's tools as the generator sees them.

    Attributes:
        tools: the plugin's tools by name; calls name one of them (or an unknown name).
        read_only: tools whose valid calls may run in any number (quick, no side effects).
        side_effects: tools whose garbage arguments must not validate (they would change the
            workspace, or end the episode: ``finish``); such a call is replaced by one that
            cannot validate.
        valid_args: ``valid_args(rng, name) -> dict``, arguments that validate for tool ``name``.
        field_names: argument names that the wrong-types branch sets to garbage.
        text_fields: read-only tool -> the string argument filled with weird text.
        second_text_fields: read-only tool -> a second string argument made weird half the time.
        huge_targets: tools (or unknown names) given a 1 MB string.
        huge_keys: target -> the argument that gets the 1 MB string, or a tuple to choose from.
        real: tools whose valid calls run for real, as many as ``Generator(real=...)`` allows.
    """

    tools: dict[str, Tool]
    read_only: tuple[str, ...]
    side_effects: tuple[str, ...]
    valid_args: Callable[[random.Random, str], dict]
    field_names: tuple[str, ...]
    text_fields: dict[str, str]
    second_text_fields: dict[str, str]
    huge_targets: tuple[str, ...]
    huge_keys: dict[str, str | tuple[str, ...]]
    real: tuple[str, ...]


WEIRD = [
    "", " ", "\x00", "a\x00b", "users/service.py\x00", "\ud800", "x\udfff", "\udcff\udcfe",
    "\u202eelif_weiv\u202c", "\u200f\u200e\u061c", "😀" * 3, "👩‍👩‍👧‍👦", "\ufeffBOM", "e\u0301\u0301\u0301",
    "\U0010ffff", "\r\n\t", "../../../etc/passwd", "/etc/passwd", "a" * 300, "é" * 200, "%s%n%x", "{{}}", "\\",
    "'\"`", "$(touch pwned)", "users/../users/service.py", "users/service.py", "tests", ".git/config", "\u3000全角",
    "null", "NaN", "0", "-1", "\x7f\x1b[31mred", "<script>", "A" * 5000,
]


def weird(rng: random.Random) -> str:
    """A short odd string: one of ``WEIRD``, undecodable bytes, or random code points."""
    roll = rng.random()
    if roll < 0.6:
        return rng.choice(WEIRD)
    if roll < 0.8:
        return rng.randbytes(rng.randint(1, 40)).decode("utf-8", "surrogateescape")
    return "".join(chr(rng.choice([rng.randint(0, 0x7F), rng.randint(0x80, 0xFFFF), rng.randint(0x10000, 0x10FFFF)]))
                   for _ in range(rng.randint(1, 30)))


_HUGE: dict[str, str] = {}


def huge(rng: random.Random) -> str:
    """A 1 MB (UTF-8) string; the few kinds are made once and shared, strings being immutable."""
    unit = rng.choice(["x", "é", "😀", "\x00", "\udcff", "a\n"])
    if unit not in _HUGE:
        _HUGE[unit] = unit * (MB // len(unit.encode("utf-8", "surrogatepass")))
    return _HUGE[unit]


def garbage(rng: random.Random, depth: int = 0):
    """A random JSON-ish value: nested containers, odd numbers, weird strings."""
    kinds = ["str", "int", "float", "bool", "null"] + (["list", "dict"] if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "str":
        return weird(rng)
    if kind == "int":
        return rng.choice([0, -1, 1, 2**31, -(2**63), 10**30, rng.randint(-1000, 1000)])
    if kind == "float":
        return rng.choice([0.5, -0.0, 1e308, float("nan"), float("inf"), -float("inf")])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "list":
        return [garbage(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {weird(rng): garbage(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def invalid_json(rng: random.Random, vocabulary: Vocabulary, name: str) -> str:
    """Arguments text that ``json.loads`` refuses (or that is no object), often a valid call cut off."""
    good = json.dumps(vocabulary.valid_args(rng, name))
    return rng.choice([
        good[: rng.randint(1, max(1, len(good) - 1))],  # cut off, as at the token limit
        "{", "[", "{\"path\": ", "{'path': 'a'}", "{\"path\": \"a\",}", "nul", "undefined", "{\"a\": 1}}", "\x00",
        "{\"path\": \"\ud800\"", rng.randbytes(rng.randint(1, 30)).decode("utf-8", "surrogateescape"), "```json\n{}\n```",
        "{\"a\": " + "1" * 5000 + "}", "[" * 20000, "{\"path\": \"users/service.py\"} trailing",
    ])


@dataclass
class Expect:
    """What the loop must report for one call: ``malformed`` True/False, or None to compute by parsing."""

    malformed: bool | None


@dataclass
class Reply:
    """One generated assistant turn and what the loop must report for each of its calls."""

    message: Message
    expects: list[Expect] = field(default_factory=list)


def parse_malformed(vocabulary: Vocabulary, name: str, arguments: str) -> bool:
    """Whether the loop must count this call as malformed (an unknown tool or arguments that fail)."""
    tool = vocabulary.tools.get(name)
    if tool is None:
        return True
    try:
        tool.parse(arguments)
    except (ToolError, ValueError, RecursionError):
        return True
    return False


class Generator:
    """Seeded replies for ``vocabulary``'s tools; ``ids`` remembers earlier ids so that some are reused.

    ``real``: per tool, how many valid calls with real effects it may make (``Vocabulary.real``).
    """

    def __init__(self, vocabulary: Vocabulary, seed: int, *, real: dict[str, int] | None = None) -> None:
        self.vocabulary = vocabulary
        self.rng = random.Random(seed)
        self.ids: list[str] = []
        self.turn = 0
        self.real_left = dict(real or {})  # calls with real effects still allowed, per tool

    def call_id(self, i: int, same_turn: list[str]) -> str:
        r = self.rng.random()
        if r < 0.40:
            cid = f"call_{self.rng.getrandbits(40):x}"
        elif r < 0.55:
            cid = ""
        elif r < 0.65 and same_turn:
            cid = self.rng.choice(same_turn)
        elif r < 0.75 and self.ids:
            cid = self.rng.choice(self.ids)
        elif r < 0.85:  # an id the loop itself would give a later call
            cid = f"call_{self.turn + self.rng.randint(0, 3)}_{self.rng.randint(0, 3)}_h"
        else:
            cid = self.rng.choice(["\x00", "\ud800", "../../x", "a/b", "i" * 1000, "😀", "\u202eid", " ", "call_1\n"])
        self.ids.append(cid)
        return cid

    def call(self) -> tuple[str, str, Expect]:
        name, arguments, expect = self._call()
        if name in self.vocabulary.side_effects and expect.malformed is not False and not parse_malformed(self.vocabulary, name, arguments):
            # garbage that happens to validate for a tool with side effects (or finish, which
            # would end the episode): keep it out, replace it with arguments that cannot validate
            return name, "{\"oops\"", Expect(True)
        return name, arguments, expect

    def _call(self) -> tuple[str, str, Expect]:
        rng, vocab = self.rng, self.vocabulary
        name = rng.choice(list(vocab.tools))
        r = rng.random()
        if r < 0.10:
            return rng.choice(["", "nope", "view_file ", "VIEW_FILE", "finish\x00", "\u202eelif_weiv", "😀", "\ud800", "x" * 300,
                               "functions.view_file", "view-file", "rm -rf /"]), "{}", Expect(True)
        if r < 0.25:
            return name, invalid_json(rng, vocab, name), Expect(True)
        if r < 0.33:
            return name, rng.choice(["[]", "1", "\"str\"", "null", "true", "NaN", "1e999", "-0", "[{}]"]), Expect(True)
        if r < 0.58:  # wrong types, missing or extra fields, nested garbage
            args = vocab.valid_args(rng, name) if name not in vocab.side_effects else {}
            for _ in range(rng.randint(1, 3)):
                key = rng.choice(list(args) + list(vocab.field_names) + [weird(rng)])
                args[key] = garbage(rng)
            if rng.random() < 0.3 and args:
                args.pop(rng.choice(list(args)))
            return name, json.dumps(args, allow_nan=True), Expect(None)
        if r < 0.583:  # huge (1 MB)
            target = rng.choice(list(vocab.huge_targets))
            key = vocab.huge_keys[target]
            if not isinstance(key, str):
                key = rng.choice(list(key))
            known = target in vocab.tools
            if rng.random() < 0.5:
                return target, json.dumps({key: huge(rng)}), Expect(None if known else True)
            return target, huge(rng), Expect(None if known else True)
        if r < 0.75:  # weird unicode in string fields of read-only tools
            target = rng.choice(vocab.read_only)
            args = vocab.valid_args(rng, target)
            args[vocab.text_fields[target]] = weird(rng)
            if target in vocab.second_text_fields and rng.random() < 0.5:
                args[vocab.second_text_fields[target]] = weird(rng)
            return target, json.dumps(args, ensure_ascii=rng.random() < 0.5), Expect(None)
        if r < 0.95:
            target = rng.choice(vocab.read_only)
            return target, json.dumps(vocab.valid_args(rng, target)), Expect(False)
        if r < 0.98:  # finish with bad arguments never ends the episode
            return "finish", rng.choice(['{}', '{"summary": ""}', '{"summary": 5}', '{"summary": null}', '{"summary": ["x"]}']), Expect(True)
        real = rng.choice(vocab.real)
        if self.real_left.get(real, 0) > 0:
            self.real_left[real] -= 1
            return real, json.dumps(vocab.valid_args(rng, real)), Expect(False)
        return real, "{\"oops\"", Expect(True)

    def reply(self) -> Reply:
        rng = self.rng
        self.turn += 1
        content = rng.choice([None, None, "", "Let me look.", weird(rng)] + ([huge(rng)] if rng.random() < 0.01 else []))
        r = rng.random()
        n = 0 if r < 0.10 else 1 if r < 0.75 else rng.randint(2, 5) if r < 0.97 else rng.randint(10, 25)
        calls, expects, ids = [], [], []
        for i in range(n):
            name, arguments, expect = self.call()
            cid = self.call_id(i, ids)
            ids.append(cid)
            calls.append(ToolCall(id=cid, name=name, arguments=arguments))
            expects.append(expect)
        return Reply(Message(role="assistant", content=content, tool_calls=calls), expects)


def replies(vocabulary: Vocabulary, seed: int, n: int, **kwargs) -> list[Reply]:
    """``n`` replies of ``Generator(vocabulary, seed, **kwargs)``."""
    gen = Generator(vocabulary, seed, **kwargs)
    return [gen.reply() for _ in range(n)]


def through_every_tool(
    tools: list[Tool], calls: list[ToolCall], ctx: ToolContext, caps: dict[str, int],
    known_escapes: Collection[tuple[str, str, str]] = (),
) -> tuple[int, dict[str, int], dict[tuple[str, str, str], int]]:
    """Give every call to ``Tool.parse`` of every tool (only the named tool's for arguments over
    64,000 characters), and to ``Tool.__call__`` when parsing fails (it only reports) or, when it
    passes, for ``finish`` and up to ``caps[name]`` calls of the read-only tools named in ``caps``.

    Asserts that nothing but ``ToolError`` comes out (its message naming the tool), apart from
    ``known_escapes``: (tool name or "parse", exception type name, words of its message); that a
    result is a ``ToolResult`` with text output, an error unless the arguments parsed, and done
    only for ``finish``.

    Returns:
        (calls that parsed, calls run per capped tool, known escapes reached with their counts).
    """

    def escape_signature(where: str, exc: BaseException) -> tuple[str, str, str] | None:
        for known in known_escapes:
            if known[0] == where and type(exc).__name__ == known[1] and known[2] in str(exc):
                return known
        return None

    ran = {t.name: 0 for t in tools}
    escapes: dict[tuple[str, str, str], int] = {}
    parsed_ok = 0
    for call in calls:
        small = len(call.arguments) < 64_000
        for tool in tools if small else [t for t in tools if t.name == call.name]:
            try:
                tool.parse(call.arguments)
                ok = True
                parsed_ok += 1
            except ToolError as exc:
                ok = False
                assert str(exc) and tool.name in str(exc)
            except (ValueError, RecursionError) as exc:
                sig = escape_signature("parse", exc)
                assert sig is not None, f"{tool.name}.parse({call.arguments[:200]!r}) raised {exc!r}"
                escapes[sig] = escapes.get(sig, 0) + 1
                continue
            # Tool.__call__: always when parsing fails (it only reports); when it passes, for the
            # read-only tools (capped, they read files) and finish (no side effect).
            if ok and not (tool.name == "finish" or (tool.name in caps and ran[tool.name] < caps[tool.name])):
                continue
            if ok and tool.name != "finish":
                ran[tool.name] += 1
            try:
                result = tool(call.arguments, ctx)
            except (ValueError, OSError, RecursionError) as exc:
                sig = escape_signature(tool.name, exc)  # parsing passed above: the tool's own code let it out
                assert sig is not None, f"{tool.name}({call.arguments[:200]!r}) raised {exc!r}"
                escapes[sig] = escapes.get(sig, 0) + 1
                continue
            assert isinstance(result, ToolResult) and isinstance(result.output, str)
            assert result.is_error or ok
            assert not result.done or tool.name == "finish"
    return parsed_ok, ran, escapes
