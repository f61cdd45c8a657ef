"""Settings: command-line flags over environment variables over config files over defaults.

Config files (TOML, later ones win): ``$HORIZON_HOME/config.toml`` (default ``~/.horizon``), then
``./horizon.toml`` in the current folder. Environment variables are the field names in capitals
with the prefix ``HORIZON_`` (``HORIZON_BASE_URL``, ``HORIZON_MODEL``, ``HORIZON_API_KEY``, ...).

Trust: ``./horizon.toml`` belongs to whatever folder the command runs in, often a repository
someone else wrote. Until the user trusts that file (``agent trust PATH``, ``core.trust``: its
path and SHA-256, so a changed file is untrusted again), only the settings of ``UNTRUSTED_OK``
apply from it (limits, sampling, the tool format: nothing that sends data somewhere new or starts
a program); every other one (``base_url``, ``api_key``, ``model``, the fallback endpoint, the
prices, ``mcp_servers``, and any setting added later unless it is listed there) is ignored, with
one line on stderr naming the file, the keys and the command that trusts it. The user's own
``$HORIZON_HOME/config.toml``, the environment and flags are trusted. Each setting's origin is kept
(``Settings.source_of``: a flag, a variable, a file or the default), e.g. for the run banner's
"model server ... (from ...)".

Example ``horizon.toml``::

    base_url = "http://localhost:8000/v1"
    model = "Qwen/Qwen3-8B"
    input_per_mtok = 13.0
    fallback_base_url = "http://gpu-2:8000/v1"     # used when the primary fails past its retries or is over quota
    fallback_model = "Qwen/Qwen3-8B"
    vision = true                                  # the served model sees images (a vision-language model)

    [model_servers.gpu2]                           # a named server: agent server's requests choose it by name
    base_url = "http://gpu-2:8000/v1"
    model = "Qwen/Qwen3-32B"
    api_key_env = "GPU2_API_KEY"                   # the variable holding its key (none: no key is sent)

Prices: the default table is a current large model's (per million tokens: cached input 1.3,
uncached input 13.0, output 68.0), so a run's cost shows what prefix caching saves; set your
own. The embedded model runs in-process and always costs 0 (``Settings.pricing_for``).
"""

from __future__ import annotations

import errno
import os
import tomllib
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from core.errors import ConfigError, UserError
from core.paths import horizon_home, runs_dir  # noqa: F401 - re-exported: their owner is core.paths (no pydantic-settings import)
from core.state import Pricing
from core.trust import TrustState, check_trust, warn_untrusted

#: The settings an untrusted config file (``./horizon.toml`` before ``agent trust``) may still set:
#: none sends data to a new place, starts a program or hides what a run costs. Every other setting
#: (and any new one not added here) needs a trusted file, the environment or a flag.
UNTRUSTED_OK = frozenset({
    "temperature", "max_completion_tokens", "timeout_s", "tool_format", "vision", "critic",
    "keep_checkpoints", "retry_max_attempts", "retry_max_total_s",
})  # fmt: skip


def make_data_folder(path: Path) -> Path:
    """Make a folder of Horizon's data (``runs_dir()``, ``evals``, ...) with its parents, and check
    that Horizon can write in it.

    Each folder it makes (``$HORIZON_HOME`` itself when missing, ``runs/``, ``service/``, ...) is
    mode 0700: run stores, workspace copies and the service's queue are the user's business, not
    every local user's. A folder that exists already keeps its mode (a home you made yourself is
    yours to set; ``chmod 700 ~/.horizon`` closes one made by an older Horizon).

    Args:
        path: the folder, normally under ``horizon_home()``.

    Returns:
        ``path``.

    Raises:
        UserError: it cannot be made or written (no permission, a read-only file system, a file in
            the way, a full disk): one line naming the folder, the operating system's reason, and
            what to do (fix the permissions or point ``HORIZON_HOME`` elsewhere).
    """
    try:
        missing = []
        folder = path
        while not os.path.lexists(folder) and folder != folder.parent:
            missing.append(folder)
            folder = folder.parent
        for folder in reversed(missing):  # mode 0700: only this user reads runs, workspaces, the queue (umask aside)
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:
                pass  # another process made it in between
        if not path.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a folder")
        if not os.access(path, os.W_OK | os.X_OK):  # EROFS counts even for root
            raise PermissionError(errno.EACCES, "not writable")
    except OSError as exc:
        raise UserError(_unwritable(path, exc)) from None
    return path


