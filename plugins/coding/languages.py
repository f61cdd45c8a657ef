"""Tree-sitter grammars and queries for the languages the coding tools understand.

Languages: Python, Java, JavaScript (``.js .mjs .cjs .jsx``), TypeScript (``.ts .mts .cts``),
TSX (``.tsx``) and Go. Each grammar comes from its own PyPI package (``tree-sitter-python``,
``tree-sitter-java``, ``tree-sitter-javascript``, ``tree-sitter-typescript``, ``tree-sitter-go``),
which ship compiled parsers; ``tree-sitter-language-pack`` is only a fallback, because its 1.x
releases download grammars on first use and so fail on a machine without network access.

A language whose grammar cannot be loaded is simply not understood: ``grammar_for`` returns
``None`` and the callers treat the file as plain text.

Uses the py-tree-sitter 0.25+ API: ``Language(ptr)``, ``Parser(language)``,
``Query(language, source)``, ``QueryCursor(query).matches(node)``.
"""

from __future__ import annotations

import importlib
import logging
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import PurePath

log = logging.getLogger(__name__)

_PYTHON_DEFINITIONS = """
(class_definition name: (identifier) @name) @class
(function_definition name: (identifier) @name) @function
(module (expression_statement (assignment left: (identifier) @name)) @variable)
(module (expression_statement (assignment left: (pattern_list (identifier) @name))) @variable)
(class_definition body: (block (expression_statement (assignment left: (identifier) @name)) @field))
(function_definition
  name: (identifier) @_init
  body: (block (expression_statement
    (assignment left: (attribute object: (identifier) @_self attribute: (identifier) @name))) @attribute)
  (#eq? @_init "__init__")
  (#eq? @_self "self"))
"""

_JAVA_DEFINITIONS = """
(class_declaration name: (identifier) @name) @class
(interface_declaration name: (identifier) @name) @interface
(enum_declaration name: (identifier) @name) @enum
(record_declaration name: (identifier) @name) @record
(annotation_type_declaration name: (identifier) @name) @annotation
(method_declaration name: (identifier) @name) @method
(constructor_declaration name: (identifier) @name) @constructor
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @field
(constant_declaration declarator: (variable_declarator name: (identifier) @name)) @field
(enum_constant name: (identifier) @name) @enum_constant
"""

# The earlier pattern wins when one name matches several (``const f = () => 1`` is a function).
_JAVASCRIPT_DEFINITIONS = """
(class_declaration name: (identifier) @name) @class
(function_declaration name: (identifier) @name) @function
(generator_function_declaration name: (identifier) @name) @function
(method_definition name: (property_identifier) @name) @method
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @function
(program (lexical_declaration (variable_declarator name: (identifier) @name)) @variable)
(program (variable_declaration (variable_declarator name: (identifier) @name)) @variable)
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name)) @variable))
"""

_TYPESCRIPT_DEFINITIONS = """
(class_declaration name: (type_identifier) @name) @class
(abstract_class_declaration name: (type_identifier) @name) @class
(interface_declaration name: (type_identifier) @name) @interface
(type_alias_declaration name: (type_identifier) @name) @type
(enum_declaration name: (identifier) @name) @enum
(function_declaration name: (identifier) @name) @function
(generator_function_declaration name: (identifier) @name) @function
(method_definition name: (property_identifier) @name) @method
(method_signature name: (property_identifier) @name) @method
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @function
(program (lexical_declaration (variable_declarator name: (identifier) @name)) @variable)
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name)) @variable))
"""

_GO_DEFINITIONS = """
(function_declaration name: (identifier) @name) @function
(method_declaration name: (field_identifier) @name) @method
(type_spec name: (type_identifier) @name) @type
(source_file (const_declaration (const_spec name: (identifier) @name)) @constant)
(source_file (var_declaration (var_spec name: (identifier) @name)) @variable)
"""


@dataclass(frozen=True)
class _Spec:
    package: str  # PyPI module that ships the grammar
    function: str  # its function returning the language pointer
    pack_name: str  # the name in tree-sitter-language-pack
    definitions: str  # query: @name plus one capture naming the kind
    identifiers: str  # query: every identifier-like node as @id
    containers: tuple[str, ...]  # node types whose ``name`` field owns the definitions inside
    calls: str  # query: the name each call invokes as @call (``f`` in ``f()``, ``obj.f()``, ``new F()``)


