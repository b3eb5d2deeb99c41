"""The `hanzo-engine` command line, failure paths only: none of these tests starts a server."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from hanzo_engine import MEILISEARCH_COMPAT_VERSION, __version__
from hanzo_engine.cli import HumanFormatter, JsonFormatter, admin, main, serve
from hanzo_engine.server.options import OPTIONS


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No MEILI_* variable from the outside, and a cwd without config.toml."""
    import os

    for name in list(os.environ):
        if name.startswith("MEILI_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def run(args: list[str], env: dict[str, str] | None = None) -> click.testing.Result:
    return CliRunner().invoke(main, args, env=env, prog_name="hanzo-engine")


PRODUCTION_NO_KEY = (
    "You must provide a master key to secure your instance in a production environment. It can be specified via "
    "the MEILI_MASTER_KEY environment variable or the --master-key launch option."
)


@pytest.mark.parametrize("prefix", [[], ["serve"]])
def test_production_without_master_key_exits_1(prefix: list[str]) -> None:
    result = run([*prefix, "--env", "production"])
    assert result.exit_code == 1
    assert PRODUCTION_NO_KEY in result.stderr
    assert ">> --master-key " in result.stderr
    assert result.stdout == ""


def test_production_from_the_environment_without_key_exits_1() -> None:
    result = run([], env={"MEILI_ENV": "production"})
    assert result.exit_code == 1
    assert PRODUCTION_NO_KEY in result.stderr


def test_production_with_short_key_exits_1() -> None:
    result = run(["serve", "--env", "production", "--master-key", "tooshort"])
    assert result.exit_code == 1
    assert (
        "The master key must be at least 16 bytes in a production environment. The provided key is only 8 bytes."
        in result.stderr
    )


def test_flags_before_serve_are_kept() -> None:
    result = run(["--env", "production", "serve", "--master-key", "tooshort"])
    assert result.exit_code == 1
    assert "The provided key is only 8 bytes." in result.stderr


def test_cli_flag_beats_environment() -> None:
    # The environment says development, the flag says production: the flag wins and the check fails.
    result = run(["--env", "production"], env={"MEILI_ENV": "development"})
    assert result.exit_code == 1
    assert PRODUCTION_NO_KEY in result.stderr


def test_bare_schedule_snapshot_does_not_swallow_the_next_flag() -> None:
    # Were `--env` taken as the interval, this would be an invalid-value error instead.
    result = run(["--schedule-snapshot", "--env", "production"])
    assert result.exit_code == 1
    assert PRODUCTION_NO_KEY in result.stderr


def test_config_file_with_unknown_key_exits_1(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('db_path = "x"\nunknown_key = true\n', encoding="utf-8")
    result = run([])
    assert result.exit_code == 1
    assert "unknown field `unknown_key`" in result.stderr


def test_missing_named_config_file_exits_1() -> None:
    result = run(["--config-file-path", "nope.toml"])
    assert result.exit_code == 1
    assert 'unable to open or read the "nope.toml" configuration file' in result.stderr


def test_config_file_naming_a_config_file_exits_1(tmp_path: Path) -> None:
    (tmp_path / "custom.toml").write_text('config_file_path = "x.toml"\n', encoding="utf-8")
    result = run(["serve"], env={"MEILI_CONFIG_FILE_PATH": "custom.toml"})
    assert result.exit_code == 1
    assert "`config_file_path` is not supported in the configuration file" in result.stderr


def test_production_from_the_config_file_without_key_exits_1(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('env = "production"\n', encoding="utf-8")
    result = run([])
    assert result.exit_code == 1
    assert PRODUCTION_NO_KEY in result.stderr


def test_invalid_value_exits_1() -> None:
    result = run(["--http-payload-size-limit", "lots"])
    assert result.exit_code == 1
    assert "invalid value 'lots' for '--http-payload-size-limit <HTTP_PAYLOAD_SIZE_LIMIT>'" in result.stderr


def test_every_option_is_generated_once_on_both_commands() -> None:
    for command in (main, serve):
        flags = [opt for param in command.params for opt in param.opts if opt.startswith("--")]
        for spec in OPTIONS:
            assert flags.count(spec.flag) == 1, (command.name, spec.flag)
        # Click itself must never read the environment: load_options owns precedence.
        assert all(getattr(param, "envvar", None) is None for param in command.params)


def test_help_lists_env_variables() -> None:
    result = run(["serve", "--help"])
    assert result.exit_code == 0
    assert "--schedule-snapshot" in result.stdout
    assert "MEILI_EXPERIMENTAL_SEARCH_QUEUE_SIZE" in result.stdout


def test_version() -> None:
    result = run(["--version"])
    assert result.exit_code == 0
    assert (
        result.stdout.strip() == f"hanzo-engine {__version__} (Meilisearch API {MEILISEARCH_COMPAT_VERSION})"
    )


def test_admin_group_is_registered_and_rejects_server_flags() -> None:
    assert main.commands["admin"] is admin
    assert "--db-path" in [opt for param in admin.params for opt in param.opts]
    result = run(["--master-key", "x", "admin"])
    assert result.exit_code == 2
    assert "server options cannot be used with `admin`" in result.stderr


# ---------------------------------------------------------------------------------------------
# Log formatters.


def make_record(**extra: object) -> logging.LogRecord:
    record = logging.LogRecord(
        "hanzo_engine.scheduler", logging.WARNING, __file__, 1, "batch %d done", (3,), None
    )
    record.created = 0.5
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_json_formatter() -> None:
    line = JsonFormatter().format(
        make_record(batch_uid=3, index="movies", color_message="\x1b[1mbatch\x1b[0m")
    )
    assert json.loads(line) == {
        "timestamp": "1970-01-01T00:00:00.500000Z",
        "level": "WARN",
        "fields": {"message": "batch 3 done", "batch_uid": 3, "index": "movies"},
        "target": "hanzo_engine.scheduler",
    }


def test_human_formatter() -> None:
    line = HumanFormatter().format(make_record(batch_uid=3, index="my movies"))
    assert (
        line
        == '1970-01-01T00:00:00.500000Z  WARN hanzo_engine.scheduler: batch 3 done batch_uid=3 index="my movies"'
    )
