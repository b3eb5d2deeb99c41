"""Server configuration: one table drives CLI flags, `MEILI_*` variables, TOML keys and defaults.

Every option is an `OptionSpec` in `OPTIONS`. The CLI (`hanzo_engine.cli`) generates its flags
from the table, and `load_options` resolves each option with Meilisearch's precedence:

    CLI flag  >  environment variable  >  configuration file  >  default

Invariants:

- The TOML key of an option is its `name` (the snake_case flag), as in Meilisearch. Unknown keys
  are an error, and so is `config_file_path` inside the file (a file naming a file is a loop).
- The configuration file is `./config.toml` (relative to `cwd`) unless `--config-file-path` or
  `MEILI_CONFIG_FILE_PATH` names one; the default file is silently skipped when it cannot be
  read, a named one must exist.
- Every raw value, wherever it came from, goes through the same `parser`, so the accepted syntax
  (byte units, `unlimited`, case-insensitive levels) does not depend on the source.
- Boolean flags read from the environment follow clap's falsey rule, as Meilisearch does:
  `""`, `0`, `false`, `f`, `no`, `n`, `off` are false (any case), anything else is true.
- Relative paths (`db_path`, dump and snapshot locations, TLS files) are resolved against `cwd`,
  so an `Options` value never depends on the process's working directory later on.

Meilisearch options that hanzo-engine does not implement. Those whose absence only changes how the
server works, never what it answers or stores, are accepted with a warning from `check_startup`:
`ssl_resumption`, `ssl_tickets` (TLS session reuse), `experimental_reduce_indexing_memory_usage`
(always in effect here: `ALWAYS_ON`) and `experimental_no_snapshot_compaction`. The others are refused at startup (`ConfigError` from
`check_startup`, with the reason), since ignoring them would change what the user gets:
`ssl_ocsp_path` (no OCSP stapling), every `s3_*` and `experimental_s3_*` option (snapshots are
written to `snapshot_dir` only), `experimental_replication_parameters` and
`experimental_personalization_api_key` (no reranking service). `experimental_dumpless_upgrade`, the
pre-1.13 name of `upgrade_db`, sets it.

Deliberate differences: `max_indexing_threads = "unlimited"` means every available CPU (Meilisearch
falls back to its default pool size), `0` threads is rejected, and `MEILI_SCHEDULE_SNAPSHOT` also
accepts `true`/`false` besides a number of seconds.
"""

from __future__ import annotations

import base64
import secrets
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from .option_values import (
    DEFAULT_SNAPSHOT_INTERVAL_SEC,
    ConfigError,
    cpu_count,
    default_max_indexing_memory,
    default_max_indexing_threads,
    parse_byte_size,
    parse_env_kind,
    parse_flag,
    parse_http_addr,
    parse_http_addr_text,
    parse_ip_networks,
    parse_log_level,
    parse_log_mode,
    parse_max_batched_tasks,
    parse_max_threads,
    parse_nonzero_uint,
    parse_path,
    parse_schedule_snapshot,
    parse_text,
    parse_uint,
    parse_url,
)

__all__ = [
    "DEFAULT_CONFIG_FILE",
    "MASTER_KEY_MIN_SIZE",
    "OPTIONS",
    "ConfigError",
    "LogLevel",
    "LogMode",
    "OptionSpec",
    "Options",
    "check_startup",
    "generate_master_key",
    "load_options",
    "parse_byte_size",
    "parse_http_addr",
]

PRODUCT_NAME: Final = "hanzo-engine"
DEFAULT_CONFIG_FILE: Final = "./config.toml"
MASTER_KEY_MIN_SIZE: Final = 16
MASTER_KEY_GEN_SIZE: Final = 32
# Cap of the default batch payload budget, as Meilisearch: half the indexing memory, at most 10 GiB.
BATCHED_TASKS_SIZE_CAP: Final = 10 * 1024**3

