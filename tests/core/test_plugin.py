"""Plugin discovery through the horizon.plugins entry-point group, as a third party would register."""

import sys

import pytest

from core.errors import PluginNotFound, UserError
from core.plugin import Plugin, Task, discover, load_plugin
from core.policy import ScriptedPolicy
from core.runner import Run
from core.state import Limits, Pricing

THIRD_PARTY = '''
from pydantic import BaseModel
from core.api import RewardResult, tool

class Args(BaseModel):
    text: str

@tool
def echo(args: Args, ctx):
    """Repeat the text."""
    return args.text

class EchoPlugin:
    name = "echo"
    description = "repeats things"
    def system_prompt(self, task): return "echo"
    def tools(self): return [echo]
    def setup(self, task, ctx): return ""
    def reward(self, task, trajectory): return RewardResult(reward=1.0, correct=True, version="echo/1", summary="ok")
'''


@pytest.fixture
def third_party(tmp_path, monkeypatch):
    """An installed distribution (a dist-info folder on sys.path) that registers plugin "echo"."""
    (tmp_path / "echo_plugin.py").write_text(THIRD_PARTY)
    info = tmp_path / "horizon_echo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: horizon-echo\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[horizon.plugins]\necho = echo_plugin:EchoPlugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("echo_plugin", None)


def test_builtin_coding_plugin_is_discovered_like_any_other():
    assert "coding" in discover()
    plugin = load_plugin("coding")
    assert isinstance(plugin, Plugin)
    assert [t.name for t in plugin.tools()] == [
        "search_code", "find_symbol", "repo_map", "view_file", "edit_file", "apply_patch", "run_tests", "static_check", "shell", "finish"]


def test_third_party_plugin_loads_without_touching_horizon(third_party):
    assert "echo" in discover()
    plugin = load_plugin("echo")
    assert plugin.name == "echo" and plugin.tools()[0].name == "echo"


def test_horizon_plugins_restricts_loading(third_party, monkeypatch):
    monkeypatch.setenv("HORIZON_PLUGINS", "echo")
    assert list(discover()) == ["echo"]
    with pytest.raises(PluginNotFound, match="installed: echo"):
        load_plugin("coding")


def test_a_task_the_plugin_refuses_makes_no_run(notes_plugin, tmp_path):
    """``validate`` runs before a run is created: the refusal reaches the user and no run folder is left."""
    (tmp_path / "folder").mkdir()
    task = Task(plugin=notes_plugin, instruction="x", repo=tmp_path / "folder", metadata={"file": "../elsewhere.txt"})
    finish = [{"tool": "finish", "arguments": {"summary": "done"}}]
    with pytest.raises(UserError, match="'../elsewhere.txt': the answer file must be a path inside the task's folder"):
        Run.start(task, ScriptedPolicy(finish), policy_config={"kind": "scripted"}, limits=Limits(), pricing=Pricing(), home=tmp_path / "home")
    runs = tmp_path / "home" / "runs"
    assert not runs.exists() or not any(runs.iterdir())


def test_unknown_plugin_names_the_installed_ones():
    with pytest.raises(PluginNotFound, match="no plugin named 'nope'.*coding"):
        load_plugin("nope")


def test_heavy_episodes_come_from_the_plugins_own_declaration(third_party):
    from core.plugin import heavy_episodes

    assert heavy_episodes({"threed", "coding", "echo", "not-installed"}) == {"threed"}


COMMANDS = '''
import typer

app = typer.Typer(no_args_is_help=True, help="echo utilities")

@app.command("say")
def say(text: str) -> None:
    """Print TEXT."""
    typer.echo(f"echo says {text}")
'''


def test_a_third_party_adds_cli_commands_and_a_broken_one_says_why(tmp_path):
    """A distribution registers ``agent echo say`` in ``horizon.commands``; another registers a
    module that does not import: its command says why, and every other command still works."""
    import subprocess

    (tmp_path / "echo_commands.py").write_text(COMMANDS)
    info = tmp_path / "horizon_echo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: horizon-echo\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[horizon.commands]\necho = echo_commands:app\nbroken = no_such_module:app\n"
                                           "show = echo_commands:app\nrun = echo_commands:app\n")  # may not replace Horizon's own
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HORIZON_HOME": str(tmp_path / "home")}

    def agent(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", "from core.cli import main; main()", *args], capture_output=True, text=True,
                              env=env, timeout=120, check=False)  # fmt: skip

    said = agent("echo", "say", "hi")
    assert said.returncode == 0 and said.stdout.strip() == "echo says hi", said.stderr
    broken = agent("broken")
    assert broken.returncode != 0 and "'broken' commands (no_such_module:app) could not be loaded: ModuleNotFoundError" in broken.stdout + broken.stderr
    assert agent("threed", "--help").returncode == 0  # the built-in plugin's commands come the same way
    shown = agent("show", "no-such-run")
    assert "no run 'no-such-run'" in shown.stdout + shown.stderr  # Horizon's own show, not the package's app


