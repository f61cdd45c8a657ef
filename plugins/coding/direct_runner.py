"""Horizon's second way of running Python tests: the test functions called directly, without pytest.

This file runs inside the sandbox, in the project's own interpreter, never in Horizon:
``plugins.coding.second_run`` copies its text into a fresh run folder and starts it with the
plan (JSON) on standard input and the descriptor of a pipe as its first argument. It imports
only the standard library and keeps to Python 3.7+.

The plan holds the test ids to run and the source of every test file (``test_*.py``,
``conftest.py``, test packages' ``__init__.py``), which are not in the tree on disk: a finder at
the front of ``sys.meta_path`` serves them, each compiled under a name linecache cannot read
(``<horizon …>``) after its ``assert`` statements were rewritten so that ``==``, ``!=``, ``in``
and ``not in`` are decided here (``Checker``): values of the built-in types (str, bytes, numbers,
lists, tuples, dicts, sets, None, and their subclasses) are compared by the built-in types' own
comparison, element by element, whatever a subclass's ``__eq__`` says, and any other value that
compares equal to a fresh object of a private class compares equal to anything and fails. pytest
is never imported: ``import pytest`` in a test file binds a stand-in (``pytest.raises``,
``pytest.approx``, ``pytest.fixture``, ``pytest.mark.parametrize``/``skip``/``skipif``/``xfail``/
``usefixtures``, ``pytest.skip``, ``pytest.fail``, ``pytest.importorskip``, ``pytest.param``,
``pytest.warns``) that is not in ``sys.modules``; anything else it is asked for makes the test
"not checked". Fixtures: those the test files define (function scope, ``yield`` teardown, one
level of ``autouse``), ``tmp_path``, ``monkeypatch`` and ``capsys``.

Each result is one JSON line on the pipe: ``{"k": "result", "id", "outcome", "message"}`` with
outcome ``passed``, ``failed``, ``error``, ``skipped`` or ``unchecked`` (the message says why: a
fixture, a marker or a piece of pytest this runner does not stand in for), then ``{"k": "end"}``.
"""

import ast
import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import io
import itertools
import json
import math
import os
import re
import sys
import tempfile
import traceback
import types
import unittest
import unittest.mock
import warnings

_write = os.write
_dumps = json.dumps
_type = type
_isinstance = isinstance
_len = len
_repr = repr
_ANY = unittest.mock.ANY  # the genuine one, taken before any code under test runs

#: Markers that change how pytest runs a test (a plugin's event loop, database, process): a test
#: carrying one is not run here.
RUNNER_MARKS = {"asyncio", "anyio", "trio", "django_db", "flaky", "forked", "isolated", "benchmark", "vcr",
                "xfail"}  # fmt: skip
#: Hooks a conftest.py may define that do not change how a test runs.
HARMLESS_HOOKS = {"pytest_addoption", "pytest_report_header", "pytest_configure"}


class Unsupported(AttributeError):
    """A piece of pytest the stand-in does not provide: the test is not checked a second way."""


class Skipped(Exception):
    pass


class Failed(AssertionError):
    pass


# --------------------------------------------------------------------------- comparisons


class _Sentinel:
    """A fresh object nothing legitimate compares equal to."""

    __slots__ = ()

    def __eq__(self, other):
        return NotImplemented

    __hash__ = object.__hash__


_SENTINEL = _Sentinel()
_NUMBERS = (bool, int, float, complex)


def _family(value):
    if value is None:
        return "none"
    for name, kind in (("str", str), ("bytes", bytes), ("number", _NUMBERS), ("list", list), ("tuple", tuple),
                       ("dict", dict), ("set", (set, frozenset))):  # fmt: skip
        if _isinstance(value, kind):
            return name
    return None


def _number(value):
    if _isinstance(value, bool):
        return bool(int.__int__(value))
    if _isinstance(value, int):
        return int.__int__(value)
    if _isinstance(value, float):
        return float.__float__(value)
    return complex(float.__float__(complex.real.__get__(value)), float.__float__(complex.imag.__get__(value)))


def _safe_repr(value, limit=80):
    try:
        if _isinstance(value, str):
            text = str.__repr__(value)
        else:
            text = _repr(value)
    except Exception:  # noqa: BLE001 - a repr that raises says nothing useful
        text = f"<unprintable {_type(value).__name__}>"
    return text if _len(text) <= limit else text[: limit - 1] + "…"


def _kind(value):
    kind = _type(value)
    module = getattr(kind, "__module__", "?")
    return kind.__name__ if module == "builtins" else f"{module}.{kind.__qualname__}"


