"""Server options: precedence, parsing, config file rules and the production start-up checks."""

from __future__ import annotations

import base64
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from hanzo_engine.server.options import (
    BATCHED_TASKS_SIZE_CAP,
    OPTIONS,
    ConfigError,
    Options,
    check_startup,
    load_options,
    parse_byte_size,
    parse_http_addr,
)

NO_ENV: dict[str, str] = {}


def load(cwd: Path, cli: dict[str, object] | None = None, env: dict[str, str] | None = None) -> Options:
    return load_options(cli or {}, env or NO_ENV, cwd=cwd)


def write_config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# The table and the dataclass agree.


def test_every_supported_option_is_an_options_attribute_and_back() -> None:
    supported = {s.name for s in OPTIONS if not s.ignored}
    attributes = {f.name for f in dataclasses.fields(Options)} - {"ignored_options"}
    assert supported == attributes


def test_flags_env_names_and_keys_are_unique_and_consistent() -> None:
    assert len({s.flag for s in OPTIONS}) == len(OPTIONS)
    assert len({s.env for s in OPTIONS}) == len(OPTIONS)
    for spec in OPTIONS:
        assert spec.flag == "--" + spec.name.replace("_", "-")
        assert spec.env.startswith("MEILI_")


# ---------------------------------------------------------------------------------------------
# Defaults.


def test_defaults(tmp_path: Path) -> None:
    opts = load(tmp_path)
    assert opts.db_path == tmp_path / "data.ms"
    assert opts.http_addr == "localhost:7700"
    assert opts.master_key is None
    assert opts.env == "development"
    assert opts.no_analytics is False
    assert opts.http_payload_size_limit == 100_000_000
    assert opts.log_level == "INFO"
    assert opts.dump_dir == tmp_path / "dumps"
    assert opts.snapshot_dir == tmp_path / "snapshots"
    assert opts.schedule_snapshot is None
    assert opts.experimental_logs_mode == "HUMAN"
    assert opts.experimental_search_queue_size == 1000
    assert opts.experimental_drop_search_after == 60
    assert opts.experimental_nb_searches_per_core == 4
    assert opts.experimental_max_number_of_batched_tasks is None
    assert opts.max_indexing_threads >= 1
    assert opts.max_indexing_memory is None or opts.max_indexing_memory > 0
    expected_batch = min(
        (opts.max_indexing_memory or 2 * BATCHED_TASKS_SIZE_CAP) // 2, BATCHED_TASKS_SIZE_CAP
    )
    assert opts.experimental_limit_batched_tasks_total_size == expected_batch
    assert opts.config_file_path is None
    assert opts.ignored_options == ()


def test_batched_tasks_size_defaults_to_half_the_indexing_memory(tmp_path: Path) -> None:
    opts = load(tmp_path, {"max_indexing_memory": "1 GiB"})
    assert opts.max_indexing_memory == 1024**3
    assert opts.experimental_limit_batched_tasks_total_size == 512 * 1024**2
    opts = load(tmp_path, {"max_indexing_memory": "100 GiB"})
    assert opts.experimental_limit_batched_tasks_total_size == 10 * 1024**3


# ---------------------------------------------------------------------------------------------
# Precedence: CLI flag > environment variable > config file > default.


@pytest.mark.parametrize(
    ("name", "env", "toml", "env_value", "cli_value", "expect_file", "expect_env", "expect_cli"),
    [
        (
            "http_addr",
            "MEILI_HTTP_ADDR",
            '"0.0.0.0:1111"',
            "0.0.0.0:2222",
            "0.0.0.0:3333",
            "0.0.0.0:1111",
            "0.0.0.0:2222",
            "0.0.0.0:3333",
        ),
        ("http_payload_size_limit", "MEILI_HTTP_PAYLOAD_SIZE_LIMIT", '"1 KiB"', "2kb", "3", 1024, 2000, 3),
        ("log_level", "MEILI_LOG_LEVEL", '"debug"', "Warn", "trace", "DEBUG", "WARN", "TRACE"),
        (
            "experimental_search_queue_size",
            "MEILI_EXPERIMENTAL_SEARCH_QUEUE_SIZE",
            "10",
            "20",
            "30",
            10,
            20,
            30,
        ),
        ("max_indexing_threads", "MEILI_MAX_INDEXING_THREADS", "3", "5", "7", 3, 5, 7),
    ],
)
def test_value_precedence(
    tmp_path: Path,
    name: str,
    env: str,
    toml: str,
    env_value: str,
    cli_value: str,
    expect_file: object,
    expect_env: object,
    expect_cli: object,
) -> None:
    write_config(tmp_path / "config.toml", f"{name} = {toml}\n")
    assert getattr(load(tmp_path), name) == expect_file
    assert getattr(load(tmp_path, env={env: env_value}), name) == expect_env
    assert getattr(load(tmp_path, {name: cli_value}, {env: env_value}), name) == expect_cli


