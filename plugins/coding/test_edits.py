"""Which edits of a repository's test files weaken its tests, by comparing syntax trees.

A run may add tests and add assertions to existing ones: that is how it reproduces a bug (the
coding reward runs such tests on the starting code and on the patch, ``plugins.coding.grading``).
What it may not do is make an existing test check less. An existing test is *weakened* when, in
the patched file (compared with ``ast``, so formatting, comments and moved code do not count):

- it is gone: deleted, renamed, or rebound (a later ``def`` of the same name, an assignment or a
  ``del`` of the name), or its whole file was deleted;
- one of its checks is gone or changed: an ``assert`` statement, or a call of ``assert*`` /
  ``fail`` / ``raises`` / ``warns`` / ``deprecated_call`` (``self.assertEqual``,
  ``pytest.raises``), compared together with the ``if`` / ``for`` / ``while`` / ``with`` / ``try``
  statements around it inside the test, so that wrapping a check in ``if False:`` or in a
  ``try`` that swallows the failure counts as changing it;
- one of its decorators is gone or changed (a ``parametrize`` may gain cases, never lose one);
- it gained a skip or an expected failure (a ``skip`` / ``skipif`` / ``xfail`` decorator, a call
  of ``skip`` / ``xfail`` / ``skipTest`` / ``importorskip``, or a ``pytestmark`` naming one), or a
  ``return`` it did not have;

An existing *test* (not a helper) whose only edits change what its checks expect is a *changed
expectation*, not a weakening (``review``): each removed or changed check is matched, under the
same ``if``/``for``/``with``/``try`` statements, by a new check of the same kind (``assert a == b``
or ``assert a is b`` with the same operators, ``assert f(x)`` and ``assert not f(x)``, or the same
``assertEqual``/``raises``/... call with the same arguments and keywords named), never by fewer
checks, and a changed ``parametrize`` keeps its names and the number of its cases, each changed
case with as many values. Whether it is credited is decided when the tests run
(``plugins.coding.reward``): its new version must fail on the starting code and pass with the
patch, and its old version must pass at the start and fail with the patch (the patch changes
exactly what the old check pinned); otherwise it is a weakening too. A loosened check (``==``
made ``>=``, ``assertEqual`` made ``assertTrue``, ``or True`` added) is never a changed expectation.

and the file is weakened when a module-level skip (``pytest.skip(..., allow_module_level=True)``,
``importorskip``, a ``pytestmark``) was added or changed. The same rule holds for every function
and class of the file that holds checks (helpers and fixtures included), since a test may call them.
A test file that is not Python (JUnit, Jest, Go) cannot be compared this way: any change to one
that existed counts. Added files never weaken anything.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from core.api import read_regular

#: Calls that check something: ``assert*`` (unittest's), ``fail``, and pytest's context managers.
_CHECK_CALL = re.compile(r"^(assert\w*|fail\w*|raises|warns|deprecated_call)$")
#: Names that skip a test or expect it to fail.
_SKIP_NAME = re.compile(r"^(skip\w*|xfail|importorskip|skipTest|expectedFailure)$")
#: Statements whose condition or context decides whether a check inside them runs.
_GUARDS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Check calls that pin one expected value (or exception), which a changed expectation may change.
_PINNING_CALLS = frozenset({"assertEqual", "assertEquals", "assertIs", "assertAlmostEqual", "assertDictEqual", "assertListEqual",
                            "assertTupleEqual", "assertSetEqual", "assertSequenceEqual", "assertMultiLineEqual", "assertCountEqual",
                            "assertRaises", "assertRaisesRegex", "assertWarns", "raises", "warns"})  # fmt: skip
#: Comparison operators that pin one expected value.
_PINNING_OPS = (ast.Eq, ast.Is)


def _called_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _names(node: ast.AST) -> set[str]:
    """Every name and attribute named under ``node``."""
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))}


def _mentions_skip(node: ast.AST) -> bool:
    return any(_SKIP_NAME.match(name) for name in _names(node))


def _guard_key(node: ast.AST) -> str:
    """What decides whether the statements inside ``node`` run (its bodies left out)."""
    if isinstance(node, ast.If | ast.While):
        return f"{type(node).__name__}({ast.dump(node.test)})"
    if isinstance(node, ast.For | ast.AsyncFor):
        return f"For({ast.dump(node.target)} in {ast.dump(node.iter)})"
    if isinstance(node, ast.With | ast.AsyncWith):
        return f"With({', '.join(ast.dump(i) for i in node.items)})"
    if isinstance(node, ast.Try):
        return f"Try({', '.join(ast.dump(h) for h in node.handlers)}; finally {len(node.finalbody)})"
    if isinstance(node, ast.Match):
        return f"Match({ast.dump(node.subject)})"
    return type(node).__name__


def _own_nodes(function: ast.AST):
    """``(node, guards)`` for every node inside ``function``, with the guard statements around it
    (nested functions and classes included: a check inside a nested helper still checks)."""
    stack = [(child, ()) for child in ast.iter_child_nodes(function) if child not in getattr(function, "decorator_list", [])]
    while stack:
        node, guards = stack.pop()
        yield node, guards
        inner = (*guards, _guard_key(node)) if isinstance(node, _GUARDS) else guards
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def _checks(function: ast.AST) -> Counter:
    """The function's checks as ``{(guards, dump): count}``, with the first line of each in ``lines``."""
    found: Counter = Counter()
    for node, guards in _own_nodes(function):
        if isinstance(node, ast.Assert) or (isinstance(node, ast.Call) and _CHECK_CALL.match(_called_name(node))):
            found[(guards, ast.dump(node))] += 1
    return found


