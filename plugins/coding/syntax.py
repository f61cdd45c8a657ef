"""Syntax checks of edited source files with tree-sitter, so an edit cannot leave a file unparsable.

tree-sitter recovers from syntax errors by putting ``ERROR`` nodes (text it could not fit) and
zero-width ``MISSING`` nodes (a token it had to assume, such as a ``)``) into the tree; a file
parses cleanly when its root has neither (``Node.has_error`` is False). An edit is rejected
when the file parsed cleanly before and would not after (or when a new file does not parse):
an edit to a file that was already broken is allowed, since it may be the fix. Files of a
language without an installed grammar are not checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.api import ToolError
from plugins.coding.languages import grammar_for, language_of

#: Lines of context shown on each side of the first syntax error.
SNIPPET_CONTEXT_LINES = 2


@dataclass(frozen=True)
class SyntaxProblem:
    """The first syntax error in a file.

    Attributes:
        line: 1-based line.
        column: 1-based column (in characters of the line, counted as UTF-8 bytes by tree-sitter).
        message: ``unexpected '<text>'`` for an ERROR node, ``missing '<token>'`` for a MISSING one.
        errors: how many ERROR and MISSING nodes the tree has.
    """

    line: int
    column: int
    message: str
    errors: int


def _problem_nodes(root):
    """ERROR and MISSING nodes in document order, descending only into subtrees that have errors."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_missing or node.type == "ERROR":
            yield node
            if node.type == "ERROR":
                continue  # its children are the unparsed text
        if node.has_error:
            stack.extend(reversed(node.children))


def first_syntax_problem(path: str, text: str) -> SyntaxProblem | None:
    """Parse ``text`` as the language of ``path`` and describe its first syntax error.

    Args:
        path: a file name; its suffix picks the language (``plugins.coding.languages``).
        text: the file's content.

    Returns:
        The first problem, or ``None`` when the text parses cleanly or no grammar handles the
        file's language.
    """
    grammar = grammar_for(path)
    if grammar is None:
        return None
    tree = grammar.parse(text.encode("utf-8", "surrogateescape"))
    if not tree.root_node.has_error:
        return None
    nodes = list(_problem_nodes(tree.root_node))
    if not nodes:  # has_error without a node we can point at: name the root
        return SyntaxProblem(1, 1, "the file does not parse", 1)
    first = nodes[0]
    if first.is_missing:
        message = f"missing {first.type!r}"
    else:
        snippet = first.text.decode("utf-8", "replace").strip().splitlines()
        shown = snippet[0][:60] if snippet else ""
        message = f"unexpected {shown!r}" if shown else "unexpected end of input"
    return SyntaxProblem(first.start_point[0] + 1, first.start_point[1] + 1, message, len(nodes))


def _snippet(text: str, line: int) -> str:
    lines = text.split("\n")
    first, last = max(1, line - SNIPPET_CONTEXT_LINES), min(len(lines), line + SNIPPET_CONTEXT_LINES)
    width = len(str(last))
    return "\n".join(f"{'>' if n == line else ' '} {n:>{width}}\t{lines[n - 1]}" for n in range(first, last + 1))


def check_edit(rel: str, before: str | None, after: str) -> None:
    """Refuse an edit that breaks the syntax of a file that parsed cleanly before.

    Args:
        rel: the file's path relative to the repository root (for the language and messages).
        before: the content before the edit; ``None`` for a file being created.
        after: the content the edit would write.

    Raises:
        ToolError: ``after`` has a syntax error and ``before`` had none (or is ``None``); the
            message gives the line, column, what tree-sitter found, and the lines around it.
    """
    problem = first_syntax_problem(rel, after)
    if problem is None:
        return
    if before is not None and first_syntax_problem(rel, before) is not None:
        return  # already broken before: this edit may be the fix
    language = language_of(rel)
    raise ToolError(
        f"edit rejected: it would leave {rel} with a {language} syntax error at line {problem.line}, column "
        f"{problem.column} ({problem.message}; {problem.errors} error node{'s' if problem.errors != 1 else ''} in all). "
        f"The file is unchanged. The edited text around that line:\n{_snippet(after, problem.line)}\n"
        "Check brackets, quotes, colons and indentation in new_text and try again."
    )
