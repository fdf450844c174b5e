"""`shotbench server`: install, start, stop and describe the embedded S3 server."""

from __future__ import annotations

import argparse
import time

from shotbench.store import embedded as server
from shotbench.store import network

# how `store.embedded.resolve_s3config` chooses, said once for every command that takes an s3:// location
_CHAIN = (
    "AWS settings from the environment (AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_PROFILE, "
    "instance roles) when any are set; otherwise the running embedded server (`shotbench server start`)."
)
WHICH_S3 = "Which S3: with --embedded, the embedded server (started if needed); otherwise " + _CHAIN
WHICH_S3_DATA = "An s3:// --data is read where `shotbench ls` lists it: " + _CHAIN


def _port(text: str) -> int:
    """A TCP port, or 0 for a free one: anything else is refused before versitygw is started."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port; give 1-65535, or leave it out for a free one")
    return port


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "server",
        help="the embedded S3 server (versitygw on 127.0.0.1)",
        description="Manage the embedded S3 server: a real versitygw process on 127.0.0.1 with random "
        "credentials kept (mode 0600) in the state folder (.shotbench/, or $SHOTBENCH_STATE).",
    )
    sub = p.add_subparsers(dest="server_command", metavar="ACTION", required=True)
    inst = sub.add_parser(
        "install",
        help="build versitygw into ~/.cache/shotbench/bin (cached); toxiproxy is built when a run needs it",
    )
    inst.add_argument(
        "--all", action="store_true", help="also toxiproxy (server and cli), which network and fault profiles use"
    )
    inst.set_defaults(func=_install)
    start = sub.add_parser("start", help="start it (or show the running one); prints endpoint and credentials file")
    start.add_argument("--port", type=_port, default=0, help="port to listen on, 1-65535 (default: a free one)")
    start.add_argument(
        "--tls", action="store_true", help="serve https with a certificate from a private CA made in the state folder"
    )
    start.add_argument(
        "--network",
        default="none",
        choices=list(network.NETWORK_PROFILES),
        help="put toxiproxy in front with this latency profile (default: none)",
    )
    start.set_defaults(func=_start)
    sub.add_parser("stop", help="stop it (buckets and credentials are kept)").set_defaults(func=_stop)
    sub.add_parser("status", help="is it running, and where").set_defaults(func=_status)


def _install(args: argparse.Namespace) -> int:
    from shotbench import gobuild as tools

    # toxiproxy only serves runs with a network or fault profile, which build it on first use
    # (10 s cold): the default run needs the server alone
    builds = (tools.versitygw, tools.toxiproxy_server, tools.toxiproxy_cli) if args.all else (tools.versitygw,)
    for build in builds:
        started = time.monotonic()
        path = build()
        print(f"{path.name:28s} {path}  ({time.monotonic() - started:.1f} s)")
    return 0


def _describe(info: server.ServerInfo) -> None:
    pub = info.public()
    print(f"endpoint     {pub['endpoint']}")
    print(f"region       {pub['region']}")
    print(f"access key   {pub['access_key']}")
    print(f"credentials  {server.credentials_file(info.state)} (mode 0600)")
    print(f"network      {pub['network']}")
    print(f"data         {pub['root']}")
    print(f"pid          {pub['pid']}")
    print(f"use it:      source {server.env_file(info.state)}   # exports AWS_* for boto3, s3fs, ROS3, aws-cli")


def _start(args: argparse.Namespace) -> int:
    was = server.status()
    info = server.start(port=args.port, network=args.network, tls=args.tls)
    print("embedded S3 server " + ("already running" if was else "started"))
    _describe(info)
    return 0


def _stop(args: argparse.Namespace) -> int:
    print("embedded S3 server stopped" if server.stop() else "embedded S3 server was not running")
    return 0


def _status(args: argparse.Namespace) -> int:
    info = server.status()
    if info is None:
        print("embedded S3 server is not running (start it with `shotbench server start`)")
        return 0  # a question answered, not a failure (keeps `make server-status` quiet)
    print("embedded S3 server running")
    _describe(info)
    return 0