def test_path_precedence_and_resolution(tmp_path: Path) -> None:
    write_config(tmp_path / "config.toml", 'db_path = "from-file"\n')
    assert load(tmp_path).db_path == tmp_path / "from-file"
    assert load(tmp_path, env={"MEILI_DB_PATH": "from-env"}).db_path == tmp_path / "from-env"
    opts = load(tmp_path, {"db_path": "/abs/from-cli"}, {"MEILI_DB_PATH": "from-env"})
    assert opts.db_path == Path("/abs/from-cli")


def test_flag_precedence(tmp_path: Path) -> None:
    write_config(tmp_path / "config.toml", "no_analytics = true\n")
    assert load(tmp_path).no_analytics is True
    # An environment variable overrides the file, also to turn a flag off.
    assert load(tmp_path, env={"MEILI_NO_ANALYTICS": "false"}).no_analytics is False
    assert load(tmp_path, {"no_analytics": True}, {"MEILI_NO_ANALYTICS": "false"}).no_analytics is True
    # Absent (None) and False on the command line both mean "not given".
    assert load(tmp_path, {"no_analytics": None}).no_analytics is True


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("true", True),
        ("1", True),
        ("yes", True),
        ("anything", True),
        ("", False),
        ("0", False),
        ("FALSE", False),
        ("off", False),
        ("n", False),
    ],
)
def test_env_flags_use_clap_falsey_values(tmp_path: Path, raw: str, expected: bool) -> None:
    assert (
        load(tmp_path, env={"MEILI_EXPERIMENTAL_ENABLE_METRICS": raw}).experimental_enable_metrics is expected
    )


def test_master_key_precedence_and_empty_value(tmp_path: Path) -> None:
    write_config(tmp_path / "config.toml", 'master_key = "from-the-config-file"\n')
    assert load(tmp_path).master_key == "from-the-config-file"
    assert load(tmp_path, env={"MEILI_MASTER_KEY": ""}).master_key == ""
    assert load(tmp_path, {"master_key": "cli"}, {"MEILI_MASTER_KEY": "env"}).master_key == "cli"


# ---------------------------------------------------------------------------------------------
# Parsing.


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("107374182400", 107_374_182_400),
        ("100 MB", 100_000_000),
        ("100MB", 100_000_000),
        ("100 MiB", 104_857_600),
        ("100Mb", 100_000_000),
        ("100 mib", 104_857_600),
        ("1k", 1000),
        ("1Ki", 1024),
        ("2 GiB", 2 * 1024**3),
        ("107.7Gb", 107_700_000_000),
        ("1.5 KB", 1500),
        ("0.0001 KB", 1),  # rounded up
        ("80Mbit", 10_000_000),
        ("12 B", 12),
        ("  42  ", 42),
    ],
)
def test_byte_sizes(raw: str, expected: int) -> None:
    assert parse_byte_size(raw) == expected


@pytest.mark.parametrize("raw", ["", "MB", "-1", "1.MB", "12 XB", "1 MiBB", "1e3", "99999999999 EB"])
def test_invalid_byte_sizes(raw: str) -> None:
    with pytest.raises(ValueError):
        parse_byte_size(raw)


def test_byte_size_accepts_toml_integers(tmp_path: Path) -> None:
    write_config(tmp_path / "config.toml", "http_payload_size_limit = 1048576\n")
    assert load(tmp_path).http_payload_size_limit == 1_048_576