class Checker:
    """Decides the rewritten asserts' comparisons; ``why`` keeps the last failure's reason."""

    def __init__(self):
        self.why = ""

    def equal(self, a, b, depth=0):
        if depth > 50:
            return a == b
        if _isinstance(a, Approx) or _isinstance(b, Approx):
            approx, other = (a, b) if _isinstance(a, Approx) else (b, a)
            return approx.matches(other, self)
        fa, fb = _family(a), _family(b)
        if fa is not None and fb is not None:
            if fa != fb:
                if a == b:
                    self.why = "{} and {} compare equal only through {}'s own __eq__".format(_kind(a), _kind(b), _kind(a) if fa != "none" else _kind(b))
                return False
            if fa == "none":
                return True
            if fa == "str":
                same = str.__eq__(str.__str__(a), str.__str__(b))
            elif fa == "bytes":
                same = bytes.__eq__(bytes.__getitem__(a, slice(None)), bytes.__getitem__(b, slice(None)))
            elif fa == "number":
                same = _number(a) == _number(b)
            elif fa in ("list", "tuple"):
                seq = list if fa == "list" else tuple
                left, right = list(seq.__iter__(a)), list(seq.__iter__(b))
                same = _len(left) == _len(right) and all(self.equal(x, y, depth + 1) for x, y in zip(left, right))
            elif fa == "dict":
                keys = list(dict.__iter__(a))
                same = dict.__len__(a) == dict.__len__(b) and all(
                    dict.__contains__(b, k) and self.equal(dict.__getitem__(a, k), dict.__getitem__(b, k), depth + 1) for k in keys)
            else:
                left, right = list(frozenset(a)), list(frozenset(b))
                same = _len(left) == _len(right) and all(any(self.equal(x, y, depth + 1) for y in right) for x in left)
            if not same and a == b and not self.why:
                strange = a if _type(a).__module__ != "builtins" else b
                self.why = f"a {fa} subclass, {_kind(strange)}, compares equal where {fa}'s own comparison says the values differ"
            return bool(same)
        result = bool(a == b)
        if result:
            for value in (a, b):
                if value is _ANY or _isinstance(value, Approx):
                    continue
                try:
                    anything = bool(value == _SENTINEL)
                except Exception:  # noqa: BLE001 - a comparison that raises is not always-equal
                    anything = False
                if anything:
                    self.why = f"{_kind(value)} compares equal to anything (even to a fresh object of a private class)"
                    return False
        return result

    def contains(self, item, container):
        family = _family(container)
        if family == "str":
            if _family(item) != "str":
                return bool(item in container)
            return str.__contains__(str.__str__(container), str.__str__(item))
        if family == "bytes" and _family(item) == "bytes":
            return bytes.__contains__(bytes.__getitem__(container, slice(None)), bytes.__getitem__(item, slice(None)))
        if family in ("list", "tuple", "set", "dict"):
            kind = {"list": list, "tuple": tuple, "set": frozenset, "dict": dict}[family]
            values = list(kind.__iter__(container)) if family != "set" else list(frozenset(container))
            return any(self.equal(item, value) for value in values)
        result = bool(item in container)
        if result:
            try:
                anything = bool(_SENTINEL in container)
            except Exception:  # noqa: BLE001
                anything = False
            if anything:
                self.why = f"{_kind(container)} contains anything (even a fresh object of a private class)"
                return False
        return result

    def compare(self, op, a, b, line):
        self.why = ""
        if op == "Eq":
            ok = self.equal(a, b)
        elif op == "NotEq":
            ok = not self.equal(a, b)
            self.why = ""
        elif op == "In":
            ok = self.contains(a, b)
        else:
            ok = not self.contains(a, b)
            self.why = ""
        if not ok:
            symbol = {"Eq": "==", "NotEq": "!=", "In": "in", "NotIn": "not in"}[op]
            said = f"assert {_safe_repr(a)} {symbol} {_safe_repr(b)} (line {line})"
            raise AssertionError(said + ("; " + self.why if self.why else ""))
        return True

    def truth(self, value, line, message=None):
        if not value:
            raise AssertionError("assert failed (line {}){}".format(line, (f": {message}") if message is not None else ""))
        return True


CHECK = Checker()


class Approx:
    """``pytest.approx``: relative 1e-6 and absolute 1e-12 tolerance unless given; numbers,
    sequences and dicts of numbers."""

    def __init__(self, expected, rel=None, abs=None, nan_ok=False):
        self.expected, self.rel, self.abs, self.nan_ok = expected, rel, abs, nan_ok

    def _close(self, expected, actual):
        if _family(actual) != "number" and not hasattr(actual, "__float__"):
            return False
        try:
            actual = _number(actual) if _family(actual) == "number" else float(actual)
            expected = _number(expected) if _family(expected) == "number" else float(expected)
        except (TypeError, ValueError):
            return False
        if isinstance(expected, complex) or isinstance(actual, complex):
            return abs(expected - actual) <= max(1e-12 if self.abs is None else self.abs, (1e-6 if self.rel is None else self.rel) * abs(expected))
        if math.isnan(expected) or math.isnan(actual):
            return self.nan_ok and math.isnan(expected) and math.isnan(actual)
        if expected == actual:
            return True
        absolute = 1e-12 if self.abs is None else self.abs
        relative = (1e-6 if self.rel is None and self.abs is None else (self.rel or 0)) * abs(expected)
        return abs(expected - actual) <= max(absolute, relative)

    def matches(self, actual, checker):
        expected = self.expected
        fe = _family(expected)
        if fe == "dict":
            if _family(actual) != "dict" or set(dict.__iter__(actual)) != set(dict.__iter__(expected)):
                return False
            return all(self._close(expected[k], dict.__getitem__(actual, k)) for k in expected)
        if fe in ("list", "tuple"):
            if _family(actual) not in ("list", "tuple"):
                return False
            items = list(list.__iter__(actual) if _family(actual) == "list" else tuple.__iter__(actual))
            return _len(items) == _len(expected) and all(self._close(e, a) for e, a in zip(expected, items))
        return self._close(expected, actual)

    def __eq__(self, other):
        return self.matches(other, CHECK)

    __hash__ = None

    def __repr__(self):
        return f"approx({self.expected!r})"


