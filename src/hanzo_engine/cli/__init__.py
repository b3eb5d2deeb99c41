"""The `hanzo-engine` command line.

`hanzo-engine [OPTIONS]` and `hanzo-engine serve [OPTIONS]` both run the server; `hanzo-engine
admin --db-path DIR <command>` groups the offline maintenance commands (meilitool's role).

The server options are generated from `hanzo_engine.server.options.OPTIONS`, so a flag is
declared in exactly one place. Click never reads the environment here: only values typed on the
command line are passed to `load_options`, which applies the precedence CLI > `MEILI_*`
variables > config file > default itself.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import socket
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, NoReturn, TypeVar

import click
from click.core import ParameterSource

from hanzo_engine import MEILISEARCH_COMPAT_VERSION, __version__
from hanzo_engine.server.options import (
    OPTIONS,
    ConfigError,
    Options,
    check_startup,
    load_options,
)

__all__ = ["HumanFormatter", "JsonFormatter", "admin", "configure_logging", "main", "serve"]

TRACE: Final = 5  # below DEBUG, the level uvicorn also names TRACE
logging.addLevelName(TRACE, "TRACE")

# Our level names -> (logging level, uvicorn's level name).
_LEVELS: Final[dict[str, tuple[int, str]]] = {
    "OFF": (logging.CRITICAL + 1, "critical"),
    "ERROR": (logging.ERROR, "error"),
    "WARN": (logging.WARNING, "warning"),
    "INFO": (logging.INFO, "info"),
    "DEBUG": (logging.DEBUG, "debug"),
    # uvicorn's own trace logging prints raw request paths and headers (key values in `/keys/<key>`,
    # bearer tokens): our TRACE stays at uvicorn's debug so no secret reaches the logs.
    "TRACE": (TRACE, "debug"),
}

# Attributes every LogRecord has; anything else was passed through `extra=` and is a field.
# uvicorn's `color_message` (an ANSI-colored copy of the message) is noise in both formats.
_RECORD_ATTRS: Final = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys()
    | {"message", "asctime", "taskName", "color_message"}
)


def _timestamp(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _level_name(record: logging.LogRecord) -> str:
    return "WARN" if record.levelno == logging.WARNING else record.levelname


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _RECORD_ATTRS and not k.startswith("_")}


class JsonFormatter(logging.Formatter):
    """One JSON object per line, shaped like tracing-subscriber's JSON output:
    `{"timestamp", "level", "fields": {"message", ...extra}, "target"}`."""

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = {"message": record.getMessage(), **_fields(record)}
        if record.exc_info:
            fields["exception"] = self.formatException(record.exc_info)
        entry = {
            "timestamp": _timestamp(record),
            "level": _level_name(record),
            "fields": fields,
            "target": record.name,
        }
        return json.dumps(entry, default=str, ensure_ascii=False)


def _logfmt_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if text == "" or any(c in text for c in ' "=\n\t'):
        return json.dumps(text)
    return text


class HumanFormatter(logging.Formatter):
    """`<timestamp> <LEVEL> <target>: <message> key=value ...`, one record per line."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record)} {_level_name(record):>5} {record.name}: {record.getMessage()}"
        pairs = " ".join(f"{k}={_logfmt_value(v)}" for k, v in _fields(record).items())
        if pairs:
            line += " " + pairs
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure_logging(opts: Options) -> None:
    """Send every log record to stderr in the configured mode and level (idempotent)."""
    level, _ = _LEVELS[opts.log_level]
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_hanzo_engine", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if opts.experimental_logs_mode == "JSON" else HumanFormatter())
    handler._hanzo_engine = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)


# --------------------------------------------------------------------------------------------
# Options generated from the table.

F = TypeVar("F", bound=Callable[..., Any])