def _check_lines(function: ast.AST) -> dict[tuple, ast.AST]:
    return {(guards, ast.dump(node)): node for node, guards in _own_nodes(function)
            if isinstance(node, ast.Assert) or (isinstance(node, ast.Call) and _CHECK_CALL.match(_called_name(node)))}  # fmt: skip


def _skip_calls(function: ast.AST) -> int:
    return sum(1 for node, _ in _own_nodes(function) if isinstance(node, ast.Call) and _SKIP_NAME.match(_called_name(node)))


def _returns(function: ast.AST) -> int:
    """``return`` statements of the function itself (not of functions nested in it)."""
    count, stack = 0, list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, (*_FUNCTIONS, ast.Lambda, ast.ClassDef)):
            continue
        count += isinstance(node, ast.Return)
        stack.extend(ast.iter_child_nodes(node))
    return count


def _definitions(tree: ast.Module) -> tuple[dict[str, ast.AST], dict[str, list[ast.AST]]]:
    """``({qualified name: the last def or class of that name}, {scope: rebinding statements})``:
    functions and classes at module level and inside classes, as Python leaves them bound."""
    defined: dict[str, ast.AST] = {}
    rebinds: dict[str, list[ast.AST]] = {}
    stack: list[tuple[str, list[ast.stmt]]] = [("", tree.body)]
    while stack:
        scope, body = stack.pop()
        for node in body:
            if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
                name = f"{scope}{node.name}"
                defined[name] = node
                if isinstance(node, ast.ClassDef):
                    stack.append((f"{name}.", node.body))
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Delete, ast.Import, ast.ImportFrom)):
                rebinds.setdefault(scope, []).append(node)
    return defined, rebinds


def _bound_names(node: ast.AST) -> set[str]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _is_test(qualname: str) -> bool:
    """A test function or method (``test*``) or a test class (``Test*``), as pytest collects them."""
    return qualname.rsplit(".", 1)[-1].startswith(("test", "Test"))


def _parametrize_ok(old: ast.AST, new_decorators: list[ast.AST]) -> bool:
    """Whether ``old``, a ``parametrize(names, values, ...)`` decorator, survives in ``new_decorators``
    with the same names and every one of its cases (cases may be added)."""
    if not (isinstance(old, ast.Call) and _called_name(old) == "parametrize" and len(old.args) >= 2):
        return False
    values = old.args[1]
    if not isinstance(values, (ast.List, ast.Tuple)):
        return False
    for new in new_decorators:
        if (isinstance(new, ast.Call) and _called_name(new) == "parametrize" and len(new.args) >= 2
                and ast.dump(new.func) == ast.dump(old.func) and ast.dump(new.args[0]) == ast.dump(old.args[0])
                and isinstance(new.args[1], (ast.List, ast.Tuple))):  # fmt: skip
            have = Counter(ast.dump(e) for e in new.args[1].elts)
            if not Counter(ast.dump(e) for e in values.elts) - have:
                return True
    return False