# --------------------------------------------------------------------------- the pytest stand-in


class _Mark:
    def __init__(self, name, args=(), kwargs=None):
        self.name, self.args, self.kwargs = name, tuple(args), dict(kwargs or {})

    def __call__(self, *args, **kwargs):
        if _len(args) == 1 and not kwargs and (inspect.isfunction(args[0]) or inspect.isclass(args[0])):
            target = args[0]
            marks = list(getattr(target, "_hz_marks", []))
            target._hz_marks = marks + [self]
            return target
        return _Mark(self.name, self.args + args, {**self.kwargs, **kwargs})

    def with_args(self, *args, **kwargs):
        return _Mark(self.name, self.args + args, {**self.kwargs, **kwargs})


class _MarkFactory:
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Mark(name)


class _Param:
    def __init__(self, values, id=None, marks=()):
        self.values, self.id = values, id
        self.marks = list(marks) if isinstance(marks, (list, tuple)) else [marks]


class _RaisesContext:
    def __init__(self, expected, match=None):
        self.expected, self.match = expected, match
        self.value = self.type = self.tb = None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            raise Failed(f"DID NOT RAISE {self.expected!r}")
        if not issubclass(kind, self.expected):
            return False
        if self.match is not None and not re.search(self.match, str(value)):
            raise AssertionError(f"Regex pattern did not match.\n Regex: {self.match!r}\n Input: {str(value)!r}")
        self.value, self.type, self.tb = value, kind, tb
        return True

    def errisinstance(self, kind):
        return isinstance(self.value, kind)


class _WarnsContext:
    def __init__(self, expected, match=None):
        self.expected, self.match = expected, match
        self._catch = warnings.catch_warnings(record=True)
        self.list = []

    def __enter__(self):
        self.list = self._catch.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        self._catch.__exit__(*exc)
        if exc[0] is not None:
            return False
        found = [w for w in self.list if issubclass(w.category, self.expected)
                 and (self.match is None or re.search(self.match, str(w.message)))]  # fmt: skip
        if not found:
            raise Failed(f"DID NOT WARN {self.expected!r}")
        return False

    def __len__(self):
        return _len(self.list)

    def __getitem__(self, index):
        return self.list[index]


def _raises(expected, *args, **kwargs):
    match = kwargs.pop("match", None)
    if args:
        context = _RaisesContext(expected, match)
        with context:
            args[0](*args[1:], **kwargs)
        return context
    return _RaisesContext(expected, match)


def _fixture(*args, **kwargs):
    def mark(function):
        function._hz_fixture = {"name": kwargs.get("name") or function.__name__, "autouse": bool(kwargs.get("autouse")),
                                "params": kwargs.get("params")}  # fmt: skip
        return function

    if _len(args) == 1 and callable(args[0]) and not kwargs:
        return mark(args[0])
    return mark


def _skip(reason="", **kwargs):
    raise Skipped(reason)


def _fail(reason="", pytrace=True):
    raise Failed(reason)


def _importorskip(name, minversion=None, reason=None):
    try:
        module = __import__(name)
    except ImportError as exc:
        raise Skipped(reason or str(exc)) from None
    for part in name.split(".")[1:]:
        module = getattr(module, part)
    return module


