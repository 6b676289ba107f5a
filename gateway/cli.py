"""The `relaydesk` command line."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence

from aiohttp import web

from gateway.config import ConfigError, Settings, load_settings
from gateway.logs import configure_logging


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    from gateway.app import create_app

    host = args.host or settings.host
    port = args.port or settings.port
    logging.getLogger("relaydesk").info(
        "relaydesk listening", extra={"fields": {"url": f"http://{host}:{port}"}}
    )
    web.run_app(create_app(settings), host=host, port=port, access_log=None, print=None)
    return 0


def _migrate(settings: Settings, args: argparse.Namespace) -> int:
    from gateway.storage.engine import make_engine
    from gateway.storage.migrate import current_revision, upgrade

    async def run() -> str | None:
        engine = make_engine(settings.database_url)
        try:
            await upgrade(engine, args.revision)
            return await current_revision(engine)
        finally:
            await engine.dispose()

    revision = asyncio.run(run())
    print(f"database at revision {revision}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relaydesk", description="Multichannel chatbot gateway with budgeted context."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the gateway (HTTP, webhooks, web chat)")
    serve.add_argument("--host", help="bind address (default RELAYDESK_HOST)")
    serve.add_argument("--port", type=int, help="port (default RELAYDESK_PORT)")
    serve.set_defaults(run=_serve)

    migrate = commands.add_parser("migrate", help="upgrade the database schema")
    migrate.add_argument("--revision", default="head", help="target revision (default head)")
    migrate.set_defaults(run=_migrate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"relaydesk: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level)
    result: int = args.run(settings, args)
    return result


if __name__ == "__main__":
    sys.exit(main())