def _parametrize_changed(old: ast.AST, new_decorators: list[ast.AST]) -> list[tuple[ast.AST, ast.AST]] | None:
    """``[(old case, new case), ...]`` when a ``parametrize`` of ``new_decorators`` changes some of
    ``old``'s cases (same function, same names, no fewer cases, each changed case with as many
    values); None when none does."""
    if not (isinstance(old, ast.Call) and _called_name(old) == "parametrize" and len(old.args) >= 2
            and isinstance(old.args[1], (ast.List, ast.Tuple))):  # fmt: skip
        return None
    for new in new_decorators:
        if not (isinstance(new, ast.Call) and _called_name(new) == "parametrize" and len(new.args) >= 2
                and ast.dump(new.func) == ast.dump(old.func) and ast.dump(new.args[0]) == ast.dump(old.args[0])
                and isinstance(new.args[1], (ast.List, ast.Tuple)) and len(new.args[1].elts) >= len(old.args[1].elts)
                and [ast.dump(k) for k in new.keywords] == [ast.dump(k) for k in old.keywords]):  # fmt: skip
            continue
        have = Counter(ast.dump(e) for e in new.args[1].elts)
        gone = [e for e in old.args[1].elts if not _take(have, ast.dump(e))]
        fresh = [e for e in new.args[1].elts if ast.dump(e) not in Counter(ast.dump(o) for o in old.args[1].elts)]
        if gone and len(fresh) >= len(gone) and all(_arity(e) == _arity(fresh[i]) for i, e in enumerate(gone)):
            return list(zip(gone, fresh))
    return None


def _take(counter: Counter, key: str) -> bool:
    if counter[key] > 0:
        counter[key] -= 1
        return True
    return False


def _arity(case: ast.AST) -> int:
    return len(case.elts) if isinstance(case, (ast.Tuple, ast.List)) else 1


def _same_shape(old: ast.AST, new: ast.AST) -> bool:
    """Whether ``new`` checks the same kind of thing as ``old`` with another expectation (see the
    module docstring): never a looser operator, another assertion method or a tautology."""
    if isinstance(old, ast.Assert) and isinstance(new, ast.Assert):
        a, b = old.test, new.test
        if isinstance(a, ast.Compare) and isinstance(b, ast.Compare):
            sides = [ast.dump(x) for x in (b.left, *b.comparators)]
            return ([type(o) for o in a.ops] == [type(o) for o in b.ops] and all(isinstance(o, _PINNING_OPS) for o in b.ops)
                    and len(set(sides)) == len(sides) and not all(isinstance(x, ast.Constant) for x in (b.left, *b.comparators)))  # fmt: skip
        flipped = (isinstance(b, ast.UnaryOp) and isinstance(b.op, ast.Not) and ast.dump(b.operand) == ast.dump(a)) or (
            isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.Not) and ast.dump(a.operand) == ast.dump(b))
        inner = b.operand if isinstance(b, ast.UnaryOp) else a.operand if isinstance(a, ast.UnaryOp) else b
        return flipped and not isinstance(inner, (ast.Constant, ast.Compare))  # `not (x == 1)` accepts all but one value
    if isinstance(old, ast.Call) and isinstance(new, ast.Call):
        return (ast.dump(old.func) == ast.dump(new.func) and _called_name(new) in _PINNING_CALLS and len(old.args) == len(new.args)
                and [k.arg for k in old.keywords] == [k.arg for k in new.keywords]
                and not any(isinstance(x, ast.Starred) for x in new.args))  # fmt: skip
    return False


def _changed_checks(old: ast.AST, new: ast.AST) -> list[tuple[ast.AST, ast.AST]] | None:
    """``[(old check, new check), ...]`` when every check of ``old`` that ``new`` lacks is matched
    by a new check of the same shape under the same guards (see the module docstring); None when
    some check is gone or loosened."""
    old_checks, new_checks = _check_lines(old), _check_lines(new)
    missing = _checks(old) - _checks(new)
    added = _checks(new) - _checks(old)
    free = sorted((key for key in added for _ in range(added[key])), key=lambda k: new_checks[k].lineno)
    pairs = []
    for key in sorted((k for k in missing for _ in range(missing[k])), key=lambda k: old_checks[k].lineno):
        match = next((f for f in free if f[0] == key[0] and _same_shape(old_checks[key], new_checks[f])), None)
        if match is None:
            return None
        free.remove(match)
        pairs.append((old_checks[key], new_checks[match]))
    return pairs


@dataclass
class Review:
    """What an edit of one existing test file does to its tests (``review``).

    Attributes:
        weakened: ``"path:line: what"`` for each weakening (see the module docstring).
        changed: one record per changed check of a test whose other edits weaken nothing (a
            changed expectation): ``{"file", "test" (qualified name), "line" (in the patched
            file), "old", "new" (the check's first source line), "what"}``.
    """

    weakened: list[str] = field(default_factory=list)
    changed: list[dict] = field(default_factory=list)


