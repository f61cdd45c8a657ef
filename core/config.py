"""Settings: command-line flags over environment variables over config files over defaults.

Config files (TOML, later ones win): ``$HORIZON_HOME/config.toml`` (default ``~/.horizon``), then
``./horizon.toml`` in the current folder. Environment variables are the field names in capitals
with the prefix ``HORIZON_`` (``HORIZON_BASE_URL``, ``HORIZON_MODEL``, ``HORIZON_API_KEY``, ...).

Example ``horizon.toml``::

    base_url = "http://localhost:8000/v1"
    model = "Qwen/Qwen3-8B"
    input_per_mtok = 0.0
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

from core.errors import ConfigError
from core.state import Pricing


def horizon_home() -> Path:
    """Horizon's data folder: ``$HORIZON_HOME``, else ``~/.horizon``."""
    return Path(os.environ.get("HORIZON_HOME") or Path.home() / ".horizon").expanduser()


class Settings(BaseSettings):
    """User settings for the model and its price.

    Attributes:
        base_url: an OpenAI-compatible server's root (``http://host:port/v1``); unset means the
            embedded model.
        model: the served model's name (required with ``base_url``).
        api_key: bearer token for the server (local servers ignore it).
        temperature: sampling temperature.
        max_completion_tokens: completion tokens per model call.
        timeout_s: seconds to wait for one model call.
        input_per_mtok, cached_input_per_mtok, output_per_mtok: prices per million tokens.
        keep_checkpoints: LangGraph checkpoints kept per run (older ones are pruned).
        retry_max_attempts, retry_max_total_s: a model server's faults are retried with
            backoff until either budget is spent; then the run stops, resumably.
    """

    model_config = SettingsConfigDict(env_prefix="HORIZON_", extra="ignore")

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    max_completion_tokens: int = 2048
    timeout_s: float = 300.0
    input_per_mtok: float = 0.0
    cached_input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0
    keep_checkpoints: int = Field(20, ge=1)
    retry_max_attempts: int = Field(6, ge=1)
    retry_max_total_s: float = Field(120.0, gt=0)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=config_files()))

    @property
    def pricing(self) -> Pricing:
        """The configured prices as a ``Pricing``."""
        return Pricing(
            input_per_mtok=self.input_per_mtok,
            cached_input_per_mtok=self.cached_input_per_mtok,
            output_per_mtok=self.output_per_mtok,
        )


def config_files() -> list[Path]:
    """The config files read, lowest priority first (missing ones are skipped)."""
    return [f for f in (horizon_home() / "config.toml", Path("horizon.toml")) if f.is_file()]


def _check_file(path: Path) -> None:
    """Fail on TOML that does not parse or on keys Settings does not know (a typo is not ignored)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc}") from None
    unknown = sorted(set(data) - set(Settings.model_fields))
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(Settings.model_fields)}")


def load_settings(**overrides: Any) -> Settings:
    """Load settings; ``overrides`` (from flags) win, ``None`` values are ignored.

    Raises:
        ConfigError: a file does not parse or has an unknown key, or a file or variable holds
            an invalid value (the file and the field are named).
    """
    for path in config_files():
        _check_file(path)
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        where = ", ".join(map(str, config_files())) or "no config file"
        raise ConfigError(f"invalid settings ({where}, HORIZON_* variables, flags): {problems}") from None