_JS_CALLS = """
(call_expression function: (identifier) @call)
(call_expression function: (member_expression property: (property_identifier) @call))
(new_expression constructor: (identifier) @call)
"""
_SPECS: dict[str, _Spec] = {
    "python": _Spec(
        "tree_sitter_python", "language", "python", _PYTHON_DEFINITIONS, "(identifier) @id",
        ("class_definition",),
        "(call function: (identifier) @call) (call function: (attribute attribute: (identifier) @call))",
    ),
    "java": _Spec(
        "tree_sitter_java", "language", "java", _JAVA_DEFINITIONS, "[(identifier) (type_identifier)] @id",
        ("class_declaration", "interface_declaration", "enum_declaration", "record_declaration"),
        "(method_invocation name: (identifier) @call) (object_creation_expression type: (type_identifier) @call)",
    ),
    "javascript": _Spec(
        "tree_sitter_javascript", "language", "javascript", _JAVASCRIPT_DEFINITIONS,
        "[(identifier) (property_identifier)] @id",
        ("class_declaration", "class"), _JS_CALLS,
    ),
    "typescript": _Spec(
        "tree_sitter_typescript", "language_typescript", "typescript", _TYPESCRIPT_DEFINITIONS,
        "[(identifier) (property_identifier) (type_identifier)] @id",
        ("class_declaration", "abstract_class_declaration", "interface_declaration", "class"), _JS_CALLS,
    ),
    "tsx": _Spec(
        "tree_sitter_typescript", "language_tsx", "tsx", _TYPESCRIPT_DEFINITIONS,
        "[(identifier) (property_identifier) (type_identifier)] @id",
        ("class_declaration", "abstract_class_declaration", "interface_declaration", "class"), _JS_CALLS,
    ),
    "go": _Spec(
        "tree_sitter_go", "language", "go", _GO_DEFINITIONS,
        "[(identifier) (field_identifier) (type_identifier)] @id",
        (),
        "(call_expression function: (identifier) @call)"
        " (call_expression function: (selector_expression field: (field_identifier) @call))",
    ),
}  # fmt: skip

#: File suffix -> language name.
SUFFIX_LANGUAGE: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".java": "java",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
}
#: Every suffix with a language, for walking a repository.
SOURCE_SUFFIXES: tuple[str, ...] = tuple(SUFFIX_LANGUAGE)


class Grammar:
    """A loaded language: its parser (guarded by a lock) and compiled queries.

    Attributes:
        name: the language name (a key of ``SUFFIX_LANGUAGE``'s values).
        language: the ``tree_sitter.Language``.
        parser: a ``tree_sitter.Parser``; use ``parse`` (a Parser is not thread-safe).
        definitions: query capturing each definition's name as ``@name`` and its node under a
            capture named after its kind (``@class``, ``@function`` ...).
        identifiers: query capturing every identifier as ``@id``.
        calls: query capturing the name each call invokes as ``@call``.
        spec: the language's node-type facts (containers, query sources).
    """

    def __init__(self, name: str, language, spec: _Spec) -> None:
        from tree_sitter import Parser, Query

        self.name = name
        self.language = language
        self.spec = spec
        self.parser = Parser(language)
        self.definitions = Query(language, spec.definitions)
        self.identifiers = Query(language, spec.identifiers)
        self.calls = Query(language, spec.calls)
        self._lock = threading.Lock()

    def parse(self, source: bytes):
        """Parse ``source`` (bytes) and return the ``tree_sitter.Tree``."""
        with self._lock:
            return self.parser.parse(source)


def _load_language(spec: _Spec):
    """The grammar from its own PyPI package (``tree-sitter-python`` ...), or None when missing.

    Not tree-sitter-language-pack: its 1.x releases download grammars on first use, and Horizon
    must never fetch anything at run time.
    """
    from tree_sitter import Language

    try:
        module = importlib.import_module(spec.package)
        return Language(getattr(module, spec.function)())
    except Exception as exc:  # noqa: BLE001 - any failure means "no grammar here"
        log.info("no tree-sitter grammar for %s (pip install %s): %s", spec.pack_name, spec.package.replace("_", "-"), exc)
        return None


@cache
def grammar(name: str) -> Grammar | None:
    """The loaded grammar of language ``name``, or ``None`` when it is unknown or not installed."""
    spec = _SPECS.get(name)
    if spec is None:
        return None
    language = _load_language(spec)
    if language is None:
        return None
    try:
        return Grammar(name, language, spec)
    except Exception as exc:  # noqa: BLE001 - e.g. a grammar release that renamed a node type our queries use
        log.warning("the installed %s grammar does not fit Horizon's queries (%s); %s files are treated as text", name, exc, name)
        return None


def language_of(path: str | PurePath) -> str | None:
    """The language name for a file path by its suffix (``"python"`` for ``a/b.py``), or ``None``."""
    return SUFFIX_LANGUAGE.get(PurePath(path).suffix.lower())


def grammar_for(path: str | PurePath) -> Grammar | None:
    """The loaded grammar for a file path, or ``None`` when its language is unknown or not installed."""
    name = language_of(path)
    return grammar(name) if name else None
