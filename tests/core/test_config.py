"""Settings: flags over environment over files; bad files named, unknown keys refused."""

import pytest

from core.config import load_settings
from core.errors import ConfigError


def test_precedence_flags_env_files(horizon_home, monkeypatch, tmp_path):
    horizon_home.mkdir(parents=True)
    (horizon_home / "config.toml").write_text('base_url = "http://file/v1"\nmodel = "file-model"\ntemperature = 0.5\n')
    monkeypatch.chdir(tmp_path)
    assert load_settings().model == "file-model"
    monkeypatch.setenv("HORIZON_MODEL", "env-model")
    settings = load_settings()
    assert (settings.base_url, settings.model, settings.temperature) == ("http://file/v1", "env-model", 0.5)
    assert load_settings(model="flag-model", base_url=None).model == "flag-model"


def test_project_file_overrides_user_file(horizon_home, monkeypatch, tmp_path):
    horizon_home.mkdir(parents=True)
    (horizon_home / "config.toml").write_text('model = "user"\n')
    (tmp_path / "horizon.toml").write_text('model = "project"\n')
    monkeypatch.chdir(tmp_path)
    assert load_settings().model == "project"


@pytest.mark.parametrize(
    "text, message",
    [
        ('model = "x\n', "cannot read the config file .*config.toml"),
        ('temprature = 0.1\n', "unknown setting.*temprature"),
        ('temperature = "hot"\n', "temperature: Input should be a valid number"),
    ],
)
def test_bad_files_are_named(horizon_home, monkeypatch, tmp_path, text, message):
    horizon_home.mkdir(parents=True)
    (horizon_home / "config.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=message):
        load_settings()