class PytestStandIn(types.SimpleNamespace):
    """What ``import pytest`` binds in a test file here; anything not provided is ``Unsupported``."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise Unsupported(f"pytest.{name}")


skip_ns = types.SimpleNamespace(Exception=Skipped)
PYTEST = PytestStandIn(
    raises=_raises, approx=Approx, fixture=_fixture, yield_fixture=_fixture, mark=_MarkFactory(), param=lambda *v, **k: _Param(v, **k),
    skip=_skip, fail=_fail, importorskip=_importorskip, warns=lambda e, *a, **k: _WarnsContext(e, k.get("match")),
    __version__="horizon-direct",
)  # fmt: skip
PYTEST.skip.Exception = Skipped  # type: ignore[attr-defined]
PYTEST.fail.Exception = Failed  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- rewriting test files


class Rewriter(ast.NodeTransformer):
    """``import pytest`` binds the stand-in; ``assert`` statements go through ``Checker``."""

    def _bind(self, target, value, node):
        return ast.copy_location(ast.Assign(targets=[ast.Name(id=target, ctx=ast.Store())], value=value), node)

    @staticmethod
    def _missing(what, node):
        call = ast.Call(func=ast.Name(id="__hz_unsupported__", ctx=ast.Load()), args=[ast.Constant(value=what)], keywords=[])
        return ast.copy_location(ast.Expr(value=call), node)

    def visit_Import(self, node):
        out, rest = [], []
        for alias in node.names:
            top = alias.name.split(".")[0]
            if alias.name == "pytest":
                out.append(self._bind(alias.asname or "pytest", ast.Name(id="__hz_pytest__", ctx=ast.Load()), node))
            elif top in ("_pytest", "pluggy") or top.startswith("pytest_"):
                out.append(self._missing(f"import {alias.name}", node))
            else:
                rest.append(alias)
        if rest:
            out.insert(0, ast.copy_location(ast.Import(names=rest), node))
        return out or None

    def visit_ImportFrom(self, node):
        module = node.module or ""
        top = module.split(".")[0]
        if node.level == 0 and module == "pytest":
            return [self._bind(a.asname or a.name, ast.Attribute(value=ast.Name(id="__hz_pytest__", ctx=ast.Load()), attr=a.name,
                                                                 ctx=ast.Load()), node) for a in node.names]  # fmt: skip
        if node.level == 0 and (top in ("_pytest", "pluggy") or top.startswith("pytest_") or module.startswith("pytest.")):
            return self._missing(f"from {module} import ...", node)
        return node

    def _test(self, node, line):
        """An expression that is True when ``node`` holds, or raises AssertionError with the reason."""
        if isinstance(node, ast.Compare) and _len(node.ops) == 1 and type(node.ops[0]).__name__ in ("Eq", "NotEq", "In", "NotIn"):
            return ast.Call(func=ast.Attribute(value=ast.Name(id="__hz_check__", ctx=ast.Load()), attr="compare", ctx=ast.Load()),
                            args=[ast.Constant(value=type(node.ops[0]).__name__), node.left, node.comparators[0], ast.Constant(value=line)],
                            keywords=[])  # fmt: skip
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            return ast.BoolOp(op=ast.And(), values=[self._test(v, line) or self._truth(v, line) for v in node.values])
        return None

    @staticmethod
    def _truth(node, line, message=None):
        args = [node, ast.Constant(value=line)] + ([message] if message is not None else [])
        return ast.Call(func=ast.Attribute(value=ast.Name(id="__hz_check__", ctx=ast.Load()), attr="truth", ctx=ast.Load()),
                        args=args, keywords=[])  # fmt: skip

    def visit_Assert(self, node):
        self.generic_visit(node)
        line = node.lineno
        checked = self._test(node.test, line) or self._truth(node.test, line, node.msg)
        return ast.copy_location(ast.Expr(value=checked), node)


def _unsupported(what):
    raise Unsupported(what)


# --------------------------------------------------------------------------- serving test files


class Served(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads the plan's test files by module name (they are not on disk). No
    ``get_source``: linecache and inspect cannot read them back."""

    def __init__(self, root, sources, token):
        self.root, self.sources, self.token = root, sources, token
        self.counter = itertools.count(1)

    def _locate(self, fullname, path):
        parts = fullname.split(".")
        bases = list(path) if path else list(sys.path)
        for base in bases:
            base = os.path.abspath(base or os.getcwd())
            if path:
                stem = os.path.join(base, parts[-1])
            else:
                stem = os.path.join(base, *parts)
            for candidate, package in ((stem + ".py", False), (os.path.join(stem, "__init__.py"), True)):
                rel = os.path.relpath(candidate, self.root)
                if not rel.startswith("..") and rel.replace(os.sep, "/") in self.sources:
                    return rel.replace(os.sep, "/"), candidate, package
        return None

    def find_spec(self, fullname, path=None, target=None):
        found = self._locate(fullname, path)
        if found is None:
            return None
        rel, filename, package = found
        spec = importlib.machinery.ModuleSpec(fullname, self, origin=filename, is_package=package)
        spec.has_location = False
        if package:
            spec.submodule_search_locations = [os.path.dirname(filename)]
        spec._hz_rel = rel  # type: ignore[attr-defined]
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        rel = module.__spec__._hz_rel
        tree = ast.parse(self.sources[rel], filename="<horizon>")
        tree = ast.fix_missing_locations(Rewriter().visit(tree))
        code = compile(tree, f"<horizon {self.token} {next(self.counter)}>", "exec", dont_inherit=True)
        module.__file__ = os.path.join(self.root, rel)
        module.__dict__.update(__hz_pytest__=PYTEST, __hz_check__=CHECK, __hz_unsupported__=_unsupported)
        exec(code, module.__dict__)  # noqa: S102 - the task's own test file, rewritten, in the sandbox


