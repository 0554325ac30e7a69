"""`distill mcp`: serve a project's memory to MCP clients, over stdio or streamable HTTP.

The database and the models are the CLI's global options, as for every command. Over
stdio the project is this command's (`--project`, `DISTILL_PROJECT`), never the model's
choice.

Over HTTP each request is authenticated by the HTTP API's keys (`distill keys create`) and
acts on its key's project; an admin key names one with `/mcp?project=P` (see
`distill.service.mcp_access`). On a database where no key was ever made, a server bound to
loopback serves every local caller on `--project`, as stdio would; on any other address it
refuses to start while the database has no active key, as `distill serve` does: without
keys, it would serve a project to the network.
"""

from __future__ import annotations

import ipaddress
from importlib.metadata import version

import click

from distill.errors import MissingDependency
from distill.memory import Memory
from distill.service.api_keys import key_store
from distill.service.terminal import err, memory, port_free

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


def _bare(ctx: click.Context, param: click.Parameter, host: str) -> str:
    return host.strip("[]")


@click.command("mcp")
@click.option(
    "--project",
    envvar="DISTILL_PROJECT",
    show_envvar=True,
    default="default",
    show_default=True,
    help="The project every tool works on over stdio, and over HTTP while the database has "
    "no keys (the model cannot choose another). With keys, a request acts on its key's.",
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
    callback=_bare,
    help="HTTP: the interface to listen on; another than loopback needs an API key in "
    "the database (distill keys create --project P).",
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
    resolve_conflict, pin_memory. Over HTTP the endpoint is http://HOST:PORT/mcp and each
    request carries an API key (Authorization: Bearer KEY, or X-API-Key: KEY) that decides
    its project; an admin key connects to /mcp?project=P. Without any key in the database
    it serves on loopback only, on --project."""
    try:
        from distill.service.mcp_server import build_server
    except ImportError as exc:
        raise MissingDependency.extra("the MCP server needs the MCP SDK", "mcp") from exc
    # The protocol owns stdout; the server's own log goes to stderr, warnings unless -v.
    level = "INFO" if ctx.obj["verbose"] else "WARNING"
    with memory(ctx, with_llm=True) as mem:
        if transport == "stdio":
            build_server(mem, project, version("distill"), level).run("stdio")
            return
        _serve_http(mem, project, host, port, level)


def _serve_http(mem: Memory, project: str, host: str, port: int, level: str) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from distill.service.mcp_access import KeyedEndpoint
    from distill.service.mcp_server import build_server

    on_loopback = loopback(host)
    keys = key_store(mem.store).count_keys()
    if not on_loopback and not keys.active:
        raise click.UsageError(
            f"refusing to serve MCP on {host} without API keys: anyone who reaches it could "
            "read and erase a project. Make a key first (distill keys create --project P), "
            "or listen on 127.0.0.1"
        )
    port_free(host, port, "distill mcp")
    server = build_server(mem, project, version("distill"), level, over_http=True)
    shown = f"[{host}]" if ":" in host else host
    # On loopback only this machine's names are served (a web page cannot reach the server
    # through a DNS name of its own); elsewhere the keys are what protects it.
    security = (
        TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", f"{shown}:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
        if on_loopback
        else None
    )
    app = KeyedEndpoint(
        server.streamable_http_app(
            streamable_http_path=HTTP_PATH, host=host, transport_security=security
        ),
        mem.store,
        project,
        loopback=on_loopback,
    )
    err.print(f"distill mcp: http://{shown}:{port}{HTTP_PATH}", markup=False)
    if keys.made:
        err.print("each request acts on the project of its API key", markup=False)
    else:
        err.print(
            f"warning: no API keys yet, so every caller on this machine acts on project "
            f"{project!r}; the first `distill keys create` ends this",
            markup=False,
        )
    uvicorn.run(app, host=host, port=port, log_level=level.lower())