def changed_line(record: dict) -> str:
    """A changed-expectation record as the verdict names it: ``path:line: changed expectation of test: `old` -> `new` ``."""
    return f"{record['file']}:{record['line']}: changed expectation of {record['test']}: `{record['old']}` -> `{record['new']}`"


def _source(text: str, node: ast.AST, width: int = 100) -> str:
    segment = (ast.get_source_segment(text, node) or ast.unparse(node)).split("\n")[0].strip()
    return segment if len(segment) <= width else segment[: width - 1] + "…"


def _module_skips(tree: ast.Module) -> Counter:
    """Module-level statements that skip the whole file: a skip call, ``pytestmark``."""
    found: Counter = Counter()
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Call) and _SKIP_NAME.match(_called_name(value)):  # pytest.skip(...), x = importorskip(...)
            found[ast.dump(node)] += 1
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and "pytestmark" in _bound_names(node):
            found[ast.dump(node)] += 1
    return found


def weakened(path: str, original: bytes, patched: bytes | None) -> list[str]:
    """How the patch weakens the existing tests of one test file: ``review(...).weakened``
    (changed expectations are not listed; ``review`` has them)."""
    return review(path, original, patched).weakened


def review(path: str, original: bytes, patched: bytes | None) -> Review:
    """How the patch changes the existing tests of one test file (see the module docstring).

    Args:
        path: the file's path in the repository (for the messages).
        original: its content at the start.
        patched: its content with the patch, or None when the patch deletes it.

    Returns:
        A ``Review``: one ``"path:line: what"`` line per weakening (the original file's line for
        what was removed or changed, the patched file's for what was added), and the changed
        expectations; both empty when the edit only adds.
    """
    if patched is None:
        return Review([f"{path}: the test file was deleted"])
    if patched == original:
        return Review()
    if not path.endswith(".py"):
        return Review([(f"{path}: an existing test file that is not Python was changed (only Python test files are compared "
                        "test by test, so any change to another counts)")])
    old_text, new_text = original.decode("utf-8", "replace"), patched.decode("utf-8", "replace")
    try:
        old_tree = ast.parse(old_text)
    except SyntaxError:
        return Review([f"{path}: changed, and the file did not parse at the start, so its tests cannot be compared"])
    try:
        new_tree = ast.parse(new_text)
    except SyntaxError as exc:
        return Review([f"{path}:{exc.lineno or 0}: the patched test file does not parse ({exc.msg})"])
    found: list[str] = []
    changed: list[dict] = []
    old_defs, _ = _definitions(old_tree)
    new_defs, new_rebinds = _definitions(new_tree)
    for qualname, old in old_defs.items():
        checks = _checks(old)
        if not (_is_test(qualname) or checks or isinstance(old, ast.ClassDef)):
            continue  # a helper without checks: changing it can break tests, not weaken them
        new = new_defs.get(qualname)
        scope = qualname.rsplit(".", 1)[0] + "." if "." in qualname else ""
        rebound = [n for n in new_rebinds.get(scope, []) if qualname.rsplit(".", 1)[-1] in _bound_names(n)]
        if new is None or type(new) is not type(old):
            if _is_test(qualname) or checks:
                found.append(f"{path}:{old.lineno}: {qualname} was deleted or renamed")
            continue
        faults: list[str] = []  # this definition's weakenings
        edits: list[tuple[ast.AST, ast.AST, str, str]] = []  # (old, new, message, kind): changes of a test's expectations
        if rebound:
            faults.append(f"{path}:{rebound[0].lineno}: {qualname} is rebound by `{_source(new_text, rebound[0])}`")
        for decorator in old.decorator_list:
            same = any(ast.dump(decorator) == ast.dump(d) for d in new.decorator_list)
            if same or _parametrize_ok(decorator, new.decorator_list):
                continue
            message = f"{path}:{decorator.lineno}: decorator `@{_source(old_text, decorator)}` of {qualname} was removed or changed"
            replaced = _parametrize_changed(decorator, new.decorator_list)
            if replaced is not None:
                edits += [(gone, fresh, message, "a parametrize case") for gone, fresh in replaced]
            else:
                faults.append(message)
        kept = {ast.dump(d) for d in old.decorator_list}
        for decorator in new.decorator_list:
            if ast.dump(decorator) not in kept and _mentions_skip(decorator):
                faults.append(f"{path}:{decorator.lineno}: {qualname} gained `@{_source(new_text, decorator)}`")
        if isinstance(old, ast.ClassDef):
            old_marks = Counter(ast.dump(n) for n in old.body if isinstance(n, ast.Assign) and "pytestmark" in _bound_names(n))
            for node in new.body:
                if isinstance(node, ast.Assign) and "pytestmark" in _bound_names(node) and not old_marks[ast.dump(node)]:
                    faults.append(f"{path}:{node.lineno}: class {qualname} gained or changed `{_source(new_text, node)}`")
            found += faults + list(dict.fromkeys(message for _, _, message, _ in edits))
            continue
        missing = checks - _checks(new)
        where = _check_lines(old)
        pairs = _changed_checks(old, new) if missing else []
        for key in sorted(missing, key=lambda k: where[k].lineno):
            node = where[key]
            message = f"{path}:{node.lineno}: a check of {qualname} was removed or changed: `{_source(old_text, node)}`"
            paired = next((n for o, n in pairs or () if o is node), None)
            if paired is not None:
                edits.append((node, paired, message, "a check"))
            else:
                faults.append(message)
        if _skip_calls(new) > _skip_calls(old):
            faults.append(f"{path}:{new.lineno}: {qualname} gained a skip or xfail call")
        if _is_test(qualname) and _returns(new) > _returns(old):
            faults.append(f"{path}:{new.lineno}: {qualname} gained a return statement (its later checks may never run)")
        if faults or not _is_test(qualname) or not isinstance(old, _FUNCTIONS):
            found += faults + list(dict.fromkeys(message for _, _, message, _ in edits))  # a helper's changed check: which tests it serves is unknown
            continue
        for old_node, new_node, _, kind in sorted(edits, key=lambda e: e[1].lineno):
            changed.append({"file": path, "test": qualname, "line": new_node.lineno, "old": _source(old_text, old_node),
                            "new": _source(new_text, new_node), "what": kind})
    added = _module_skips(new_tree) - _module_skips(old_tree)
    for node in new_tree.body:
        if added[ast.dump(node)]:
            added[ast.dump(node)] -= 1
            found.append(f"{path}:{node.lineno}: a module-level skip or mark was added or changed: `{_source(new_text, node)}`")
    return Review(found, changed)