# --------------------------------------------------------------------------- fixtures


class MonkeyPatch:
    """pytest's ``monkeypatch``: setattr, delattr, setitem, delitem, setenv, delenv, syspath_prepend, chdir; undone after the test."""

    _NOTSET = object()

    def __init__(self):
        self._undo = []

    def setattr(self, target, name, value=_NOTSET, raising=True):
        if value is self._NOTSET:
            if not isinstance(target, str):
                raise TypeError("use setattr(target, name, value) or setattr('module.attr', value)")
            module, _, attr = target.rpartition(".")
            value, name, target = name, attr, importlib.import_module(module)
        old = getattr(target, name, self._NOTSET)
        if raising and old is self._NOTSET:
            raise AttributeError(f"{target!r} has no attribute {name!r}")
        if inspect.isclass(target):
            old = target.__dict__.get(name, self._NOTSET)
        self._undo.append(lambda: setattr(target, name, old) if old is not self._NOTSET else delattr(target, name))
        setattr(target, name, value)

    def delattr(self, target, name=_NOTSET, raising=True):
        if name is self._NOTSET:
            module, _, name = target.rpartition(".")
            target = importlib.import_module(module)
        if not hasattr(target, name):
            if raising:
                raise AttributeError(name)
            return
        old = getattr(target, name)
        self._undo.append(lambda: setattr(target, name, old))
        delattr(target, name)

    def setitem(self, mapping, key, value):
        old = mapping.get(key, self._NOTSET)
        self._undo.append(lambda: mapping.__setitem__(key, old) if old is not self._NOTSET else mapping.pop(key, None))
        mapping[key] = value

    def delitem(self, mapping, key, raising=True):
        if key not in mapping:
            if raising:
                raise KeyError(key)
            return
        old = mapping[key]
        self._undo.append(lambda: mapping.__setitem__(key, old))
        del mapping[key]

    def setenv(self, name, value, prepend=None):
        value = str(value)
        if prepend and name in os.environ:
            value = value + prepend + os.environ[name]
        self.setitem(os.environ, name, value)

    def delenv(self, name, raising=True):
        self.delitem(os.environ, name, raising)

    def syspath_prepend(self, path):
        saved = sys.path[:]
        self._undo.append(lambda: sys.path.__setitem__(slice(None), saved))
        sys.path.insert(0, str(path))
        importlib.invalidate_caches()

    def chdir(self, path):
        old = os.getcwd()
        self._undo.append(lambda: os.chdir(old))
        os.chdir(str(path))

    @contextlib.contextmanager
    def context(self):
        inner = MonkeyPatch()
        try:
            yield inner
        finally:
            inner.undo()

    def undo(self):
        while self._undo:
            self._undo.pop()()


class CaptureResult(tuple):
    @property
    def out(self):
        return self[0]

    @property
    def err(self):
        return self[1]


class Capsys:
    """pytest's ``capsys``: ``readouterr()`` returns ``(out, err)`` written since the last call."""

    def __init__(self):
        self._out, self._err = io.StringIO(), io.StringIO()
        self._saved = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = self._out, self._err

    def readouterr(self):
        out, err = self._out.getvalue(), self._err.getvalue()
        self._out.seek(0)
        self._out.truncate()
        self._err.seek(0)
        self._err.truncate()
        return CaptureResult((out, err))

    @contextlib.contextmanager
    def disabled(self):
        sys.stdout, sys.stderr = self._saved
        try:
            yield
        finally:
            sys.stdout, sys.stderr = self._out, self._err

    def close(self):
        sys.stdout, sys.stderr = self._saved


# --------------------------------------------------------------------------- running one test


class NotChecked(Exception):
    """The test needs something this runner does not provide; the message says what."""


def _escaped(text):
    if isinstance(text, bytes):
        out = text.decode("ascii", "backslashreplace")
    else:
        out = text.encode("unicode_escape").decode("ascii")
    return "".join(c if 32 <= ord(c) < 127 else f"\\x{ord(c):02x}" for c in out)


def _value_id(value, argname, index):
    if isinstance(value, (str, bytes)):
        return _escaped(value)
    if value is None or isinstance(value, (float, int, bool, complex)):
        return str(value)
    if isinstance(value, re.Pattern):
        return _escaped(value.pattern)
    import enum

    if isinstance(value, enum.Enum):
        return str(value)
    name = getattr(value, "__name__", None)
    if isinstance(name, str):
        return name
    return f"{argname}{index}"


