"""Terminal-Bench task folders for ``agent eval``: in a container built from their Dockerfile
(Harbor's semantics), or in the bubblewrap sandbox where the Dockerfile only copies files.

The coding plugin registers this format (``TASK_FORMAT``) under ``horizon.task_formats``
(``core.eval.formats``): ``agent eval`` reads such a folder as a coding task; the episode's set-up
text and reward are in ``reward.py``.

Two layouts are read (``suites/README.md``, "Terminal-Bench tasks"):

* Terminal-Bench 2 (Harbor's task format)::

      TASK/instruction.md          what the agent is asked (Markdown)
      TASK/task.toml               [metadata] (free-form), [agent] timeout_sec, [verifier] timeout_sec and env,
                                   [environment] (resources; docker_image: a prebuilt image, refused)
      TASK/environment/Dockerfile  the container; environment/ is its build context (may be
                                   missing: then a prebuilt docker_image, refused)
      TASK/tests/test.sh           the verifier (writes /logs/verifier/reward.txt), plus test_*.py
      TASK/solution/solve.sh       the reference solution (optional)

* Terminal-Bench 1: ``task.yaml`` (``instruction``, ``max_agent_timeout_sec``,
  ``max_test_timeout_sec``, ...), ``Dockerfile`` and ``docker-compose.yaml`` at the task's root
  (the build context), ``run-tests.sh``, ``solution.sh`` (or ``solution.yaml``, keystrokes: not
  replayed), ``tests/``; the compose service's ``environment:`` (a list or a mapping) is given
  to the tests.

``instruction.md`` + ``task.toml`` is enough to be read as Terminal-Bench 2 (Horizon's own task
folders never have ``instruction.md``). Task files are read as UTF-8, a byte-order mark dropped;
a file in another encoding is a ``UserError`` naming it.

Sources: Harbor's documentation, https://harborframework.com/docs/tasks,
https://harborframework.com/docs/task-difference and https://harborframework.com/docs/task-tutorial;
for Terminal-Bench 1, the ``terminal-bench`` 0.2.18 wheel on PyPI (its ``Task`` model in
``terminal_bench/handlers/trial_handler.py``, its task template in ``terminal_bench/cli/template-task/``,
and ``/tests``, where the harness copies the tests, in ``terminal_bench/terminal/docker_compose_manager.py``).
The wheel ships no benchmark tasks, only that template; the tasks in ``suites/terminal-bench/`` are ours.

Which sandbox (``container.py``, decided when the task is loaded): a container built from the
task's own Dockerfile (``core.sandbox.container``; image and starting tree made at load, the
verifier ``tests/test.sh`` run in the same container after the agent: ``verify.py``; the
container's changes outside the working folder kept as the run's ``container.diff``:
``artefact.py``) for every task the bubblewrap path below refuses; the bubblewrap path for the
rest. ``suites/README.md`` ("Terminal-Bench tasks") says where Horizon's container semantics
differ from Harbor's.

The bubblewrap path. The Dockerfile is read, not built:

* ``WORKDIR`` (the last one) is where the tests expect the files (usually ``/app``): the episode's
  workspace is shown there by the sandbox (``BwrapSandbox``'s ``alias``; a folder under one this
  machine has, e.g. ``/srv/app``, is made by rebuilding the folders above it), so the agent's commands
  and the tests see ``/app``; the file tools see the same files relative to the workspace;
* ``COPY``/``ADD`` of files from the build context make the starting tree (the episode's ``repo``,
  built once into ``$HORIZON_HOME/cache/terminal-bench/``); their targets must lie inside the
  final ``WORKDIR``;
* ``ENV`` and ``ARG`` values are recorded (and substituted in later lines); the tests run with
  ``ENV`` (but ``PATH``, ``HOME`` and the like: ``KEPT_ENV``), the reference solution exports it;
  the agent's commands do not get it;
* ``FROM`` any single image is accepted: commands run with this machine's programs and Horizon's
  Python, not the image's, which is enough for tasks whose tests need Python and the standard tools;
* ``RUN`` is accepted only where it changes nothing Horizon lacks: ``mkdir`` inside the working
  folder (made in the starting tree) and ``pip install`` of distributions Horizon's Python already
  has (at a matching version); shell syntax (``;``, ``|``, ``>``, ``$(...)``) is looked for
  outside quotes only, so ``pip install 'requests>=2,<3'`` is read. CMD, ENTRYPOINT, LABEL, EXPOSE, USER, VOLUME and the like do not
  shape the files and are ignored.

Not honoured there (recorded as ``TerminalBenchTask.refusal``, "needs Docker: ...", with the file
and line; such a task goes to a container, or is refused at load without an engine): any
other ``RUN`` (``apt-get``, ``curl``, ``wget``, ``uv``, a ``pip install`` of something missing),
a second ``FROM`` (multi-stage build) or ``COPY --from``, ``ADD`` of a URL or an archive, a copy
to a path outside the working folder or from outside the build context, a ``.dockerignore`` with
``!`` exceptions, a Dockerfile without ``WORKDIR``, a ``docker-compose.yaml`` with more than the
one service built from the task's Dockerfile (Terminal-Bench 1) or any in ``environment/``
(Harbor; refused in both paths: one container per task), a Harbor task with a prebuilt
``docker_image`` and no Dockerfile (refused in both), WORKDIR ``/``, ``/root`` or ``/tmp``, and a task
whose ``tests/`` has no pytest files (``test_*.py``, ``*_test.py``; its ``test.sh`` is not run there).

The tests' ``test.sh``/``run-tests.sh`` are not run (they install uv or pytest from the network):
the grader (``plugins.coding.terminal_bench``) runs the task's ``test_*.py``/``*_test.py`` files with
Horizon's pytest, in the sandbox, on a copy of the final workspace (its ``.git`` folders kept: the
run's baseline is kept outside the workspace), from a copy of ``tests/`` in the run's scratch folder,
also shown read-only at ``/tests`` (``TEST_DIR=/tests``). Tests that need packages Horizon's
Python lacks fail there.
The agent's time limit (``[agent] timeout_sec``, TB1's ``max_agent_timeout_sec``) caps the
episode's wall-clock limit (``limits.max_wall_s``; ``agent eval --time-limit`` when lower).
"""

