"""`shotbench server|stage|ls`: the embedded S3 server, uploading shot files, listing them."""

from __future__ import annotations

import argparse
import sys
import time

from shotbench.errors import UserError
from shotbench.store import network, server
from shotbench.store.s3 import S3Config, list_shot_files, parse_location

WHICH_S3 = (
    "Which S3: with --embedded, the embedded server (started if needed); otherwise AWS settings from "
    "the environment (AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_PROFILE, instance "
    "roles) when any are set; otherwise the running embedded server (`shotbench server start`)."
)


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
    start.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
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

    st = subparsers.add_parser(
        "stage",
        help="upload a folder of shot files to s3://bucket/prefix (skips what is already there)",
        description="Upload every file of SRC to DEST through the S3 API with parallel, multipart-capable "
        "uploads; objects already there with the same size and ETag are skipped. " + WHICH_S3,
    )
    st.add_argument("src", metavar="SRC", help="local folder of shot files (e.g. data/shots)")
    st.add_argument("dest", metavar="DEST", help="s3://bucket/prefix")
    st.add_argument("--jobs", "-j", type=int, default=8, help="concurrent uploads, shared by all files (default: 8)")
    st.add_argument("--embedded", action="store_true", help="use the embedded server, starting it if needed")
    st.add_argument(
        "--create-bucket",
        action="store_true",
        help="create the bucket if missing (always done on the embedded server, never silently elsewhere)",
    )
    st.add_argument("--no-progress", action="store_true", help="no progress bar")
    st.set_defaults(func=_stage)

    ls = subparsers.add_parser(
        "ls",
        help="list the shot files of a data location (s3://bucket/prefix or a folder)",
        description="List the shot files (.h5 and .hdf5) of a location with their sizes. " + WHICH_S3,
    )
    ls.add_argument("location", metavar="LOCATION", help="s3://bucket/prefix or a local folder")
    ls.add_argument("--embedded", action="store_true", help="use the embedded server, starting it if needed")
    ls.set_defaults(func=_ls)


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


def _config(embedded: bool) -> S3Config:
    return server.resolve_s3config(embedded=embedded)


def _stage(args: argparse.Namespace) -> int:
    from shotbench.store.stage import local_files, stage

    loc = parse_location(args.dest)
    if loc.kind != "s3":
        raise UserError(f"the destination '{args.dest}' is not an S3 location; give s3://bucket/prefix.")
    local_files(args.src)  # a missing source is the first thing to say, before any S3 question
    cfg = _config(args.embedded)
    print(f"staging {args.src} -> {loc.uri()} at {cfg.public()['endpoint']} ({args.jobs} jobs)", file=sys.stderr)
    summary = stage(
        args.src,
        loc,
        cfg,
        jobs=args.jobs,
        progress=not args.no_progress,
        create_bucket=True if args.create_bucket else None,
    )
    print(summary.line(loc.uri()))
    return 0


def _ls(args: argparse.Namespace) -> int:
    loc = parse_location(args.location)
    cfg = _config(args.embedded) if loc.kind == "s3" else None
    objs = list_shot_files(loc, cfg)
    for o in objs:
        print(f"{o.size:>14,d}  {o.key}")
    total = sum(o.size for o in objs)
    print(f"{len(objs)} shot files, {total / 1e6:.1f} MB in {loc.uri()}", file=sys.stderr)
    return 0