def _unwritable(path: Path, exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        reason += ": a file stands where a folder should be"
    home = horizon_home()
    if os.environ.get("HORIZON_HOME"):
        fix = f"make it writable, or set HORIZON_HOME to a folder you can write (it is {home})"
    else:
        fix = f"make {home} yours (e.g. sudo chown -R $USER {home}), or set HORIZON_HOME to a folder you can write"
    return f"cannot write Horizon's data folder {path} ({reason}); {fix}"


class ModelServer(BaseModel):
    """A named model server (``[model_servers.NAME]``): what a request to ``agent server`` may
    choose instead of a URL (``core.service.bounds``).

    Attributes:
        base_url: its OpenAI-compatible root (``http://host:port/v1``).
        model: the served model's name (a request may name another on the same server).
        api_key_env: the environment variable holding its key; None: no key is sent to it (never
            ``api_key``, which is the default server's).
        tool_format: ``native`` or ``text`` (None: the settings' ``tool_format``).
    """

    model_config = {"extra": "forbid"}

    base_url: str = Field(min_length=1)
    model: str = Field(min_length=1)
    api_key_env: str | None = None
    tool_format: Literal["native", "text"] | None = None


class Settings(BaseSettings):
    """User settings for the model and its price.

    Made by ``load_settings``, each setting remembers where it came from (``source_of``,
    ``sources``); from an untrusted ``./horizon.toml`` only ``UNTRUSTED_OK`` settings apply.

    Attributes:
        base_url: an OpenAI-compatible server's root (``http://host:port/v1``); unset means the
            embedded model.
        model: the served model's name (required with ``base_url``).
        api_key: bearer token for the server (local servers ignore it).
        temperature: sampling temperature.
        max_completion_tokens: completion tokens per model call.
        timeout_s: seconds to wait for one model call.
        input_per_mtok, cached_input_per_mtok, output_per_mtok: prices per million tokens of
            uncached prompt, cached prompt and completion, in the user's currency (default
            13.0 / 1.3 / 68.0, see the module docstring).
        fallback_base_url, fallback_model, fallback_api_key: a second OpenAI-compatible
            endpoint (router setting), used when the primary fails past its retry budget or
            answers that its account is over quota; the model defaults to ``model``.
        tool_format: ``native`` (the server's tool calling) or ``text`` (``<tool_call>`` blocks
            in the reply, for servers without tool calling; ``core.policy.text_actions``).
        vision: the served model sees images: a tool's images (the 3D plugin's renders) go to
            the server as ``image_url`` parts, the latest two per request
            (``core.policy.images``); False (the default, and always for the embedded model):
            the model reads the observation's text, which describes the image.
        critic: after each tool call that returns an image, one more model call compares it
            (or its description) with the task and its verdict is appended to the observation
            (``core.critic``); off by default, and only for a model server (``base_url``).
        keep_checkpoints: LangGraph checkpoints kept per run (older ones are pruned).
        retry_max_attempts, retry_max_total_s: a model server's faults are retried with
            backoff until either budget is spent; then the run stops, resumably.
        mcp_servers: external MCP servers whose tools join every run's tools (``[[mcp_servers]]``
            tables: ``name``, ``command`` or ``url``, ``env``, ``timeout_s``, ``start_timeout_s``, ``tools``; checked by
            ``core.mcp.client.parse_servers`` when a run starts).
        model_servers: named model servers (``[model_servers.NAME]`` tables, ``ModelServer``)
            that a request to ``agent server`` may choose by name; the default one is ``base_url``.
    """

    model_config = SettingsConfigDict(env_prefix="HORIZON_", extra="ignore")

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    max_completion_tokens: int = 2048
    timeout_s: float = 300.0
    input_per_mtok: float = Field(13.0, ge=0)
    cached_input_per_mtok: float = Field(1.3, ge=0)
    output_per_mtok: float = Field(68.0, ge=0)
    fallback_base_url: str | None = None
    fallback_model: str | None = None
    fallback_api_key: str | None = None
    tool_format: Literal["native", "text"] = "native"
    vision: bool = False
    critic: bool = False
    keep_checkpoints: int = Field(20, ge=1)
    retry_max_attempts: int = Field(6, ge=1)
    retry_max_total_s: float = Field(120.0, gt=0)
    mcp_servers: list[dict[str, Any]] = []
    model_servers: dict[str, ModelServer] = {}

    _sources: dict[str, str] = PrivateAttr(default_factory=dict)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        layers = _LAYERS.get()
        if layers is None:  # Settings() made directly: the same files, the same trust rule, no warning
            layers = read_config_layers()
        # highest priority first: flags, the environment, then the files, the last one read first
        return (init_settings, env_settings, *(_LayerSource(settings_cls, layer.applied) for layer in reversed(layers)))

    @property
    def sources(self) -> dict[str, str]:
        """Where each setting came from (``source_of``), for every field; empty for a ``Settings``
        made directly rather than by ``load_settings``."""
        return dict(self._sources)

    def source_of(self, name: str) -> str:
        """Where setting ``name`` came from, for messages: ``"--base-url"`` (a flag, or what
        ``load_settings``'s ``overrides_from`` says), ``"HORIZON_BASE_URL"`` (the environment),
        a config file's path, or ``"default"``; ``"unknown"`` for a ``Settings`` made directly."""
        return self._sources.get(name, "unknown")

    @property
    def auto_policy(self) -> str:
        """What ``--policy auto`` means under these settings, decided here only: ``openai`` when a
        model server is set (``base_url``, from a flag, the environment or a config file), else
        ``embedded`` (the model that runs in-process)."""
        return "openai" if self.base_url else "embedded"

    @property
    def pricing(self) -> Pricing:
        """The prices of the policy these settings choose by default (``auto_policy``): the
        configured table for a model server, else zero (the embedded model runs in-process)."""
        return self.pricing_for(self.auto_policy)

    def pricing_for(self, policy_kind: str) -> Pricing:
        """Prices for a policy kind (``openai``, ``embedded``, ``scripted``): the configured
        table for a model server, zero for the embedded model and for scripts (no model runs)."""
        if policy_kind != "openai":
            return Pricing()
        return Pricing(
            input_per_mtok=self.input_per_mtok,
            cached_input_per_mtok=self.cached_input_per_mtok,
            output_per_mtok=self.output_per_mtok,
        )


def config_files() -> list[Path]:
    """The config files read, lowest priority first (missing ones are skipped; one whose folder
    cannot be read is kept, so that ``load_settings`` says so instead of a traceback)."""
    return [f for f in (user_config_file(), Path("horizon.toml")) if _present(f)]


def user_config_file() -> Path:
    """The user's own config file, ``$HORIZON_HOME/config.toml``: always trusted."""
    return horizon_home() / "config.toml"


def _present(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # e.g. HORIZON_HOME without read permission: reading it fails with the reason
        return True


@dataclass(frozen=True)
class ConfigLayer:
    """One config file as read for these settings.

    Attributes:
        path: the file (as ``config_files`` names it).
        applied: the settings taken from it.
        ignored: the keys it set that were not taken (an untrusted file's, ``UNTRUSTED_OK``).
        trust: the file's trust state; None for the user's own ``config.toml``.
    """

    path: Path
    applied: dict[str, Any]
    ignored: list[str] = field(default_factory=list)
    trust: TrustState | None = None


def read_config_layers() -> list[ConfigLayer]:
    """Read each config file once (lowest priority first) and apply the trust rule.

    Raises:
        ConfigError: a file cannot be read, is not TOML, or has keys Settings does not know (a
            typo is not ignored), trusted or not.
    """
    layers = []
    own = user_config_file()
    for path in config_files():
        try:
            content = path.read_bytes()
            data = tomllib.loads(content.decode("utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read the config file {path}: {exc}") from None
        unknown = sorted(set(data) - set(Settings.model_fields))
        if unknown:
            raise ConfigError(f"{path}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(Settings.model_fields)}")
        if path == own:
            layers.append(ConfigLayer(path, data))
            continue
        state = check_trust(path, content)
        if state.trusted:
            layers.append(ConfigLayer(path, data, trust=state))
            continue
        kept = {k: v for k, v in data.items() if k in UNTRUSTED_OK}
        layers.append(ConfigLayer(path, kept, sorted(set(data) - set(kept)), state))
    return layers


class _LayerSource(PydanticBaseSettingsSource):
    """One config file's settings (``ConfigLayer.applied``) as a pydantic-settings source."""

    def __init__(self, settings_cls: type[BaseSettings], data: dict[str, Any]) -> None:
        super().__init__(settings_cls)
        self._data = data

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self._data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self._data)


_LAYERS: ContextVar[list[ConfigLayer] | None] = ContextVar("horizon_config_layers", default=None)


def load_settings(*, overrides_from: str = "flag", **overrides: Any) -> Settings:
    """Load settings; ``overrides`` (from flags) win, ``None`` values are ignored.

    Settings an untrusted ``./horizon.toml`` sets outside ``UNTRUSTED_OK`` are ignored, with one
    line on stderr (once per process for each file and content) naming the file, the keys and
    ``agent trust PATH``. Each setting's origin is recorded (``Settings.source_of``).

    Args:
        overrides_from: what the overrides are, for ``source_of``: ``"flag"`` (``--base-url``),
            or a description such as ``"the request"`` (``"the request's base_url"``).
        overrides: field values that win over everything else.

    Raises:
        ConfigError: a file does not parse or has an unknown key, or a file or variable holds
            an invalid value (the file and the field are named).
    """
    layers = read_config_layers()
    for layer in layers:
        if layer.ignored and layer.trust is not None:
            warn_untrusted(layer.trust, layer.ignored)
    given = {k: v for k, v in overrides.items() if v is not None}
    token = _LAYERS.set(layers)
    try:
        settings = Settings(**given)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        where = ", ".join(map(str, config_files())) or "no config file"
        raise ConfigError(f"invalid settings ({where}, HORIZON_* variables, flags): {problems}") from None
    finally:
        _LAYERS.reset(token)
    settings._sources = _sources(given, layers, overrides_from)
    return settings


def _sources(given: dict[str, Any], layers: list[ConfigLayer], overrides_from: str) -> dict[str, str]:
    """Each field's origin, by the priority ``Settings`` applies (flags, environment, files, default)."""
    env = {k.upper() for k in os.environ}
    found = {}
    for name in Settings.model_fields:
        variable = f"HORIZON_{name.upper()}"
        if name in given:
            found[name] = f"--{name.replace('_', '-')}" if overrides_from == "flag" else f"{overrides_from}'s {name}"
        elif variable in env:
            found[name] = variable
        else:
            found[name] = next((str(layer.path.absolute()) for layer in reversed(layers) if name in layer.applied), "default")
    return found