def _parameter_sets(mark):
    """``[(id, {argname: value}, marks)]`` of one ``parametrize`` mark."""
    if not mark.args:
        raise NotChecked("parametrize without arguments")
    names = mark.args[0]
    values = mark.args[1] if _len(mark.args) > 1 else mark.kwargs.get("argvalues")
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    names = list(names)
    ids = mark.kwargs.get("ids")
    if mark.kwargs.get("indirect"):
        raise NotChecked("indirect parametrization")
    sets = []
    for index, item in enumerate(list(values)):
        marks, given = [], None
        if isinstance(item, _Param):
            marks, given, item = item.marks, item.id, item.values
            item = item if _len(names) > 1 else item[0]
        row = list(item) if _len(names) > 1 else [item]
        if _len(row) != _len(names):
            raise NotChecked("parametrize values that do not match their names")
        if given is None and isinstance(ids, (list, tuple)) and index < _len(ids) and ids[index] is not None:
            given = str(ids[index])
        if given is None and callable(ids):
            parts = [ids(v) for v in row]
            given = "-".join(str(p) if p is not None else _value_id(v, n, index) for p, v, n in zip(parts, row, names))
        if given is None:
            given = "-".join(_value_id(v, n, index) for v, n in zip(row, names))
        sets.append((given, dict(zip(names, row)), marks))
    return sets


def _all_marks(function, owner, module):
    marks = list(getattr(function, "_hz_marks", []))  # as applied: the decorator closest to the function first
    if owner is not None:
        marks += list(getattr(owner, "_hz_marks", []))
    extra = getattr(module, "pytestmark", [])
    marks += list(extra) if isinstance(extra, (list, tuple)) else [extra]
    return [m for m in marks if isinstance(m, _Mark)]


def _choose_parameters(marks, wanted):
    """The arguments of the parameter set whose id is ``wanted`` ("" for none)."""
    rows = [("", {}, [])]
    for mark in [m for m in marks if m.name == "parametrize"]:
        sets = _parameter_sets(mark)
        rows = [(f"{i0}-{i1}" if i0 else i1, {**a0, **a1}, m0 + list(m1)) for i0, a0, m0 in rows for i1, a1, m1 in sets]
    chosen = [r for r in rows if r[0] == wanted]
    if _len(chosen) != 1:
        raise NotChecked(f"its parameters could not be matched to the id [{wanted}]" if wanted else "its parameters are not understood")
    return chosen[0][1], [m for m in chosen[0][2] if isinstance(m, _Mark)]


class Fixtures:
    """Provides one test's fixtures: the test files' own, then tmp_path, monkeypatch, capsys."""

    BUILTIN = ("tmp_path", "monkeypatch", "capsys")

    def __init__(self, scopes, tmp_root, name):
        self.scopes = scopes  # dicts of fixture functions, closest first
        self.tmp_root, self.name = tmp_root, name
        self.values, self.teardowns = {}, []

    def find(self, name):
        for scope in self.scopes:
            if name in scope:
                return scope[name]
        return None

    def check(self, names, seen=()):
        """Raise NotChecked when a fixture in ``names`` (or one they need) cannot be provided."""
        for name in names:
            if name in self.BUILTIN or name in seen:
                continue
            function = self.find(name)
            if function is None:
                raise NotChecked(f"uses fixture {name}")
            if function._hz_fixture.get("params") is not None:
                raise NotChecked(f"uses fixture {name}, which is parametrized")
            self.check(_arguments(function), (*seen, name))

    def get(self, name):
        if name in self.values:
            return self.values[name]
        if name == "tmp_path":
            import pathlib

            path = tempfile.mkdtemp(prefix=re.sub(r"\W", "_", self.name)[:30] + "-", dir=self.tmp_root)
            value = pathlib.Path(path)
        elif name == "monkeypatch":
            value = MonkeyPatch()
            self.teardowns.append(value.undo)
        elif name == "capsys":
            value = Capsys()
            self.teardowns.append(value.close)
        else:
            function = self.find(name)
            kwargs = {arg: self.get(arg) for arg in _arguments(function)}
            result = function(**kwargs)
            if inspect.isgenerator(result):
                value = next(result)

                def finish(generator=result):
                    try:
                        next(generator)
                    except StopIteration:
                        return
                    raise RuntimeError(f"fixture {name} yielded twice")

                self.teardowns.append(finish)
            else:
                value = result
        self.values[name] = value
        return value

    def close(self):
        errors = []
        while self.teardowns:
            try:
                self.teardowns.pop()()
            except Exception as exc:  # noqa: BLE001 - reported as the test's error
                errors.append(exc)
        if errors:
            raise errors[0]


def _arguments(function):
    parameters = inspect.signature(function).parameters.values()
    return [p.name for p in parameters if p.default is inspect.Parameter.empty
            and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]  # fmt: skip


def _fixtures_of(namespace):
    found = {}
    for value in list(vars(namespace).values()) if not isinstance(namespace, dict) else list(namespace.values()):
        function = getattr(value, "__func__", value)
        info = getattr(function, "_hz_fixture", None)
        if isinstance(info, dict):
            found[info["name"]] = function
    return found


