"""`distill mcp`: serve a project's memory to MCP clients, over stdio or streamable HTTP.

The database and the models are the CLI's global options, as for every command; the
project is this command's (`--project`, `DISTILL_PROJECT`), never the model's choice.

Over HTTP the server binds to the loopback interface and refuses any other: a key store
for the service is what would make a wider bind safe, and MCP over HTTP will take its
keys from it. Until then any local process may call the tools, as any local process may
open the database file.
"""

from __future__ import annotations

import ipaddress
from importlib.metadata import version

import click

from distill.errors import MissingDependency
from distill.service.terminal import err, memory

DEFAULT_PORT = 8421  # unassigned by IANA
HTTP_PATH = "/mcp"  # the streamable HTTP endpoint, the path MCP clients expect by default


def loopback(host: str) -> bool:
    """Whether `host` names the loopback interface (localhost, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _loopback_only(ctx: click.Context, param: click.Parameter, host: str) -> str:
    if not loopback(host):
        raise click.BadParameter(
            f"{host} is not a loopback address: over HTTP the MCP server has no keys yet, so "
            "it listens on 127.0.0.1 (or ::1, localhost) only; use stdio, or reach it "
            "through an SSH tunnel or a proxy that authenticates",
            ctx,
            param,
        )
    return host.strip("[]")


@click.command("mcp")
@click.option(
    "--project",
    envvar="DISTILL_PROJECT",
    show_envvar=True,
    default="default",
    show_default=True,
    help="The project every tool works on (the model cannot choose another).",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a client that starts the server; http for streamable HTTP.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    callback=_loopback_only,
    help="HTTP: the interface to listen on (loopback only).",
)
@click.option(
    "--port",
    default=DEFAULT_PORT,
    show_default=True,
    type=click.IntRange(1, 65535),
    help="HTTP: the port to listen on.",
)
@click.pass_context
def mcp_cmd(ctx: click.Context, project: str, transport: str, host: str, port: int) -> None:
    """Serve the memory of one project to MCP clients (Claude Desktop, Cursor, agents):
    add_memory, search_memories, get_memory, list_memories, delete_memory (retracts),
    delete_all_memories (erases a subject), get_memory_history, list_conflicts,
    resolve_conflict, pin_memory. Over HTTP the endpoint is http://HOST:PORT/mcp."""
    try:
        from distill.service.mcp_server import build_server
    except ImportError as exc:
        raise MissingDependency(
            "the MCP server needs the MCP SDK: pip install 'distill[mcp]'"
        ) from exc
    # The protocol owns stdout; the server's own log goes to stderr, warnings unless -v.
    level = "INFO" if ctx.obj["verbose"] else "WARNING"
    with memory(ctx, with_llm=True) as mem:
        server = build_server(mem, project, version("distill"), level)
        if transport == "stdio":
            server.run("stdio")
            return
        shown = f"[{host}]" if ":" in host else host
        err.print(f"distill mcp: project {project!r} on http://{shown}:{port}{HTTP_PATH}")
        server.run("streamable-http", host=host, port=port, streamable_http_path=HTTP_PATH)
