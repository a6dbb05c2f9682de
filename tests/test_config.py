"""Settings: defaults, the TOML file, the environment and command-line overrides."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from conftest import write
from mcp_memory.config import CONFIG_FILENAME, ConfigError, load_settings


def config(workspace: Path, text: str) -> Path:
    return write(workspace, CONFIG_FILENAME, text)


# ----- defaults --------------------------------------------------------------------------------
def test_defaults(workspace, settings):
    assert settings.workspace == workspace.resolve()
    assert settings.search.max_results == 6
    assert (settings.chunking.tokens, settings.chunking.overlap) == (400, 80)
    assert settings.embedding.provider == "local"
    assert settings.search.half_life_days == 30
    assert settings.search.mmr_lambda == pytest.approx(0.7)
    assert settings.search.decay_enabled is False and settings.search.mmr_enabled is True
    assert (settings.search.vector_weight, settings.search.text_weight) == (0.3, 0.7)
    assert settings.extra_paths == []
    assert settings.index_dir == workspace.resolve() / ".mcp-memory"
    assert Path(settings.vector_uri).is_relative_to(settings.index_dir)


def test_environment_is_not_read_when_an_empty_environ_is_given(workspace, monkeypatch):
    for key in list(os.environ):
        if key.startswith("MCP_MEMORY_") or key == "OPENAI_API_KEY":
            monkeypatch.delenv(key)
    monkeypatch.setenv("MCP_MEMORY_SEARCH_MAX_RESULTS", "9")
    assert load_settings(workspace, environ={}).search.max_results == 6
    assert load_settings(workspace).search.max_results == 9  # environ=None: the real environment


# ----- the config file -------------------------------------------------------------------------
def test_workspace_config_file_is_read(workspace):
    config(
        workspace,
        """
extra_paths = ["notes", "/srv/shared"]

[search]
max_results = 10
half_life_days = 14.5
decay_enabled = false

[chunking]
tokens = 300
overlap = 50