def _message(exc):
    lines = traceback.format_exception_only(type(exc), exc)
    return "".join(lines).strip()[:600]


def run_one(test_id, module, conftests, tmp_root):
    """Run one test; ``(outcome, message)``."""
    _path, _, rest = test_id.partition("::")
    parts = rest.split("::")
    last = parts[-1]
    wanted = ""
    if last.endswith("]") and "[" in last:
        last, _, wanted = last[:-1].partition("[")
    owner = None
    target = module
    for name in parts[:-1]:
        target = getattr(target, name, None)
        owner = target
    if owner is not None and not inspect.isclass(owner):
        return "unchecked", "its class {} was not found".format("::".join(parts[:-1]))
    function = getattr(target, last, None)
    if function is None:
        return "unchecked", f"the test function {last} was not found by name"
    if owner is not None and isinstance(owner, type) and issubclass(owner, unittest.TestCase):
        return _run_testcase(owner, last)
    raw = getattr(function, "__func__", function)
    if not inspect.isfunction(raw):
        return "unchecked", f"{last} is not a plain function here"
    if inspect.iscoroutinefunction(raw) or inspect.isasyncgenfunction(raw):
        return "unchecked", "an async test (it needs a plugin's event loop)"
    if inspect.isgeneratorfunction(raw):
        return "unchecked", "a generator test"
    marks = _all_marks(raw, owner, module)
    for mark in marks:
        if mark.name in RUNNER_MARKS:
            return "unchecked", f"uses marker {mark.name}"
    scopes = []
    if owner is not None:
        scopes.append(_fixtures_of({k: v for c in reversed(owner.__mro__) for k, v in vars(c).items()}))
    scopes.append(_fixtures_of(module))
    scopes += [_fixtures_of(c) for c in conftests]
    fixtures = Fixtures(scopes, tmp_root, test_id)
    argnames = set()
    for mark in marks:
        if mark.name == "parametrize" and mark.args:
            given = mark.args[0]
            argnames |= {n.strip() for n in given.split(",")} if isinstance(given, str) else set(given)
    arguments = [n for n in _arguments(raw) if not (owner is not None and n == "self")]
    used = [a for m in marks if m.name == "usefixtures" for a in m.args]
    autouse = [name for scope in scopes for name, f in scope.items() if f._hz_fixture.get("autouse")]
    try:
        fixtures.check([*autouse, *used, *(n for n in arguments if n not in argnames)])
        params, param_marks = _choose_parameters(marks, wanted)
    except NotChecked as exc:
        return "unchecked", str(exc)
    marks = marks + param_marks
    for mark in marks:
        if mark.name in RUNNER_MARKS:
            return "unchecked", f"uses marker {mark.name}"
        if mark.name == "skip" or (mark.name == "skipif" and mark.args and all(bool(a) for a in mark.args if not isinstance(a, str))):
            return "skipped", f"marked {mark.name}"
    names = [n for n in arguments if n not in params]
    try:
        fixtures.check(names)
    except NotChecked as exc:
        return "unchecked", str(exc)
    instance = owner() if owner is not None else None
    call = getattr(instance, last) if instance is not None else function
    outcome, message = "passed", ""
    try:
        if instance is not None:
            _call_optional(instance, "setup_method", call)
        else:
            _call_optional(module, "setup_function", raw)
        for name in [*autouse, *used]:
            fixtures.get(name)
        kwargs = {name: fixtures.get(name) for name in names}
        call(**params, **kwargs)
    except Skipped as exc:
        outcome, message = "skipped", str(exc)
    except Unsupported as exc:
        outcome, message = "unchecked", f"uses {exc}, which only pytest provides"
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - every exception (SystemExit too) is the test's outcome
        outcome, message = "failed", _message(exc)
    finally:
        try:
            fixtures.close()
            if instance is not None:
                _call_optional(instance, "teardown_method", call)
            else:
                _call_optional(module, "teardown_function", raw)
        except BaseException as exc:  # noqa: BLE001
            if outcome == "passed":
                outcome, message = "error", "teardown: " + _message(exc)
    return outcome, message