def weakened_tests(originals: Path, copy: Path, edited: list[str], original_list: list[str]) -> dict[str, list[str]]:
    """``review_tests(...)[0]``: ``{path: [line, ...]}`` for the files that weaken a test."""
    return review_tests(originals, copy, edited, original_list)[0]


def review_tests(originals: Path, copy: Path, edited: list[str], original_list: list[str]) -> tuple[dict[str, list[str]], dict[str, list[dict]]]:
    """``review`` for each edited test file that existed at the start.

    Args:
        originals: the folder of saved original test files (``grading.ORIGINAL_TESTS_DIR``).
        copy: the starting files plus the patch.
        edited: test files the patch adds, changes or deletes.
        original_list: the test files at the start.

    Returns:
        ``({path: [weakening line, ...]}, {path: [changed-expectation record, ...]})`` for the
        files that have some; files the patch adds are never listed.
    """
    known = set(original_list)
    weak: dict[str, list[str]] = {}
    changed: dict[str, list[dict]] = {}
    for rel in edited:
        if rel not in known or not (originals / rel).is_file():
            continue
        target = copy / rel
        patched = read_regular(target) if target.is_file() and not target.is_symlink() else None
        found = review(rel, read_regular(originals / rel), patched)
        if found.weakened:
            weak[rel] = found.weakened
        if found.changed:
            changed[rel] = found.changed
    return weak, changed


def unchanged_tests(original: bytes, patched: bytes) -> set[str]:
    """Qualified names (``TestCase.test_x``, ``test_y``) of the tests that the patched file keeps
    exactly as they were (same code, decorators included): a failure of one of them on the
    starting code is the repository's, not a reproduction the run wrote."""
    try:
        old_defs, _ = _definitions(ast.parse(original.decode("utf-8", "replace")))
        new_defs, _ = _definitions(ast.parse(patched.decode("utf-8", "replace")))
    except SyntaxError:
        return set()
    return {q for q, node in old_defs.items() if _is_test(q) and isinstance(node, _FUNCTIONS) and q in new_defs
            and ast.dump(new_defs[q]) == ast.dump(node)}  # fmt: skip


def test_qualname(test_id: str) -> str:
    """``tests/test_a.py::TestC::test_x[1-2]`` -> ``TestC.test_x``; a module id gives ""."""
    parts = test_id.split("::")[1:]
    return ".".join(parts).split("[", 1)[0] if parts else ""