LogLevel = Literal["OFF", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"]
LogMode = Literal["HUMAN", "JSON"]


# --------------------------------------------------------------------------------------------
# The table.


@dataclass(frozen=True)
class OptionSpec:
    """One configuration option.

    `name` is the TOML key and the `Options` attribute; `flag` the long CLI flag; `env` the
    environment variable. `default` is the typed default unless `default_factory` computes it at
    load time. `parser` turns a raw string into the typed value (raising ValueError). `is_flag`
    options take no value on the command line; `bare_value` is the raw value used when an
    optional-value option is given without one (`--schedule-snapshot`). `ignored` options are
    accepted for compatibility with Meilisearch and have no effect.
    """

    name: str
    flag: str
    env: str
    default: Any
    parser: Callable[[str], Any]
    help: str
    is_flag: bool = False
    bare_value: str | None = None
    default_factory: Callable[[], Any] | None = None
    default_help: str | None = None
    metavar: str | None = None
    ignored: bool = False
    refused: str | None = None  # why an ignored option stops the server when set (None: a warning)

    @property
    def value_name(self) -> str:
        return self.metavar or self.name.upper()

    @property
    def display(self) -> str:
        """How clap names the argument in its messages: `--db-path <DB_PATH>`."""
        return self.flag if self.is_flag else f"{self.flag} <{self.value_name}>"

    def default_value(self) -> Any:
        return self.default_factory() if self.default_factory is not None else self.default


def _opt(
    name: str,
    default: Any,
    parser: Callable[[str], Any],
    help: str,
    *,
    env: str | None = None,
    **kw: Any,
) -> OptionSpec:
    return OptionSpec(
        name=name,
        flag="--" + name.replace("_", "-"),
        env=env or "MEILI_" + name.upper(),
        default=default,
        parser=parser,
        help=help,
        **kw,
    )


def _bool_opt(name: str, help: str, **kw: Any) -> OptionSpec:
    return _opt(name, False, parse_flag, help, is_flag=True, **kw)


def _ignored(name: str, *, is_flag: bool = False, refused: str | None = None) -> OptionSpec:
    help = (
        "Not supported by hanzo-engine: refused at startup."
        if refused is not None
        else "Accepted for compatibility with Meilisearch; has no effect in hanzo-engine."
    )
    if is_flag:
        return _bool_opt(name, help, ignored=True, refused=refused)
    return _opt(name, None, parse_text, help, ignored=True, refused=refused)


_NO_S3: Final = "snapshots are written to `--snapshot-dir` only, never uploaded to S3"
# Meilisearch options whose effect hanzo-engine always has (so setting them changes nothing)
ALWAYS_ON: Final = {
    "--experimental-reduce-indexing-memory-usage": "index environments are always opened with MDB_WRITEMAP",
}
# an old option name that sets the current one
_ALIASES: Final = {"experimental_dumpless_upgrade": "upgrade_db"}


OPTIONS: Final[tuple[OptionSpec, ...]] = (
    _opt(
        "db_path", Path("./data.ms"), parse_path, "Location where database files are created and retrieved."
    ),
    _opt("http_addr", "localhost:7700", parse_http_addr_text, "HTTP address and port the server listens on."),
    _opt("master_key", None, parse_text, "Master key; protects every route except `GET /health`."),
    _opt("env", "development", parse_env_kind, "Instance environment: `development` or `production`."),
    _opt("task_webhook_url", None, parse_url, "URL notified whenever a task finishes."),
    _opt(
        "task_webhook_authorization_header",
        None,
        parse_text,
        "Authorization header sent to the task webhook URL.",
    ),
    _bool_opt("no_analytics", "Deactivates telemetry (hanzo-engine never collects any)."),
    _opt(
        "http_payload_size_limit",
        100_000_000,
        parse_byte_size,
        "Maximum size of accepted payloads, in bytes or with a unit (`107374182400`, `'100 MiB'`).",
        default_help="100 MB",
    ),
    _opt(
        "ssl_cert_path",
        None,
        parse_path,
        "Server TLS certificate chain (PEM); enables HTTPS with --ssl-key-path.",
    ),
    _opt("ssl_key_path", None, parse_path, "Server TLS private key (PEM)."),
    _opt("ssl_auth_path", None, parse_path, "CA certificates used to verify client certificates."),
    _bool_opt("ssl_require_auth", "Makes client certificate authentication mandatory."),
    _ignored("ssl_ocsp_path", refused="OCSP stapling is not available"),
    _ignored("ssl_resumption", is_flag=True),
    _ignored("ssl_tickets", is_flag=True),
    _opt("import_snapshot", None, parse_path, "Imports the snapshot at this path before starting."),
    _bool_opt(
        "ignore_missing_snapshot", "Starts normally when --import-snapshot does not point to a snapshot."
    ),
    _bool_opt(
        "ignore_snapshot_if_db_exists",
        "Ignores --import-snapshot and starts with the existing database, if one exists.",
    ),
    _opt("snapshot_dir", Path("snapshots/"), parse_path, "Directory where snapshots are written."),
    _opt(
        "schedule_snapshot",
        None,
        parse_schedule_snapshot,
        "Enables scheduled snapshots; the value is the interval in seconds (bare flag: 86400).",
        bare_value=str(DEFAULT_SNAPSHOT_INTERVAL_SEC),
        metavar="SNAPSHOT_INTERVAL_SEC",
        default_help="disabled",
    ),
    _opt("import_dump", None, parse_path, "Imports the `.dump` file at this path before starting."),
    _bool_opt("ignore_missing_dump", "Starts normally when --import-dump does not point to a dump."),
    _bool_opt(
        "ignore_dump_if_db_exists",
        "Ignores --import-dump and starts with the existing database, if one exists.",
    ),
    _opt("dump_dir", Path("dumps/"), parse_path, "Directory where dumps are written."),
    _opt("log_level", "INFO", parse_log_level, "Log verbosity: OFF, ERROR, WARN, INFO, DEBUG or TRACE."),
    _opt(
        "max_indexing_memory",
        None,
        parse_byte_size,
        "Maximum RAM used when indexing, in bytes or with a unit.",
        default_factory=default_max_indexing_memory,
        default_help="2/3 of the RAM",
    ),
    _opt(
        "max_indexing_threads",
        None,
        parse_max_threads,
        "Maximum number of indexing threads, or `unlimited` (every CPU).",
        default_factory=default_max_indexing_threads,
        default_help="half the CPUs",
    ),
    _opt(
        "http_workers",
        None,
        parse_nonzero_uint,
        "Number of processes serving HTTP (one of them also applies the writes), or 1 for a single "
        "process. Searches run in every process, in parallel.",
        default_factory=cpu_count,
        default_help="one per CPU",
    ),
    _bool_opt("upgrade_db", "Upgrades a database written by an older version at start."),
    _bool_opt("experimental_dumpless_upgrade", "Former name of `--upgrade-db`: sets it.", ignored=True),
    _bool_opt("experimental_contains_filter", "Enables the CONTAINS filter operator."),
    _bool_opt("experimental_enable_metrics", "Enables Prometheus metrics on `GET /metrics`."),
    _bool_opt("experimental_enable_logs_route", "Enables the `/logs/stream` and `/logs/stderr` routes."),
    _opt("experimental_logs_mode", "HUMAN", parse_log_mode, "Format of the logs on stderr: HUMAN or JSON."),
    _bool_opt(
        "experimental_legacy_search_default",
        "Makes the legacy search pipeline the default until `legacySearch` is set at runtime.",
        env="MEILI_EXPERIMENTAL_LEGACY_SEARCH",
    ),
    _opt(
        "experimental_search_queue_size",
        1000,
        parse_uint,
        "Size of the search queue; past it, searches get 503 Service Unavailable.",
    ),
    _opt(
        "experimental_drop_search_after",
        60,
        parse_nonzero_uint,
        "Seconds after which a queued search is considered irrelevant and dropped.",
    ),
    _opt(
        "experimental_nb_searches_per_core",
        4,
        parse_nonzero_uint,
        "Number of searches that may run concurrently on each core.",
    ),
    _ignored("experimental_reduce_indexing_memory_usage", is_flag=True),  # always in effect: ALWAYS_ON
    _ignored(
        "experimental_replication_parameters", is_flag=True, refused="the task queue has no replication mode"
    ),
    _opt(
        "experimental_max_number_of_batched_tasks",
        None,
        parse_max_batched_tasks,
        "Maximum number of tasks processed in one batch.",
        default_help="unlimited",
    ),
    _opt(
        "experimental_limit_batched_tasks_total_size",
        None,
        parse_byte_size,
        "Maximum total payload size of the tasks of one batch, in bytes or with a unit.",
        default_help="half the indexing memory, at most 10 GiB",
    ),
    _opt(
        "experimental_embedding_cache_entries",
        0,
        parse_uint,
        "Number of query embeddings cached per embedder (0 disables the cache).",
    ),
    _bool_opt(
        "experimental_no_edition_2024_for_settings",
        "Keeps the pre-2024 indexing edition for settings changes.",
    ),
    _ignored("experimental_no_snapshot_compaction", is_flag=True),
    _ignored(
        "experimental_personalization_api_key",
        refused="there is no personalization (reranking) service; a search with `personalize` answers "
        "`feature_not_enabled`",
    ),
    _opt(
        "experimental_allowed_ip_networks",
        None,
        parse_ip_networks,
        "IP networks (CIDR, comma-separated) outgoing requests may reach, or `any`.",
        default_help="internal networks blocked",
    ),
    *(
        _ignored(name, refused=_NO_S3)
        for name in (
            "s3_bucket_url",
            "s3_bucket_region",
            "s3_bucket_name",
            "s3_snapshot_prefix",
            "s3_access_key",
            "s3_secret_key",
            "experimental_s3_role_arn",
            "experimental_s3_web_identity_token_file",
            "experimental_s3_max_in_flight_parts",
            "experimental_s3_compression_level",
            "experimental_s3_signature_duration_seconds",
            "experimental_s3_multipart_part_size",
        )
    ),
    _opt(
        "config_file_path",
        None,
        parse_path,
        "Path of a TOML configuration file.",
        default_help="./config.toml if present",
    ),
)

OPTIONS_BY_NAME: Final[dict[str, OptionSpec]] = {spec.name: spec for spec in OPTIONS}


@dataclass(frozen=True)
class Options:
    """The resolved configuration of one server process (see `load_options`)."""

    db_path: Path
    http_addr: str
    master_key: str | None
    env: Literal["development", "production"]
    task_webhook_url: str | None
    task_webhook_authorization_header: str | None
    no_analytics: bool
    http_payload_size_limit: int
    ssl_cert_path: Path | None
    ssl_key_path: Path | None
    ssl_auth_path: Path | None
    ssl_require_auth: bool
    import_snapshot: Path | None
    ignore_missing_snapshot: bool
    ignore_snapshot_if_db_exists: bool
    snapshot_dir: Path
    # Interval in seconds between scheduled snapshots; None when disabled.
    schedule_snapshot: int | None
    import_dump: Path | None
    ignore_missing_dump: bool
    ignore_dump_if_db_exists: bool
    dump_dir: Path
    log_level: LogLevel
    # None when the machine's RAM could not be determined (no limit).
    max_indexing_memory: int | None
    max_indexing_threads: int
    http_workers: int
    upgrade_db: bool
    experimental_contains_filter: bool
    experimental_enable_metrics: bool
    experimental_enable_logs_route: bool
    experimental_logs_mode: LogMode
    experimental_legacy_search_default: bool
    experimental_search_queue_size: int
    experimental_drop_search_after: int
    experimental_nb_searches_per_core: int
    # None means unlimited.
    experimental_max_number_of_batched_tasks: int | None
    experimental_limit_batched_tasks_total_size: int
    experimental_embedding_cache_entries: int
    experimental_no_edition_2024_for_settings: bool
    # None: default policy (internal networks blocked); ("any",) allows everything.
    experimental_allowed_ip_networks: tuple[str, ...] | None
    # The configuration file actually read, if any.
    config_file_path: Path | None
    # Flags of the ignored options the user set (see the module docstring).
    ignored_options: tuple[str, ...] = ()

    @property
    def host_port(self) -> tuple[str, int]:
        return parse_http_addr(self.http_addr)

    @property
    def ssl_enabled(self) -> bool:
        """TLS is on when both the certificate and the key are given, as in Meilisearch."""
        return self.ssl_cert_path is not None and self.ssl_key_path is not None


# Resolved against `cwd`; the config file path is resolved when it is read.
_PATH_OPTIONS: Final = frozenset(
    s.name for s in OPTIONS if s.parser is parse_path and s.name != "config_file_path"
)


def _invalid(spec: OptionSpec, raw: object, reason: str, source: str) -> ConfigError:
    return ConfigError(f"invalid value '{raw}' for '{spec.display}' ({source}): {reason}")


def _parse(spec: OptionSpec, raw: str, source: str) -> Any:
    try:
        return spec.parser(raw)
    except ValueError as exc:
        raise _invalid(spec, raw, str(exc), source) from None


def _from_toml(spec: OptionSpec, value: object, path: Path) -> Any:
    """Convert one TOML value: booleans only for flags (and `schedule_snapshot`), scalars otherwise."""
    source = f"configuration file {path}"
    if spec.is_flag:
        if not isinstance(value, bool):
            raise _invalid(spec, value, "expected a boolean", source)
        return value
    if isinstance(value, bool):
        if spec.bare_value is not None:
            return _parse(spec, spec.bare_value, source) if value else spec.default_value()
        raise _invalid(spec, value, "invalid type: boolean", source)
    if isinstance(value, int | float | str):
        return _parse(spec, str(value), source)
    raise _invalid(spec, value, f"invalid type: {type(value).__name__}", source)


def _read_config_file(
    cli_values: Mapping[str, Any], environ: Mapping[str, str], cwd: Path
) -> tuple[dict[str, Any], Path | None]:
    """Load the TOML table and return it with the path read (None when none was)."""
    spec = OPTIONS_BY_NAME["config_file_path"]
    named: str | None = None
    if cli_values.get(spec.name) is not None:
        named = str(cli_values[spec.name])
    elif spec.env in environ:
        named = environ[spec.env]
    path = cwd / (named if named is not None else DEFAULT_CONFIG_FILE)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        if named is None:
            return {}, None
        reason = f"{exc.strerror} (os error {exc.errno})" if isinstance(exc, OSError) else str(exc)
        raise ConfigError(f'unable to open or read the "{named}" configuration file: {reason}.') from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"TOML parse error in the configuration file {path}: {exc}") from None
    for key in table:
        if key == "config_file_path":
            raise ConfigError("`config_file_path` is not supported in the configuration file")
        if key not in OPTIONS_BY_NAME:
            expected = ", ".join(f"`{s.name}`" for s in OPTIONS if s.name != "config_file_path")
            raise ConfigError(
                f"unknown field `{key}` in the configuration file {path}, expected one of {expected}"
            )
    return table, path.resolve()


