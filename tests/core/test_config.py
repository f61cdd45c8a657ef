"""Settings: flags over environment over files; bad files named, unknown keys refused."""

import pytest

from core.config import UNTRUSTED_OK, Settings, load_settings
from core.errors import ConfigError
from core.trust import trust


def test_precedence_flags_env_files(horizon_home, monkeypatch, tmp_path):
    horizon_home.mkdir(parents=True)
    (horizon_home / "config.toml").write_text('base_url = "http://file/v1"\nmodel = "file-model"\ntemperature = 0.5\n')
    monkeypatch.chdir(tmp_path)
    assert load_settings().model == "file-model"
    monkeypatch.setenv("HORIZON_MODEL", "env-model")
    settings = load_settings()
    assert (settings.base_url, settings.model, settings.temperature) == ("http://file/v1", "env-model", 0.5)
    assert load_settings(model="flag-model", base_url=None).model == "flag-model"


def test_project_file_overrides_user_file_once_trusted(horizon_home, monkeypatch, tmp_path, capsys):
    horizon_home.mkdir(parents=True)
    (horizon_home / "config.toml").write_text('model = "user"\ntemperature = 0.1\n')
    (tmp_path / "horizon.toml").write_text('model = "project"\ntemperature = 0.7\n')
    monkeypatch.chdir(tmp_path)
    untrusted = load_settings()
    # a harmless setting applies untrusted; the model does not, and the file is named with the fix
    assert (untrusted.model, untrusted.temperature) == ("user", 0.7)
    assert untrusted.source_of("model") == str(horizon_home / "config.toml")
    assert untrusted.source_of("temperature") == str(tmp_path / "horizon.toml")
    warning = capsys.readouterr().err
    assert warning.count("\n") == 1 and "ignoring model from" in warning and f"agent trust {tmp_path / 'horizon.toml'}" in warning
    trust(tmp_path / "horizon.toml")
    assert load_settings().model == "project"
    assert capsys.readouterr().err == ""


def test_sources_name_flags_variables_files_and_defaults(horizon_home, monkeypatch, tmp_path):
    horizon_home.mkdir(parents=True)
    (horizon_home / "config.toml").write_text('base_url = "http://file/v1"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HORIZON_MODEL", "env-model")
    settings = load_settings(api_key="k")
    assert settings.source_of("base_url") == str(horizon_home / "config.toml")
    assert settings.source_of("model") == "HORIZON_MODEL"
    assert settings.source_of("api_key") == "--api-key"
    assert settings.source_of("temperature") == "default"
    assert load_settings(overrides_from="the request", model="m").source_of("model") == "the request's model"


def test_only_harmless_settings_apply_untrusted():
    # what an untrusted file may set: nothing that sends data, starts programs or hides cost
    assert UNTRUSTED_OK <= set(Settings.model_fields)
    for name in ("base_url", "api_key", "model", "fallback_base_url", "fallback_api_key", "fallback_model",
                 "mcp_servers", "input_per_mtok", "cached_input_per_mtok", "output_per_mtok"):  # fmt: skip
        assert name not in UNTRUSTED_OK


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
