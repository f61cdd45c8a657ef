"""Terminal injection: text a model, a tool or a repository produced must never drive the user's
terminal. ``core.text.terminal_safe`` removes every control character and escape sequence, and
``core.cli`` routes everything it prints through it (``_safe``).

The run case drives ``agent run`` and ``agent show`` as a user would (typer's CliRunner, a real
scripted run of the coding plugin on a copy of ``examples/python-user-service``, the tool's
command in the real sandbox); the other cases pin each sequence class of ECMA-48.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import _safe, app
from core.text import terminal_safe

runner = CliRunner()

# What the tool prints (bash printf escapes): a clear screen, a clipboard write (OSC 52, ended by
# BEL), a hyperlink (OSC 8, ended by ST), a window title (OSC 0), the 8-bit CSI (U+009B, UTF-8
# C2 9B) starting an SGR, a bare BEL and a lone CR that would draw OUT9 over OUT8.
PRINTF = (
    r"printf 'OUT1\033[2J OUT2\033]52;c;cHduZWQ=\007 OUT3\033]8;;http://evil.example/\033\\OUT4\033]8;;\033\\ "
    r"OUT5\033]0;pwned-title\007 OUT6\302\2331mOUT7\007 OUT8\rOUT9\n'"
)
RAW = ["\x1b[2J", "\x1b]52;c;cHduZWQ=\x07", "\x1b]8;;http://evil.example/\x1b\\", "\x1b]0;pwned-title\x07", "\x9b1m", "OUT8\rOUT9"]
# What the terminal must never receive: ESC, the C1 controls, BEL, CR. (The payloads do appear, as
# the harmless text of the shell command; the observation's visible text shows they left the output.)
FORBIDDEN = ["\x1b", "\x9b", "\x9c", "\x9d", "\x07", "\r"]


def _script(tmp_path: Path) -> Path:
    turns = [
        {"content": "plan TXT1\x1b[2J\x1b]0;model-title\x07TXT2 \x9b2J"},  # the model's own text, no tool call
        {"tool": "shell", "arguments": {"command": PRINTF}},
        {"tool": "bad\x1b[2Jtool\x1b]52;c;cHduZWQ=\x07", "arguments": {}},  # a tool name the model made up
        {"tool": "finish", "arguments": {"summary": "looked at it"}},
    ]
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return path


def _leaks(text: str) -> list[str]:
    return [repr(f) for f in FORBIDDEN if f in text]


@pytest.mark.attack(
    "T01",
    "terminal injection through a run: the model's text, a tool name and a shell command's output carry ESC[2J, "
    "OSC 52 (clipboard), OSC 8 (hyperlink), OSC 0 (title), an 8-bit CSI, BEL and a lone CR; watch the live "
    "`agent run` lines and `agent show`",
    "no escape or control character reaches the terminal, the visible text does; `agent show --json` keeps "
    "the exact text (JSON escapes it)",
)
def test_a_run_cannot_drive_the_terminal(python_repo, tmp_path, observe):
    result = runner.invoke(app, ["run", "coding", "look around", "--repo", str(python_repo), "--policy", "scripted",
                                 "--script", str(_script(tmp_path))])
    assert result.exit_code == 0, result.output
    run_id = re.search(r"run (\d{8}-\d{6}-[0-9a-f]{4})", result.output).group(1)
    shown = runner.invoke(app, ["show", run_id])
    as_json = runner.invoke(app, ["show", run_id, "--json"])
    leaks = {"agent run": _leaks(result.output), "agent show": _leaks(shown.output)}
    observe(f"leaked: {leaks}")
    assert shown.exit_code == 0, shown.output
    assert leaks == {"agent run": [], "agent show": []}
    # the visible text stays: live lines (cut to their width) and the whole observation in show
    assert "plan TXT1TXT2" in result.output and "OUT1 OUT2 OUT3OUT4" in result.output and "badtool" in result.output
    for word in ["plan TXT1TXT2", "OUT1 OUT2 OUT3OUT4 OUT5 OUT6OUT7 OUT8\nOUT9", "badtool"]:
        assert word in shown.output, word
    # the stored text is exact: --json escapes control characters itself (\u001b), and reads back the same
    assert as_json.exit_code == 0 and "\x1b" not in as_json.output
    messages = json.loads(as_json.output)["messages"]
    tool_outputs = "".join(m["content"] or "" for m in messages if m["role"] == "tool")
    for raw in RAW:
        assert raw in tool_outputs, raw
    assert "plan TXT1\x1b[2J\x1b]0;model-title\x07TXT2 \x9b2J" in [m["content"] for m in messages]


CLASSES = [
    # (id, class, text, shown)
    ("T02", "CSI: erase display, cursor moves, SGR colours, private modes (ESC[?1049h: alternate screen)",
     "a\x1b[2Jb\x1b[1;31mc\x1b[0m\x1b[?1049hd\x1b[10;20He\x1b[>c", "abcde"),
    ("T03", "OSC 52 clipboard write, ended by BEL and by ST",
     "x\x1b]52;c;cHduZWQ=\x07y\x1b]52;p;ZXZpbA==\x1b\\z", "xyz"),
    ("T04", "OSC 8 hyperlink whose target differs from its text", "see \x1b]8;;http://evil.example/\x1b\\docs\x1b]8;;\x1b\\ page",
     "see docs page"),
    ("T05", "OSC 0 / OSC 2 window title", "\x1b]0;title\x07one \x1b]2;other\x1b\\two", "one two"),
    ("T06", "8-bit C1 forms: CSI U+009B, OSC U+009D ended by ST U+009C, DCS U+0090, NEL U+0085",
     "a\x9b31mb\x9d0;t\x9cc\x90q\x9cd\x85e", "abcde"),
    ("T07", "DCS, SOS, PM and APC strings (sixel, kitty graphics)", "a\x1bPq#0;2;0;0;0\x1b\\b\x1bXsos\x1b\\c\x1b^pm\x1b\\d\x1b_Gf=100\x1b\\e",
     "abcde"),
    ("T08", "single-character and nF escape sequences: RIS full reset (ESC c), save/restore cursor, charset (ESC ( 0), index",
     "\x1bca\x1b7b\x1b8\x1b(0c\x1b(Bd\x1bMe", "abcde"),
    ("T09", "C0 controls: BEL, backspace over text, form feed, vertical tab, DEL, NUL, a lone CR that overwrites a line",
     "ok\x07 a\x08b\x0c\x0b\x7f\x00 safe\rEVIL", "ok ab safe\nEVIL"),
    ("T10", "broken sequences: an OSC never ended, an ESC at the end, a CSI cut by a newline",
     "\x1b]0;no end\nnext\x1b[12\nx\x1b", "0;no end\nnext12\nx"),
    ("T11", "bidirectional overrides that reorder what is shown (Trojan Source)", "if a\u202e } \u2066b\u2069", "if a } b"),
]


@pytest.mark.parametrize(
    ("text", "shown"),
    [pytest.param(text, shown, id=case_id, marks=pytest.mark.attack(case_id, f"terminal sequences: {what}",
                                                                   "removed, the visible text kept in order"))
     for case_id, what, text, shown in CLASSES],
)
def test_each_sequence_class_is_removed(text, shown, observe):
    cleaned = terminal_safe(text)
    observe(f"{text!r} -> {cleaned!r}")
    assert cleaned == shown
    assert terminal_safe(cleaned) == cleaned  # idempotent


def test_plain_text_is_unchanged():
    for text in ["", "plain", "tabs\tand\nnewlines\n\n  indented", "ünïcödé 漢字 🙂 \u200f marks", "[red]markup[/] is text here"]:
        assert terminal_safe(text) == text
    big = "x" * 1_000_000
    assert terminal_safe(big) is big  # nothing to remove: no copy
    assert terminal_safe("CRLF\r\nline") == "CRLF\nline"
    assert terminal_safe("lone \ud800 surrogate") == "lone \ufffd surrogate"  # printable and encodable


def test_scanning_is_linear_on_hostile_input():
    import time

    hostile = [("\x9d" + "a" * 10) * 100_000, ("\x1b[" + "1" * 10) * 100_000, ("\x1b]" + "b" * 10) * 100_000, "\x1b" * 1_000_000]
    start = time.perf_counter()
    for text in hostile:
        assert "\x1b" not in terminal_safe(text)
    assert time.perf_counter() - start < 5  # about 0.2 s; quadratic would take minutes


@pytest.mark.attack(
    "T12",
    "rich markup and escape sequences in text the CLI prints (a task name, a reward summary, an error message)",
    "the CLI's one helper (_safe) removes the sequences and escapes the markup: printed literally",
)
def test_the_cli_helper_removes_sequences_and_escapes_markup(observe):
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=True, emoji=False, record=True, width=200)
    text = "[bold red]x[/] \x1b]52;c;cHduZWQ=\x07done :smile:"
    console.print(f"summary: {_safe(text)}")
    out = console.export_text()
    observe(repr(out))
    assert out == "summary: [bold red]x[/] done :smile:\n"


@pytest.mark.attack(
    "T13",
    "escape sequences in a library's log warning (a model server's error text in a retry warning) printed by "
    "Python's last-resort handler",
    "the CLI replaces the last-resort handler with one that makes each record terminal-safe",
)
def test_log_warnings_reach_stderr_terminal_safe(capsys, observe):
    record = logging.LogRecord("core.policy.openai_server", logging.WARNING, __file__, 1,
                               "model call failed: %s", ("server said \x1b]0;title\x07\x1b[2Jbusy",), None)
    logging.lastResort.handle(record)  # what logging uses when nothing is configured (the CLI's case)
    err = capsys.readouterr().err
    observe(repr(err))
    assert err == "model call failed: server said busy\n"


def test_a_crash_traceback_reaches_the_terminal_without_control_sequences(monkeypatch, capsys):
    # a file name with ESC c (full terminal reset) in an exception from a bug: printed cleaned, exit 1
    import core.cli as cli

    def crash() -> None:
        raise RuntimeError("cannot copy x\x1bcRESET\x1b#8 \x9b2J\x07end")

    monkeypatch.setattr(cli, "app", crash)
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 1 and "RuntimeError: cannot copy x" in err and "end" in err
    assert not any(ch in err for ch in "\x1b\x9b\x07")