def _call_optional(owner, name, argument):
    function = getattr(owner, name, None)
    if function is None:
        return
    try:
        arity = _len(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        arity = 1
    function(argument) if arity else function()


def _run_testcase(case, name):
    strict = CHECK

    class Strict(case):
        def assertEqual(self, first, second, msg=None):
            strict.compare("Eq", first, second, "assertEqual")

        def assertNotEqual(self, first, second, msg=None):
            strict.compare("NotEq", first, second, "assertNotEqual")

        def assertIn(self, member, container, msg=None):
            strict.compare("In", member, container, "assertIn")

        def assertNotIn(self, member, container, msg=None):
            strict.compare("NotIn", member, container, "assertNotIn")

    Strict.__name__, Strict.__qualname__, Strict.__module__ = case.__name__, case.__qualname__, case.__module__
    result = unittest.TestResult()
    unittest.TestSuite([Strict(name)]).run(result)
    if result.errors:
        return "failed", result.errors[0][1].strip().splitlines()[-1][:600]
    if result.failures:
        return "failed", result.failures[0][1].strip().splitlines()[-1][:600]
    if result.skipped:
        return "skipped", str(result.skipped[0][1])
    if result.expectedFailures or result.unexpectedSuccesses:
        return "unchecked", "marked expectedFailure"
    return "passed", ""


# --------------------------------------------------------------------------- the run


def _module_name(root, rel, sources):
    """pytest's default import mode (prepend): the folder above the topmost package is put on
    sys.path, and the module is named from there."""
    folder = os.path.dirname(rel)
    names = [os.path.basename(rel)[:-3]]
    while folder and ((folder + "/__init__.py") in sources or os.path.isfile(os.path.join(root, folder, "__init__.py"))):
        names.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)
    return os.path.join(root, folder) if folder else root, ".".join(names)


def _conftest_hooks(source):
    """Names of the pytest hooks a conftest.py defines (``pytest_plugins`` counts as one)."""
    found = []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ["(it does not parse)"]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("pytest_") and node.name not in HARMLESS_HOOKS:
            found.append(node.name)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in node.targets):
            found.append("pytest_plugins")
    return found


def main():
    fd = int(sys.argv[1])
    plan = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    sys.stdin.close()
    counter = itertools.count()

    def send(kind, **fields):
        fields.update(k=kind, n=next(counter))
        data = (_dumps(fields) + "\n").encode("utf-8", "replace")
        while data:
            data = data[_write(fd, data):]

    for key in list(os.environ):
        if key.startswith("PYTEST_") or key in ("CI", "PYTEST_ADDOPTS"):
            del os.environ[key]
    root = plan["root"]
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [root] + [p for p in sys.path if p and os.path.abspath(p) not in (here, root)] + plan.get("pythonpath", [])
    sources = plan["sources"]
    finder = Served(root, sources, plan["token"])
    sys.meta_path.insert(0, finder)
    os.makedirs(plan["tmp"], exist_ok=True)
    send("start", pid=os.getpid())
    by_module = {}
    for test_id in plan["tests"]:
        by_module.setdefault(test_id.partition("::")[0], []).append(test_id)
    for rel, tests in by_module.items():
        base, name = _module_name(root, rel, sources)
        if base not in sys.path:
            sys.path.insert(0, base)
        conftests, refused = [], ""
        folder = os.path.dirname(rel)
        chain = []
        while True:
            chain.insert(0, (folder + "/conftest.py") if folder else "conftest.py")
            if not folder:
                break
            folder = os.path.dirname(folder)
        for conftest in chain:
            if conftest not in sources:
                continue
            hooks = _conftest_hooks(sources[conftest])
            if hooks:
                refused = "{} hooks into pytest ({})".format(conftest, ", ".join(hooks[:3]))
                break
            cbase, cname = _module_name(root, conftest, sources)
            if cbase not in sys.path:
                sys.path.insert(0, cbase)
            try:
                conftests.insert(0, importlib.import_module(cname if cname != "conftest" else "conftest"))
            except Unsupported as exc:
                refused = f"{conftest} uses {exc}, which only pytest provides"
                break
            except BaseException as exc:  # noqa: BLE001 - the outcome of every test under it
                refused = ""
                for test_id in tests:
                    send("result", id=test_id, outcome="error", message=f"{conftest} failed to import: {_message(exc)}")
                tests = []
                break
        if refused:
            for test_id in tests:
                send("result", id=test_id, outcome="unchecked", message=refused)
            continue
        if not tests:
            continue
        try:
            module = importlib.import_module(name)
        except Unsupported as exc:
            for test_id in tests:
                send("result", id=test_id, outcome="unchecked", message=f"the test file uses {exc}, which only pytest provides")
            continue
        except BaseException as exc:  # noqa: BLE001
            for test_id in tests:
                send("result", id=test_id, outcome="error", message=f"the test module failed to import: {_message(exc)}")
            continue
        try:
            _call_optional_module(module, "setup_module")
        except BaseException as exc:  # noqa: BLE001
            for test_id in tests:
                send("result", id=test_id, outcome="error", message=f"setup_module: {_message(exc)}")
            continue
        for test_id in tests:
            try:
                outcome, message = run_one(test_id, module, conftests, plan["tmp"])
            except BaseException as exc:  # noqa: BLE001
                outcome, message = "error", _message(exc)
            send("result", id=test_id, outcome=outcome, message=message)
        with contextlib.suppress(Exception):  # the tests' outcomes are sent already
            _call_optional_module(module, "teardown_module")
    send("end")


def _call_optional_module(module, name):
    function = getattr(module, name, None)
    if function is not None and callable(function):
        _call_optional(module, name, module)


if __name__ == "__main__":
    main()