def test_invalid_values_name_the_flag_and_the_source(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"invalid value 'prod' for '--env <ENV>' \(environment variable MEILI_ENV\)"
    ):
        load(tmp_path, env={"MEILI_ENV": "prod"})
    with pytest.raises(ConfigError, match=r"Log level 'loud' is invalid. Accepted values are 'OFF', 'ERROR'"):
        load(tmp_path, {"log_level": "loud"})
    with pytest.raises(
        ConfigError, match=r"Unsupported log mode level `xml`. Supported values are `HUMAN` and `JSON`."
    ):
        load(tmp_path, {"experimental_logs_mode": "xml"})
    with pytest.raises(ConfigError, match="number would be zero for non-zero type"):
        load(tmp_path, {"experimental_drop_search_after": "0"})
    with pytest.raises(ConfigError, match="--max-indexing-threads"):
        load(tmp_path, {"max_indexing_threads": "0"})
    with pytest.raises(ConfigError, match="relative URL without a base"):
        load(tmp_path, {"task_webhook_url": "example.com/hook"})


def test_logs_mode_and_level_are_case_insensitive(tmp_path: Path) -> None:
    opts = load(tmp_path, {"experimental_logs_mode": "json", "log_level": "off"})
    assert (opts.experimental_logs_mode, opts.log_level) == ("JSON", "OFF")


def test_max_indexing_threads_unlimited(tmp_path: Path) -> None:
    default = load(tmp_path).max_indexing_threads
    unlimited = load(tmp_path, {"max_indexing_threads": "unlimited"}).max_indexing_threads
    assert unlimited >= default >= 1
    assert unlimited >= 2 * default - 1


def test_schedule_snapshot(tmp_path: Path) -> None:
    spec = next(s for s in OPTIONS if s.name == "schedule_snapshot")
    assert load(tmp_path).schedule_snapshot is None
    assert load(tmp_path, {"schedule_snapshot": spec.bare_value}).schedule_snapshot == 86400
    assert load(tmp_path, {"schedule_snapshot": "3600"}).schedule_snapshot == 3600
    assert load(tmp_path, env={"MEILI_SCHEDULE_SNAPSHOT": "60"}).schedule_snapshot == 60
    assert load(tmp_path, env={"MEILI_SCHEDULE_SNAPSHOT": ""}).schedule_snapshot is None
    write_config(tmp_path / "config.toml", "schedule_snapshot = true\n")
    assert load(tmp_path).schedule_snapshot == 86400
    write_config(tmp_path / "config.toml", "schedule_snapshot = false\n")
    assert load(tmp_path).schedule_snapshot is None
    write_config(tmp_path / "config.toml", "schedule_snapshot = 120\n")
    assert load(tmp_path).schedule_snapshot == 120


def test_max_batched_tasks(tmp_path: Path) -> None:
    assert (
        load(
            tmp_path, {"experimental_max_number_of_batched_tasks": "25"}
        ).experimental_max_number_of_batched_tasks
        == 25
    )
    opts = load(tmp_path, env={"MEILI_EXPERIMENTAL_MAX_NUMBER_OF_BATCHED_TASKS": "unlimited"})
    assert opts.experimental_max_number_of_batched_tasks is None


def test_allowed_ip_networks(tmp_path: Path) -> None:
    opts = load(tmp_path, {"experimental_allowed_ip_networks": "10.1.2.3/8, fd00::/8"})
    assert opts.experimental_allowed_ip_networks == ("10.0.0.0/8", "fd00::/8")
    assert load(tmp_path, {"experimental_allowed_ip_networks": "any"}).experimental_allowed_ip_networks == (
        "any",
    )
    with pytest.raises(ConfigError, match="not a valid IP network"):
        load(tmp_path, {"experimental_allowed_ip_networks": "10.0.0.0/99"})


def test_dump_and_snapshot_argument_relations(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match="required arguments were not provided: --import-dump <IMPORT_DUMP>"
    ):
        load(tmp_path, {"ignore_missing_dump": True})
    with pytest.raises(ConfigError, match="--import-snapshot <IMPORT_SNAPSHOT>"):
        load(tmp_path, env={"MEILI_IGNORE_SNAPSHOT_IF_DB_EXISTS": "true"})
    with pytest.raises(
        ConfigError, match="'--import-dump <IMPORT_DUMP>' cannot be used with '--import-snapshot"
    ):
        load(tmp_path, {"import_dump": "a.dump", "import_snapshot": "b.snapshot"})
    opts = load(tmp_path, {"import_dump": "a.dump", "ignore_missing_dump": True})
    assert (opts.import_dump, opts.ignore_missing_dump) == (tmp_path / "a.dump", True)