from pathlib import Path
from typing import Any

from plugins.coding.terminal_bench.container import CONTAINER_KEY, SANDBOX_VARIABLE, choose_sandbox, prepare_container
from plugins.coding.terminal_bench.dockerfile import Copy, Environment, parse_dockerfile
from plugins.coding.terminal_bench.reward import REWARD_VERSION, is_terminal_bench, setup_text, terminal_bench_reward
from plugins.coding.terminal_bench.start import build_start_tree, start_tree
from plugins.coding.terminal_bench.task import (
    ALIAS_KEY,
    DEFAULT_TEST_TIMEOUT_S,
    KEPT_ENV,
    LAYOUT_TB1,
    LAYOUT_TB2,
    METADATA_KEY,
    TerminalBenchTask,
    detect_layout,
    load_eval_task,
    read_task,
    reference_turns,
    task_metadata,
)


class TerminalBenchFormat:
    """Terminal-Bench 1 and 2 task folders as a ``core.eval.formats.TaskFormat``."""

    name = "terminal-bench"
    description = "a Terminal-Bench task: instruction.md and task.toml, or task.yaml"

    def detect(self, folder: Path) -> bool:
        """Whether ``folder`` has a Terminal-Bench layout (``detect_layout``)."""
        return detect_layout(folder) is not None

    def load(self, folder: Path) -> Any:
        """The folder as a coding ``EvalTask`` (``load_eval_task``). Raises ``UserError`` (needs Docker, ...)."""
        return load_eval_task(folder)

    def reference_turns(self, task: Any) -> list[dict[str, Any]]:
        """Its solution script through ``shell``, then ``finish`` (``reference_turns``). Raises ``UserError``."""
        return reference_turns(task.folder, task.metadata)


#: The entry point ``horizon.task_formats: terminal-bench`` (``pyproject.toml``).
TASK_FORMAT = TerminalBenchFormat()

__all__ = [
    "ALIAS_KEY",
    "CONTAINER_KEY",
    "DEFAULT_TEST_TIMEOUT_S",
    "KEPT_ENV",
    "LAYOUT_TB1",
    "LAYOUT_TB2",
    "METADATA_KEY",
    "REWARD_VERSION",
    "SANDBOX_VARIABLE",
    "TASK_FORMAT",
    "Copy",
    "Environment",
    "TerminalBenchFormat",
    "TerminalBenchTask",
    "build_start_tree",
    "choose_sandbox",
    "detect_layout",
    "is_terminal_bench",
    "load_eval_task",
    "parse_dockerfile",
    "prepare_container",
    "read_task",
    "reference_turns",
    "setup_text",
    "start_tree",
    "task_metadata",
    "terminal_bench_reward",
]