def _server_options(func: F) -> F:
    """Decorate a command with one click option per `OPTIONS` entry.

    Every option is a plain string (or a presence flag) with default None: parsing and defaults
    belong to `load_options`, so the same rules apply to flags, variables and the config file.
    """
    for spec in reversed(OPTIONS):
        default = spec.default_help if spec.default_help is not None else spec.default
        help_text = f"{spec.help}  [env: {spec.env}]"
        if default is not None and not spec.is_flag:
            help_text += f"  [default: {default}]"
        if spec.is_flag:
            option = click.option(spec.flag, spec.name, is_flag=True, default=None, help=help_text)
        elif spec.bare_value is not None:
            option = click.option(
                spec.flag,
                spec.name,
                is_flag=False,
                flag_value=spec.bare_value,
                default=None,
                type=str,
                metavar=spec.value_name,
                help=help_text,
            )
        else:
            option = click.option(
                spec.flag, spec.name, type=str, default=None, metavar=spec.value_name, help=help_text
            )
        func = option(func)
    return func


def _typed_values(ctx: click.Context, params: dict[str, Any]) -> dict[str, Any]:
    """Keep only what was typed on the command line (never click defaults)."""
    return {
        name: value
        for name, value in params.items()
        if value is not None and ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
    }


def _fail(message: str) -> NoReturn:
    click.echo(f"Error: {message}", err=True)
    raise SystemExit(1)


def _start_workers(app: Any, opts: Options, cli_values: dict[str, Any], workers: int) -> list[socket.socket]:
    """Bind the public socket and the primary's Unix socket, and plan the search workers (they start
    with the app's lifespan, once the scheduler runs). See `hanzo_engine.server.workers`."""
    from hanzo_engine.server.shared_counts import SharedCounts, SharedGeneration
    from hanzo_engine.server.workers import (
        FEATURES_CHANGES,
        PRIMARY_SOCKET,
        SEARCH_COUNTS,
        WorkerPool,
        ensure_port_free,
        listening_socket,
        make_runtime_dir,
        unix_socket,
    )

    host, port = opts.host_port
    try:
        if port != 0:
            ensure_port_free(host, port)
        public = listening_socket(host, port)
    except OSError as exc:
        _fail(f"cannot listen on {opts.http_addr}: {exc.strerror}")
    # the workers bind the port the primary got (`--http-addr` may name port 0)
    bound_port = public.getsockname()[1]
    runtime_dir = make_runtime_dir()
    primary = unix_socket(runtime_dir / PRIMARY_SOCKET)
    worker_cli = {
        **cli_values,
        "http_addr": f"[{host}]:{bound_port}" if ":" in host else f"{host}:{bound_port}",
    }
    app.state.worker_pool = WorkerPool(workers, worker_cli, runtime_dir)
    app.state.runtime_dir = runtime_dir
    app.state.search_counts = SharedCounts(runtime_dir / SEARCH_COUNTS, 0)
    app.state.features_changes = SharedGeneration(runtime_dir / FEATURES_CHANGES)
    return [public, primary]


def _banner(opts: Options, workers: int = 1) -> str:
    host, port = opts.host_port
    scheme = "https" if opts.ssl_enabled else "http"
    shown_host = f"[{host}]" if ":" in host else host
    return "\n".join(
        (
            f"hanzo-engine {__version__} (Meilisearch API {MEILISEARCH_COMPAT_VERSION})",
            f"Config file path: {opts.config_file_path if opts.config_file_path is not None else 'none'}",
            f"Database path: {opts.db_path}",
            f"Server listening on: {scheme}://{shown_host}:{port}",
            f"HTTP processes: {workers}"
            + (" (one primary, the others serve searches)" if workers > 1 else ""),
            f"Environment: {opts.env}",
            f"Master key: {'set' if opts.master_key is not None else 'not set'}",
        )
    )


