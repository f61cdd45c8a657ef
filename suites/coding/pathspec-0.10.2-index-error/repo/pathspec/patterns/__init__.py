# encoding: utf-8
"""
The *pathspec.patterns* package contains the pattern matching
implementations.
"""

# Load pattern implementations.
from .gitwildmatch import GitWildMatchPattern