def test_ignored_options_are_accepted_and_reported(tmp_path: Path) -> None:
    write_config(tmp_path / "config.toml", "ssl_resumption = true\nssl_tickets = false\n")
    opts = load(tmp_path, {"experimental_reduce_indexing_memory_usage": True})
    # A flag set to false in the file is not "used"; the other flag in the file and the CLI flag are.
    assert set(opts.ignored_options) == {"--ssl-resumption", "--experimental-reduce-indexing-memory-usage"}
    warnings = check_startup(dataclasses.replace(opts, master_key="a" * 16))
    assert warnings == [
        "The `--experimental-reduce-indexing-memory-usage` option is always on in hanzo-engine: index "
        "environments are always opened with MDB_WRITEMAP."
        if flag == "--experimental-reduce-indexing-memory-usage"
        else f"The `{flag}` option is not supported by hanzo-engine and is ignored."
        for flag in opts.ignored_options
    ]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"s3_bucket_url": "https://s3.example"},
            "The `--s3-bucket-url` option is not supported by hanzo-engine: "
            "snapshots are written to `--snapshot-dir` only, never uploaded to S3. Remove it to start the server.",
        ),
        (
            {"experimental_personalization_api_key": "co-key"},
            "The `--experimental-personalization-api-key` option is "
            "not supported by hanzo-engine: there is no personalization (reranking) service; a search with `personalize` "
            "answers `feature_not_enabled`. Remove it to start the server.",
        ),
        (
            {"ssl_ocsp_path": "ocsp.der"},
            "The `--ssl-ocsp-path` option is not supported by hanzo-engine: OCSP stapling "
            "is not available. Remove it to start the server.",
        ),
        (
            {"experimental_replication_parameters": True},
            "The `--experimental-replication-parameters` option is not "
            "supported by hanzo-engine: the task queue has no replication mode. Remove it to start the server.",
        ),
    ],
)
def test_options_that_would_change_answers_are_refused(
    tmp_path: Path, values: dict[str, Any], message: str
) -> None:
    opts = load(tmp_path, {**values, "master_key": "a" * 16})
    with pytest.raises(ConfigError) as err:
        check_startup(opts)
    assert str(err.value) == message


def test_dumpless_upgrade_is_upgrade_db(tmp_path: Path) -> None:
    opts = load(tmp_path, {"experimental_dumpless_upgrade": True})
    assert opts.upgrade_db is True and opts.ignored_options == ()
    assert load(tmp_path).upgrade_db is False


# ---------------------------------------------------------------------------------------------
# Configuration file.


def test_config_file_unknown_key_is_an_error(tmp_path: Path) -> None:
    write_config(tmp_path / "config.toml", 'db_path = "x"\nnot_an_option = 1\n')
    with pytest.raises(ConfigError, match="unknown field `not_an_option`"):
        load(tmp_path)


def test_config_file_path_inside_the_file_is_forbidden(tmp_path: Path) -> None:
    write_config(tmp_path / "config.toml", 'config_file_path = "other.toml"\n')
    with pytest.raises(ConfigError, match=r"^`config_file_path` is not supported in the configuration file$"):
        load(tmp_path)


def test_named_config_file_must_exist_default_one_may_not(tmp_path: Path) -> None:
    assert load(tmp_path).config_file_path is None
    with pytest.raises(
        ConfigError, match=r'unable to open or read the "missing.toml" configuration file: .*os error 2'
    ):
        load(tmp_path, {"config_file_path": "missing.toml"})
    with pytest.raises(ConfigError, match="unable to open or read"):
        load(tmp_path, env={"MEILI_CONFIG_FILE_PATH": "missing.toml"})


def test_named_config_file_cli_wins_over_env_and_replaces_the_default(tmp_path: Path) -> None:
    write_config(tmp_path / "config.toml", 'http_addr = "default-file:1"\n')
    write_config(tmp_path / "a.toml", 'http_addr = "a-file:2"\n')
    write_config(tmp_path / "b.toml", 'http_addr = "b-file:3"\n')
    assert load(tmp_path).config_file_path == (tmp_path / "config.toml").resolve()
    opts = load(tmp_path, env={"MEILI_CONFIG_FILE_PATH": "a.toml"})
    assert (opts.http_addr, opts.config_file_path) == ("a-file:2", (tmp_path / "a.toml").resolve())
    opts = load(
        tmp_path, {"config_file_path": str(tmp_path / "b.toml")}, {"MEILI_CONFIG_FILE_PATH": "a.toml"}
    )
    assert opts.http_addr == "b-file:3"