def edit_echo(folder, old: str, new: str) -> None:
    """Replace the first ``old`` in the third-party echo plugin's source (which must hold it) with ``new``."""
    source = folder / "echo_plugin.py"
    assert old in source.read_text()
    source.write_text(source.read_text().replace(old, new, 1))


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (("    def setup(self, task, ctx): return \"\"\n", "    def setup(self, task): return \"\"\n"),
         "plugin 'echo' (echo_plugin:EchoPlugin): setup: cannot be called as setup(task, ctx)"),
        (("    def reward(self, task, trajectory): return", "    def rewards(self, task, trajectory): return"),
         "plugin 'echo' (echo_plugin:EchoPlugin): reward: missing: Horizon calls reward(task, trajectory)"),
        (("    def tools(self): return [echo]\n", "    def tools(self): return [echo, echo]\n"),
         "plugin 'echo' (echo_plugin:EchoPlugin): tools: two tools share a name: ['echo']"),
        (("    def tools(self): return [echo]\n", "    def tools(self): return ['echo']\n"),
         "tools: must return a list of core.api.Tool"),
        (('    description = "repeats things"\n', '    description = "repeats things"\n    teardown = 3\n'),
         "plugin 'echo' (echo_plugin:EchoPlugin): teardown: is a int, not a method"),
        (('    description = "repeats things"\n', '    description = "repeats things"\n    heavy_episodes = "yes"\n'),
         "heavy_episodes: not a bool"),
    ],
)  # fmt: skip
def test_a_plugin_that_breaks_the_contract_is_refused_when_it_loads(third_party, tmp_path, change, said):
    """The error names the plugin, the hook and what is wrong, before any run starts."""
    edit_echo(tmp_path, *change)
    with pytest.raises(TypeError) as caught:
        load_plugin("echo")
    assert said in str(caught.value)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (("class EchoPlugin:", "class EchoPlugin(:"), "the echo plugin (echo_plugin:EchoPlugin) cannot load: SyntaxError"),
        (("class EchoPlugin:", "import reqeusts\nclass EchoPlugin:"),
         "horizon-echo imports reqeusts, which is not installed: install it, or report it to the horizon-echo package"),
        (('    name = "echo"\n', '    name = "echo"\n    def __init__(self): raise RuntimeError("needs ECHO_KEY")\n'),
         "the echo plugin (echo_plugin:EchoPlugin) raised while starting: RuntimeError: needs ECHO_KEY; report it to the horizon-echo package"),
        (("    def tools(self): return [echo]\n", "    def tools(self): raise RuntimeError('no tools today')\n"),
         "plugin 'echo' (echo_plugin:EchoPlugin): tools: raised RuntimeError: no tools today"),
    ],
)  # fmt: skip
def test_a_plugin_whose_code_fails_says_it_is_the_plugins_and_the_others_still_load(third_party, tmp_path, change, said):
    from core.errors import UserError

    edit_echo(tmp_path, *change)
    with pytest.raises(UserError) as caught:
        load_plugin("echo")
    assert said in str(caught.value)
    assert load_plugin("coding").name == "coding"


def test_agent_plugins_lists_a_plugin_without_a_manifest_by_loading_it(notes_plugin):
    """The notes plugin is a plain module (no package to hold a manifest): ``describe_plugin``
    loads it for its description and tools; the version is its distribution's."""
    from typer.testing import CliRunner

    from core.cli import app
    from core.plugin import describe_plugin, discover, load_plugin

    info = describe_plugin("notes", discover()["notes"])
    plugin = load_plugin("notes")
    assert (info.version, info.description, info.tools, info.problem, info.from_manifest) == (
        "1.0", plugin.description, tuple(t.name for t in plugin.tools()), None, False)
    listed = CliRunner().invoke(app, ["plugins"], env={"COLUMNS": "200"}).output
    assert "notes" in listed and "1.0" in listed and ", ".join(info.tools) in listed, listed