[embedding]
provider = "none"
""",
    )
    s = load_settings(workspace, environ={})
    assert s.search.max_results == 10
    assert s.search.half_life_days == 14.5
    assert s.search.decay_enabled is False
    assert (s.chunking.tokens, s.chunking.overlap) == (300, 50)
    assert s.embedding.provider == "none"
    assert s.extra_paths == ["notes", "/srv/shared"]
    assert s.search.mmr_lambda == pytest.approx(0.7)  # untouched settings keep their defaults


def test_explicit_config_file_replaces_the_workspace_one(workspace, tmp_path):
    config(workspace, "[search]\nmax_results = 10\nhalf_life_days = 7\n")
    other = write(tmp_path, "elsewhere/custom.toml", "[search]\nmax_results = 12\n")
    s = load_settings(workspace, config_file=other, environ={})
    assert s.search.max_results == 12
    assert s.search.half_life_days == 30  # the workspace file is not read at all


def test_missing_explicit_config_file_is_an_error(workspace, tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match=r"nope\.toml"):
        load_settings(workspace, config_file=missing, environ={})


def test_missing_workspace_config_file_is_fine(workspace):
    assert not (workspace / CONFIG_FILENAME).exists()
    assert load_settings(workspace, environ={}).search.max_results == 6


# ----- precedence ------------------------------------------------------------------------------
def test_precedence_file_then_environment_then_overrides(workspace):
    config(workspace, '[search]\nmax_results = 10\ndecay_enabled = true\n[embedding]\nprovider = "e5"\n')
    environ = {
        "MCP_MEMORY_SEARCH_MAX_RESULTS": "9",
        "MCP_MEMORY_EMBEDDING_PROVIDER": "none",
        "MCP_MEMORY_SEARCH_DECAY_ENABLED": "false",
    }
    assert load_settings(workspace, environ={}).search.max_results == 10
    from_env = load_settings(workspace, environ=environ)
    assert from_env.search.max_results == 9
    assert from_env.embedding.provider == "none"
    assert from_env.search.decay_enabled is False
    flags = load_settings(workspace, overrides={"search.max_results": 3}, environ=environ)
    assert flags.search.max_results == 3
    assert flags.embedding.provider == "none"  # not overridden: the environment still wins


def test_override_of_none_means_flag_not_given(workspace):
    config(workspace, "[search]\nmax_results = 10\n")
    s = load_settings(workspace, overrides={"search.max_results": None}, environ={})
    assert s.search.max_results == 10


@pytest.mark.parametrize(
    "raw,expected",
    [("false", False), ("0", False), ("no", False), ("OFF", False), ("true", True), ("1", True), (" Yes ", True)],
)
def test_environment_booleans(workspace, raw, expected):
    config(workspace, f"[search]\nmmr_enabled = {str(not expected).lower()}\n")
    s = load_settings(workspace, environ={"MCP_MEMORY_SEARCH_MMR_ENABLED": raw})
    assert s.search.mmr_enabled is expected


def test_environment_numbers_and_top_level_keys(workspace, tmp_path):
    environ = {
        "MCP_MEMORY_SEARCH_MMR_LAMBDA": "0.25",
        "MCP_MEMORY_CHUNKING_TOKENS": "200",
        "MCP_MEMORY_CHUNKING_OVERLAP": "20",
        "MCP_MEMORY_EXTRA_PATHS": os.pathsep.join(["notes", "", str(tmp_path / "shared")]),
        "MCP_MEMORY_INDEX_PATH": str(tmp_path / "idx"),
        "MCP_MEMORY_WORKSPACE": "/somewhere/else",  # chooses the workspace, not a setting
        "PATH": "/usr/bin",
    }
    s = load_settings(workspace, environ=environ)
    assert s.search.mmr_lambda == pytest.approx(0.25)
    assert (s.chunking.tokens, s.chunking.overlap) == (200, 20)
    assert s.extra_paths == ["notes", str(tmp_path / "shared")]
    assert s.index_dir == tmp_path / "idx"
    assert s.workspace == workspace.resolve()


def test_environment_extra_paths_replace_the_file_list(workspace):
    config(workspace, 'extra_paths = ["from-file"]\n')
    s = load_settings(workspace, environ={"MCP_MEMORY_EXTRA_PATHS": "a" + os.pathsep + "b"})
    assert s.extra_paths == ["a", "b"]


# ----- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "toml,names",
    [
        ("max_results = 6\n", "max_results"),  # a section key at the top level
        ("colour = 'blue'\n", "colour"),
        ("[search]\nmax_result = 6\n", "search.max_result"),
        ("[searching]\nmax_results = 6\n", "searching"),
        ("[search]\nmax_results = 'six'\n", "search.max_results"),
        ("[search]\nmax_results = 6.5\n", "search.max_results"),
        ("[search]\ndecay_enabled = 1\n", "search.decay_enabled"),
        ("[embedding]\nprovider = 3\n", "embedding.provider"),
        ("extra_paths = [1, 2]\n", "extra_paths"),
        ("search = 5\n", "search"),
        ("[embedding]\nprovider = 'gpt'\n", "provider"),
        ("[chunking]\ntokens = 100\noverlap = 100\n", "overlap"),
        ("[chunking]\ntokens = 100\noverlap = 150\n", "overlap"),
        ("[chunking]\noverlap = -1\n", "overlap"),
        ("[chunking]\ntokens = 8\noverlap = 0\n", "tokens"),
        ("[search]\nmmr_lambda = 1.5\n", "mmr_lambda"),
        ("[search]\nmax_results = 0\n", "max_results"),
        ("[search]\nhalf_life_days = 0\n", "half_life_days"),
        ("[embedding]\nprovider = 'openai'\n", "model"),
    ],
)
def test_bad_file_settings_name_the_setting(workspace, toml, names):
    config(workspace, toml)
    with pytest.raises(ConfigError, match=names):
        load_settings(workspace, environ={})


@pytest.mark.parametrize("toml", ["[search\nmax_results = 6\n", "max_results = = 6\n",
                                  "[search]\nmax_results = 6\nmax_results = 7\n"])
def test_malformed_toml_is_a_config_error_naming_the_file(workspace, toml):
    config(workspace, toml)
    with pytest.raises(ConfigError, match=CONFIG_FILENAME):
        load_settings(workspace, environ={})


def test_non_utf8_config_file_is_a_config_error(workspace):
    (workspace / CONFIG_FILENAME).write_bytes(b"[search]\nmax_results = 6 # caf\xe9\n")
    with pytest.raises(ConfigError):
        load_settings(workspace, environ={})


@pytest.mark.parametrize("value", ['"false"', '"yes"'])
def test_string_for_a_bool_in_toml_is_a_type_error(workspace, value):
    config(workspace, f"[search]\ndecay_enabled = {value}\n")
    with pytest.raises(ConfigError, match=r"search\.decay_enabled"):
        load_settings(workspace, environ={})


@pytest.mark.parametrize(
    "environ,names",
    [
        ({"MCP_MEMORY_SEARCH_MAX_RESULTS": "six"}, "MCP_MEMORY_SEARCH_MAX_RESULTS"),
        ({"MCP_MEMORY_SEARCH_DECAY_ENABLED": "maybe"}, "MCP_MEMORY_SEARCH_DECAY_ENABLED"),
        ({"MCP_MEMORY_SEARCH_MAXRESULTS": "6"}, "search.maxresults"),
        ({"MCP_MEMORY_EMBEDDING_PROVIDER": "bogus"}, "provider"),
        ({"MCP_MEMORY_SEARCH_MMR_LAMBDA": "1.5"}, "mmr_lambda"),
    ],
)
def test_bad_environment_values_name_the_variable_or_setting(workspace, environ, names):
    with pytest.raises(ConfigError, match=names):
        load_settings(workspace, environ=environ)


@pytest.mark.parametrize(
    "overrides,names",
    [
        ({"search.max_results": "six"}, "search.max_results"),
        ({"search.nope": 1}, "search.nope"),
        ({"nope": 1}, "nope"),
        ({"chunking.overlap": 400}, "overlap"),
    ],
)
def test_bad_overrides_name_the_setting(workspace, overrides, names):
    with pytest.raises(ConfigError, match=names):
        load_settings(workspace, overrides=overrides, environ={})


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


# ----- openai api key --------------------------------------------------------------------------
OPENAI = '[embedding]\nprovider = "openai"\nmodel = "text-embedding-3-small"\n'


def test_openai_key_comes_from_openai_api_key(workspace):
    config(workspace, OPENAI)
    s = load_settings(workspace, environ={"OPENAI_API_KEY": "sk-from-env"})
    assert s.embedding.api_key == "sk-from-env"


def test_openai_key_set_explicitly_wins(workspace):
    config(workspace, OPENAI + 'api_key = "sk-from-file"\n')
    assert load_settings(workspace, environ={"OPENAI_API_KEY": "sk-from-env"}).embedding.api_key == "sk-from-file"
    s = load_settings(
        workspace, environ={"OPENAI_API_KEY": "sk-from-env", "MCP_MEMORY_EMBEDDING_API_KEY": "sk-mcp"}
    )
    assert s.embedding.api_key == "sk-mcp"


def test_openai_key_not_copied_for_other_providers(workspace):
    s = load_settings(workspace, environ={"OPENAI_API_KEY": "sk-from-env"})
    assert s.embedding.provider == "local" and s.embedding.api_key == ""


# ----- index location --------------------------------------------------------------------------
def test_index_path_folder(workspace, tmp_path):
    folder = tmp_path / "index-elsewhere"
    config(workspace, f"index_path = {str(folder)!r}\n")
    s = load_settings(workspace, environ={})
    assert s.index_dir == folder
    assert Path(s.vector_uri).is_relative_to(folder)
    assert not Path(s.vector_uri).is_relative_to(workspace)


def test_index_path_remote_uri_shares_vectors_and_keeps_the_index_in_the_workspace(workspace):
    s = load_settings(workspace, overrides={"index_path": "s3://bucket/x"}, environ={})
    assert s.shared_vectors_uri == "s3://bucket/x"
    assert s.index_dir == workspace.resolve() / ".mcp-memory"
    assert Path(s.vector_uri).is_relative_to(s.index_dir)  # the chunk table stays on this machine


def test_storage_options_from_the_file_and_the_environment(workspace):
    config(workspace, 'index_path = "s3://team-memory/vectors"\n'
                      "[storage_options]\naws_endpoint = \"http://127.0.0.1:9000\"\nallow_http = true\n"
                      "[storage]\ntimeout_seconds = 3\n")
    s = load_settings(workspace, environ={"MCP_MEMORY_STORAGE_OPTIONS_AWS_REGION": "eu-west-1"})
    assert s.storage_options == {"aws_endpoint": "http://127.0.0.1:9000", "allow_http": "true",
                                 "aws_region": "eu-west-1"}
    assert s.storage.timeout_seconds == 3.0


@pytest.mark.parametrize("text, message", [
    ("storage_options = 3\n", "[storage_options] must be a table"),
    ("[storage_options]\nkeys = [1]\n", "storage_options.keys must be a string"),
    ("[storage]\ntimeout_seconds = 0\n", "storage.timeout_seconds must be positive"),
    ('index_path = "s3://"\n', "names no bucket"),
    ('index_path = "ftp://host/x"\n', "a folder or an object-store URI (s3://, s3+ddb://, gs://"),
])
def test_bad_storage_settings_are_named(workspace, text, message):
    config(workspace, text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_settings(workspace, environ={})
