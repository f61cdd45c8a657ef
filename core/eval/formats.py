"""Task folders in other benchmarks' formats, read by the plugins that know them.

Horizon's own task folders (``task.json``/``task.toml``, ``core.eval.tasks``) are core's. A folder
in another benchmark's layout (Terminal-Bench's ``instruction.md`` + ``task.toml`` + ``tests/``, say)
is read by the plugin that runs such tasks: it registers a ``TaskFormat`` under the entry-point
group ``horizon.task_formats`` (``pyproject.toml``)::

    [project.entry-points."horizon.task_formats"]
    terminal-bench = "plugins.coding.terminal_bench:TASK_FORMAT"

``agent eval`` asks every registered format whether it recognises a folder before reading it as
Horizon's own, so a third-party plugin can add a benchmark without touching core.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from core.errors import UserError

if TYPE_CHECKING:
    from core.eval.tasks import EvalTask

#: The entry-point group a plugin registers its task formats under.
TASK_FORMATS_GROUP = "horizon.task_formats"


@runtime_checkable
class TaskFormat(Protocol):
    """A benchmark's task-folder layout, read into Horizon's ``EvalTask``.

    Attributes:
        name: the format's name, stored on the tasks it reads (``EvalTask.task_format``).
        description: what a folder of this format holds, in one line (for messages).
    """

    name: str
    description: str

    def detect(self, folder: Path) -> bool:
        """Whether ``folder`` is a task folder of this format (cheap: file names, no parsing)."""
        ...

    def load(self, folder: Path) -> EvalTask:
        """Read ``folder`` as an ``EvalTask`` (its starting tree made, its plugin named in its spec).

        Raises:
            UserError: the folder cannot be run here; the message names the file and why.
        """
        ...

    def reference_turns(self, task: EvalTask) -> list[dict[str, Any]]:
        """The scripted turns of the task's reference solution (``agent eval --policy reference``).

        Raises:
            UserError: the task has no reference solution Horizon can replay.
        """
        ...


@cache
def task_formats() -> tuple[TaskFormat, ...]:
    """Every installed plugin's task formats, by entry-point name.

    Raises:
        UserError: an entry point cannot be imported or does not give a ``TaskFormat``; the
            message names it and its package (reinstall or remove that package).
    """
    found = []
    for entry in sorted(entry_points(group=TASK_FORMATS_GROUP), key=lambda e: e.name):
        provider = entry.dist.name if entry.dist is not None else "an unknown package"
        try:
            loaded = entry.load()
        except Exception as exc:  # noqa: BLE001 - any import failure is the provider's, told as such
            raise UserError(f"the task format {entry.name!r} of {provider} could not be loaded: {type(exc).__name__}: {exc}; "
                            f"reinstall or remove {provider}") from None  # fmt: skip
        if not isinstance(loaded, TaskFormat):
            raise UserError(f"the task format {entry.name!r} of {provider} ({entry.value}) is not a TaskFormat "
                            "(it needs name, description, detect, load and reference_turns; core.eval.formats)")  # fmt: skip
        found.append(loaded)
    return tuple(found)


def format_of(folder: Path) -> TaskFormat | None:
    """The registered format that recognises ``folder``, or None (Horizon's own layout, or no task)."""
    return next((f for f in task_formats() if f.detect(folder)), None)


def named_format(name: str) -> TaskFormat:
    """The registered format called ``name``.

    Raises:
        UserError: no installed plugin registers it (its plugin was uninstalled since the task was read).
    """
    for found in task_formats():
        if found.name == name:
            return found
    raise UserError(f"no installed plugin reads the task format {name!r}; install the plugin that provides it")