def _run_server(cli_values: dict[str, Any]) -> None:
    """Load and check the options, build the app, print the banner and serve until stopped."""
    try:
        opts = load_options(cli_values, os.environ, cwd=Path.cwd())
        warnings = check_startup(opts)
    except ConfigError as exc:
        _fail(str(exc))
    configure_logging(opts)

    # Imported here: the app pulls in the whole server stack, which config errors never need.
    import uvicorn

    from hanzo_engine.server.app import create_app, http_middleware
    from hanzo_engine.server.search_lane import SearchLane

    try:
        app = create_app(opts)
    except ConfigError as exc:
        _fail(str(exc))

    host, port = opts.host_port
    workers = opts.http_workers
    if workers > 1 and opts.ssl_enabled:
        logging.getLogger("hanzo_engine.server").warning(
            "TLS is served by a single process: --http-workers is ignored"
        )
        workers = 1
    sockets: list[socket.socket] | None = None
    if workers > 1:
        sockets = _start_workers(app, opts, cli_values, workers)

    click.echo(_banner(opts, workers))
    if opts.master_key is not None:
        click.echo(
            "A master key has been set. Requests to hanzo-engine won't be authorized unless you provide "
            "an authentication key."
        )
    for warning in warnings:
        click.echo(f"\n{warning}\n", err=True)

    ssl: dict[str, Any] = {}
    if opts.ssl_enabled:
        import ssl as ssl_module

        ssl = {"ssl_certfile": str(opts.ssl_cert_path), "ssl_keyfile": str(opts.ssl_key_path)}
        if opts.ssl_auth_path is not None:
            ssl["ssl_ca_certs"] = str(opts.ssl_auth_path)
            ssl["ssl_cert_reqs"] = (
                ssl_module.CERT_REQUIRED if opts.ssl_require_auth else ssl_module.CERT_OPTIONAL
            )
    config = uvicorn.Config(
        SearchLane(app, app, http_middleware()),
        host=host,
        port=port,
        log_level=_LEVELS[opts.log_level][1],
        access_log=False,
        lifespan="on",
        # Our handler (configure_logging) formats uvicorn's records too.
        log_config=None,
        **ssl,
    )
    # The modules and the app live as long as the server: out of the cyclic GC's reach, a full
    # collection walks only what the server creates afterwards.
    # Here, not in the app, so that tests and embedders creating apps keep their collections.
    gc.freeze()
    try:
        uvicorn.Server(config).run(sockets=sockets)
    except KeyboardInterrupt:
        # uvicorn re-raises the captured SIGINT after its graceful shutdown; exit like a shell would.
        raise SystemExit(130) from None


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__,
    prog_name="hanzo-engine",
    message=f"%(prog)s %(version)s (Meilisearch API {MEILISEARCH_COMPAT_VERSION})",
)
@_server_options
@click.pass_context
def main(ctx: click.Context, /, **params: Any) -> None:
    """A Meilisearch-compatible search engine. Without a command, runs the server."""
    typed = _typed_values(ctx, params)
    if ctx.invoked_subcommand is None:
        _run_server(typed)
    elif ctx.invoked_subcommand == "serve":
        ctx.obj = typed  # `hanzo-engine --db-path x serve` keeps the flags given before `serve`
    elif typed:
        raise click.UsageError(f"server options cannot be used with `{ctx.invoked_subcommand}`")


@main.command()
@_server_options
@click.pass_context
def serve(ctx: click.Context, /, **params: Any) -> None:
    """Run the server (the default command)."""
    before = ctx.obj if isinstance(ctx.obj, dict) else {}
    _run_server({**before, **_typed_values(ctx, params)})


@main.group()
@click.option(
    "--db-path",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("data.ms/"),
    show_default=True,
    help="Database directory to work on (the server must not be writing to it unless the command says so).",
)
@click.pass_context
def admin(ctx: click.Context, db_path: Path) -> None:
    """Offline maintenance commands (Meilisearch's meilitool)."""
    ctx.obj = {"db_path": db_path}


from .maintenance import register as _register_admin_commands  # noqa: E402  (the commands need `admin`)

_register_admin_commands(admin)