def test_config_file_type_errors(tmp_path: Path) -> None:
    write_config(tmp_path / "config.toml", 'no_analytics = "yes"\n')
    with pytest.raises(ConfigError, match="expected a boolean"):
        load(tmp_path)
    write_config(tmp_path / "config.toml", "master_key = true\n")
    with pytest.raises(ConfigError, match="invalid type: boolean"):
        load(tmp_path)
    write_config(tmp_path / "config.toml", "db_path = [1, 2]\n")
    with pytest.raises(ConfigError, match="invalid type"):
        load(tmp_path)
    write_config(tmp_path / "config.toml", "db_path = \n")
    with pytest.raises(ConfigError, match="TOML parse error"):
        load(tmp_path)


def test_unknown_cli_name_is_a_programming_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown option 'nope'"):
        load(tmp_path, {"nope": "1"})


# ---------------------------------------------------------------------------------------------
# HTTP address.


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("localhost:7700", ("localhost", 7700)),
        ("0.0.0.0:80", ("0.0.0.0", 80)),
        ("[::1]:7700", ("::1", 7700)),
        ("::1:7700", ("::1", 7700)),
        ("example.com:65535", ("example.com", 65535)),
    ],
)
def test_parse_http_addr(raw: str, expected: tuple[str, int]) -> None:
    assert parse_http_addr(raw) == expected


@pytest.mark.parametrize(
    "raw", ["localhost", ":7700", "localhost:", "localhost:port", "localhost:65536", "[]:1"]
)
def test_parse_http_addr_rejects(raw: str) -> None:
    with pytest.raises(ConfigError):
        parse_http_addr(raw)


def test_bad_http_addr_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--http-addr <HTTP_ADDR>.*invalid port value"):
        load(tmp_path, env={"MEILI_HTTP_ADDR": "localhost:http"})


# ---------------------------------------------------------------------------------------------
# Start-up checks.

GENERATED_KEY = re.compile(r">> --master-key ([A-Za-z0-9_-]+) <<")


def assert_suggests_a_fresh_key(message: str) -> None:
    assert "We generated a new secure master key for you (you can safely use this token):\n\n" in message
    match = GENERATED_KEY.search(message)
    assert match is not None
    key = match.group(1)
    assert len(base64.urlsafe_b64decode(key + "=")) == 32


def test_production_requires_a_master_key(tmp_path: Path) -> None:
    opts = load(tmp_path, {"env": "production"})
    with pytest.raises(ConfigError) as info:
        check_startup(opts)
    message = str(info.value)
    assert message.startswith(
        "You must provide a master key to secure your instance in a production environment. It can be specified "
        "via the MEILI_MASTER_KEY environment variable or the --master-key launch option.\n\n"
    )
    assert_suggests_a_fresh_key(message)


@pytest.mark.parametrize(("key", "size"), [("", 0), ("short", 5), ("é" * 7 + "a", 15)])
def test_production_requires_16_bytes(tmp_path: Path, key: str, size: int) -> None:
    opts = load(tmp_path, {"env": "production", "master_key": key})
    with pytest.raises(ConfigError) as info:
        check_startup(opts)
    message = str(info.value)
    assert message.startswith(
        f"The master key must be at least 16 bytes in a production environment. The provided key is only {size} bytes.\n\n"
    )
    assert_suggests_a_fresh_key(message)


def test_production_with_a_long_enough_key_starts_without_warnings(tmp_path: Path) -> None:
    assert check_startup(load(tmp_path, {"env": "production", "master_key": "é" * 8})) == []
    assert check_startup(load(tmp_path, {"env": "production", "master_key": "x" * 16})) == []


def test_development_warnings(tmp_path: Path) -> None:
    [missing] = check_startup(load(tmp_path))
    assert missing.startswith("No master key was found. The server will accept unidentified requests.")
    assert (
        "A master key of at least 16 bytes will be required when switching to a production environment."
        in missing
    )
    assert_suggests_a_fresh_key(missing)

    [short] = check_startup(load(tmp_path, {"master_key": "short"}))
    assert "started with a master key considered unsafe for use in a production environment." in short
    assert_suggests_a_fresh_key(short)

    assert check_startup(load(tmp_path, {"master_key": "a-key-long-enough!"})) == []


def test_generated_keys_differ(tmp_path: Path) -> None:
    opts = load(tmp_path)
    first = GENERATED_KEY.search(check_startup(opts)[0])
    second = GENERATED_KEY.search(check_startup(opts)[0])
    assert first is not None and second is not None
    assert first.group(1) != second.group(1)