def load_options(cli_values: Mapping[str, Any], environ: Mapping[str, str], *, cwd: Path) -> Options:
    """Resolve every option: CLI flag > environment variable > configuration file > default.

    `cli_values` maps option names to what the command line gave: None (or absent) when the
    flag was not given, True for a given boolean flag, the raw string otherwise.
    """
    for name in cli_values:
        if name not in OPTIONS_BY_NAME:
            raise ValueError(f"unknown option {name!r}")
    table, config_path = _read_config_file(cli_values, environ, cwd)

    values: dict[str, Any] = {}
    explicit: set[str] = set()
    ignored: list[str] = []
    aliased: set[str] = set()
    for spec in OPTIONS:
        if spec.name == "config_file_path":
            continue
        cli = cli_values.get(spec.name)
        if cli is not None and cli is not False:
            value = True if spec.is_flag else _parse(spec, str(cli), "command-line flag")
        elif spec.env in environ:
            value = _parse(spec, environ[spec.env], f"environment variable {spec.env}")
        elif spec.name in table:
            value = _from_toml(spec, table[spec.name], config_path or cwd)
        else:
            values[spec.name] = spec.default_value()
            continue
        explicit.add(spec.name)
        if spec.name in _ALIASES:
            if value:
                aliased.add(_ALIASES[spec.name])
            continue
        if spec.ignored:
            if value not in (None, False):
                ignored.append(spec.flag)
            continue
        values[spec.name] = value

    for name in _PATH_OPTIONS:
        if values[name] is not None:
            values[name] = cwd / values[name]

    # Argument relations Meilisearch declares to clap.
    for flag_name, needed in (
        ("ignore_missing_dump", "import_dump"),
        ("ignore_dump_if_db_exists", "import_dump"),
        ("ignore_missing_snapshot", "import_snapshot"),
        ("ignore_snapshot_if_db_exists", "import_snapshot"),
    ):
        if values[flag_name] and values[needed] is None:
            raise ConfigError(
                f"the following required arguments were not provided: {OPTIONS_BY_NAME[needed].display} "
                f"(required by {OPTIONS_BY_NAME[flag_name].flag})"
            )
    if values["import_dump"] is not None and values["import_snapshot"] is not None:
        raise ConfigError(
            f"the argument '{OPTIONS_BY_NAME['import_dump'].display}' cannot be used with "
            f"'{OPTIONS_BY_NAME['import_snapshot'].display}'"
        )

    if "experimental_limit_batched_tasks_total_size" not in explicit:
        memory = values["max_indexing_memory"]
        half = BATCHED_TASKS_SIZE_CAP if memory is None else memory // 2
        values["experimental_limit_batched_tasks_total_size"] = min(half, BATCHED_TASKS_SIZE_CAP)

    for name in aliased:
        values[name] = True
    for spec in OPTIONS:
        if spec.ignored:
            values.pop(spec.name, None)
    values["config_file_path"] = config_path
    return Options(**values, ignored_options=tuple(ignored))


