"""Horizon's error tree.

    HorizonError                 base of every error Horizon raises on purpose
    ├── UserError                a mistake the user can fix (bad flag, unknown run id); the CLI
    │   │                        prints it as one line with what to do, no traceback
    │   ├── ConfigError          config file, environment variable or flag is invalid
    │   ├── PluginNotFound       no installed plugin has that name
    │   └── RunNotFound          no run with that id in the run store
    ├── SandboxUnavailable       bwrap is missing or cannot start here (the cause is in the text)
    ├── ModelUnavailable         the model server is down or the embedded model cannot load
    └── ToolError                a tool failed in a way the model should see and can react to;
                                 the loop turns it into an error observation, never a crash

Signals that end an episode are not errors: the loop records an ``ExitStatus`` instead.
"""

from __future__ import annotations


class HorizonError(Exception):
    """Base class of every error Horizon raises on purpose."""


class UserError(HorizonError):
    """A mistake the user can fix; the message says what was wrong and what to do."""


class ConfigError(UserError):
    """A config file, environment variable or command-line flag holds an invalid value."""


class PluginNotFound(UserError):
    """No installed plugin is registered under the requested name."""


class PluginContractError(UserError, TypeError):
    """An installed plugin breaks the plugin contract (``core.plugin.check_plugin``); the message
    names the plugin, the hook and what is wrong. A ``TypeError`` too: the object has the wrong shape."""


class RunNotFound(UserError):
    """The run store holds no run with the requested id."""


class SandboxUnavailable(HorizonError):
    """The process sandbox cannot be used on this machine; the message names the cause."""


class ModelUnavailable(HorizonError):
    """The model cannot be reached or loaded (dead server, missing package, bad model file)."""


class ToolError(HorizonError):
    """A tool failed; the message becomes an error observation the model reads."""