# --------------------------------------------------------------------------------------------
# Startup checks.


def generate_master_key() -> str:
    """A fresh master key: 32 random bytes, URL-safe base64 without padding (as Meilisearch)."""
    return base64.urlsafe_b64encode(secrets.token_bytes(MASTER_KEY_GEN_SIZE)).rstrip(b"=").decode()


def _generated_master_key_message() -> str:
    return (
        "We generated a new secure master key for you (you can safely use this token):\n\n"
        f">> --master-key {generate_master_key()} <<"
    )


def _restart_hint() -> str:
    return f"Restart {PRODUCT_NAME} with the argument above to use this new and secure master key."


def check_startup(opts: Options) -> list[str]:
    """Apply Meilisearch's start-up rules on the master key; return the warnings to print.

    Production requires a master key of at least 16 bytes (UTF-8), else `ConfigError` with
    Meilisearch's message and a freshly generated key. Development only warns about a short or
    missing key. Setting an ignored option adds a warning too.
    """
    key = opts.master_key
    warnings: list[str] = []
    if opts.env == "production":
        if key is None:
            raise ConfigError(
                "You must provide a master key to secure your instance in a production environment. "
                "It can be specified via the MEILI_MASTER_KEY environment variable or the --master-key "
                f"launch option.\n\n{_generated_master_key_message()}"
            )
        if len(key.encode()) < MASTER_KEY_MIN_SIZE:
            raise ConfigError(
                f"The master key must be at least {MASTER_KEY_MIN_SIZE} bytes in a production environment. "
                f"The provided key is only {len(key.encode())} bytes.\n\n{_generated_master_key_message()}"
            )
    elif key is None:
        warnings.append(
            "No master key was found. The server will accept unidentified requests.\n\n"
            f"A master key of at least {MASTER_KEY_MIN_SIZE} bytes will be required when switching to a "
            f"production environment.\n\n{_generated_master_key_message()}\n\n{_restart_hint()}"
        )
    elif len(key.encode()) < MASTER_KEY_MIN_SIZE:
        warnings.append(
            f"{PRODUCT_NAME} started with a master key considered unsafe for use in a production environment.\n\n"
            f"A master key of at least {MASTER_KEY_MIN_SIZE} bytes will be required when switching to a "
            f"production environment.\n\n{_generated_master_key_message()}\n\n{_restart_hint()}"
        )
    by_flag = {spec.flag: spec for spec in OPTIONS}
    for flag in opts.ignored_options:
        reason = by_flag[flag].refused
        if reason is not None:
            raise ConfigError(
                f"The `{flag}` option is not supported by {PRODUCT_NAME}: {reason}. Remove it to start "
                "the server."
            )
        if flag in ALWAYS_ON:
            warnings.append(f"The `{flag}` option is always on in {PRODUCT_NAME}: {ALWAYS_ON[flag]}.")
        else:
            warnings.append(f"The `{flag}` option is not supported by {PRODUCT_NAME} and is ignored.")
    return warnings
