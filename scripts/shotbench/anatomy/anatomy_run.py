"""`shotbench anatomy`: open one object N times through each backend and say where the time goes.

Per backend, three runs of `shotbench.anatomy.probe` in the backend's own environment:
1. clean: the timings (process-cold first open, warm opens, first read, one open reused
   across every signal) and the client's own request counts;
2. under strace: per open, CA-bundle loads and their time, time before connecting,
   connect, HEAD, first GET and what follows the last request (shares of a slowed run);
3. ROS3 only, in a private mount namespace whose system CA bundle holds one certificate:
   the same warm opens, so the cost of loading the bundle is measured, not inferred.
`shotbench anatomy` (commands/anatomy.py) writes anatomy.json into the output folder and prints a table.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from shotbench.diskspace import atomic_write
from shotbench.errors import UserError


def _probe_cmd(python: Path, backend: str, bucket: str, key: str, size: int, opens: int) -> list[str]:
    return [
        str(python),
        "-m",
        "shotbench.anatomy.probe",
        "--backend",
        backend,
        "--bucket",
        bucket,
        "--key",
        key,
        "--size",
        str(size),
        "--opens",
        str(opens),
    ]


def _run(cmd: list[str], env: dict[str, str], what: str) -> dict[str, Any]:
    from shotbench.redact import credentials_in, scrub

    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = scrub(proc.stderr.strip()[-400:], credentials_in(env))
        raise UserError(
            f"the anatomy probe failed for {what} ({tail}); check the backend with `make envs` and the endpoint."
        )
    return json.loads(lines[-1])


def one_cert_bundle(folder: Path) -> Path:
    """The first certificate of the system bundle, alone (a valid, minimal trust store)."""
    from shotbench.store.tls import SYSTEM_CA

    text = Path(SYSTEM_CA).read_text()
    end = text.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----")
    start = text.rindex("-----BEGIN CERTIFICATE-----", 0, end)
    path = folder / "one-cert.crt"
    path.write_text(text[start:end] + "\n")
    return path


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 3) if known else None


def summarize(clean: dict[str, Any], traced: list[dict[str, Any]], small_ca: dict[str, Any] | None) -> dict[str, Any]:
    """Cold vs warm, per-phase medians over warm opens, and the two remedies, for one backend."""
    opens = clean["opens"]
    warm = opens[1:] or opens
    per_open = _median([o["open_ms"] + o["first_read_ms"] + o["close_ms"] for o in warm])
    out: dict[str, Any] = {
        "setup_ms": clean["setup_ms"],
        "cold_open_ms": opens[0]["open_ms"],
        "warm_open_ms": _median([o["open_ms"] for o in warm]),
        "warm_first_read_ms": _median([o["first_read_ms"] for o in warm]),
        "gets_per_open": _median([o["gets"] for o in warm]),
        "heads_per_open": _median([o["heads"] for o in warm]),
        "bytes_per_open": _median([o["bytes"] for o in warm]),
        "meter": clean.get("meter", ""),
        "signals": clean["signals"],
        "one_open_per_signal_ms": per_open,
        "one_open_all_signals_ms_per_signal": round(clean["reuse"]["ms"] / max(clean["signals"], 1), 3),
    }
    if traced:
        warm_t = traced[1:] or traced
        keys = [
            "total_ms",
            "ca_bundle_ms",
            "ca_bundle_loads",
            "before_connect_ms",
            "connect_ms",
            "head_ms",
            "first_get_ms",
            "after_last_request_ms",
            "requests",
        ]
        out["strace_cold"] = traced[0]
        out["strace_warm_median"] = {k: _median([t.get(k) for t in warm_t]) for k in keys}
    if small_ca is not None:
        out["warm_open_ms_one_cert_bundle"] = _median(
            [o["open_ms"] for o in (small_ca["opens"][1:] or small_ca["opens"])]
        )
    return out


def run_anatomy(
    backends: list[str], s3: Any, bucket: str, key: str, size: int, opens: int, strace: bool = True, say: Any = print
) -> dict[str, Any]:
    from shotbench import which
    from shotbench.anatomy.strace import TRACE, phases
    from shotbench.backends import registry
    from shotbench.backends.base import child_env
    from shotbench.backends.meters import endpoint_port
    from shotbench.store import tls as _tls

    port, _ = endpoint_port(s3.endpoint_url)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="shotbench-anatomy-") as tmp:
        folder = Path(tmp)
        for name in backends:
            cls = registry.get(name)
            python = cls.python()
            if not Path(python).exists():
                raise UserError(f"the Python of backend {name} ({python}) does not exist; run `make envs`.")
            env = child_env({**s3.env_vars(), **cls.process_env(s3)})
            cmd = _probe_cmd(python, name, bucket, key, size, opens)
            ros3 = name.startswith("ros3")
            private_ca = getattr(s3, "ca_bundle", None)

            def wrap(c: list[str]) -> list[str]:
                return _tls.with_system_bundle(_tls.trusting(private_ca, folder), c) if ros3 and private_ca else c  # noqa: B023 - called within this iteration only

            say(f"  {name}: clean run ({opens} opens)")
            clean = _run(wrap(cmd), env, name)
            traced: list[dict[str, Any]] = []
            if strace:
                say(f"  {name}: under strace")
                log = folder / f"{name}.strace"
                _run(
                    wrap(
                        [
                            str(which.strace()),
                            "-f",
                            "-ttt",
                            "-T",
                            "-yy",
                            "-s",
                            "16",
                            "-e",
                            f"trace={TRACE}",
                            "-o",
                            str(log),
                            *cmd,
                        ]
                    ),
                    env,
                    f"{name} under strace",
                )
                traced = phases(log, port, opens)
                log.unlink()  # request lines can name the access key: never kept
            small = None
            if ros3:
                say(f"  {name}: with a one-certificate system CA bundle (private mount namespace)")
                ca = Path(private_ca) if private_ca else one_cert_bundle(folder)
                small = _run(_tls.with_system_bundle(ca, cmd), env, f"{name} with a small CA bundle")
            results[name] = {
                "summary": summarize(clean, traced, small),
                "clean": clean,
                "strace": traced,
                "one_cert_bundle": small,
            }
    return results


def table(results: dict[str, Any]) -> str:
    """One line per backend: cold/warm open, requests and bytes per open, CA cost, remedies."""
    head = (
        f"{'backend':<10} {'cold ms':>8} {'warm ms':>8} {'read ms':>8} {'GET/op':>6} {'HEAD/op':>7} "
        f"{'MB/op':>6} {'CA/op':>5} {'CA ms':>6} {'pre-conn':>8} {'conn':>6} {'HEAD':>6} {'GET':>6} "
        f"{'1-cert':>7} {'sig/open':>8} {'sig/reuse':>9}"
    )
    lines = [head]

    def f(v: Any, fmt: str = ".1f") -> str:
        return "-" if v is None else format(v, fmt)

    for name, r in results.items():
        s = r["summary"]
        st = s.get("strace_warm_median", {})
        lines.append(
            f"{name:<10} {f(s['cold_open_ms']):>8} {f(s['warm_open_ms']):>8} {f(s['warm_first_read_ms']):>8} "
            f"{f(s['gets_per_open'], '.0f'):>6} {f(s['heads_per_open'], '.0f'):>7} "
            f"{f((s['bytes_per_open'] or 0) / 1e6, '.2f'):>6} {f(st.get('ca_bundle_loads'), '.0f'):>5} "
            f"{f(st.get('ca_bundle_ms')):>6} {f(st.get('before_connect_ms')):>8} {f(st.get('connect_ms')):>6} "
            f"{f(st.get('head_ms')):>6} {f(st.get('first_get_ms')):>6} "
            f"{f(s.get('warm_open_ms_one_cert_bundle')):>7} {f(s['one_open_per_signal_ms']):>8} "
            f"{f(s['one_open_all_signals_ms_per_signal']):>9}"
        )
    lines.append(
        "ms are medians of warm opens; CA/op, CA ms, pre-conn, conn, HEAD, GET come from a run under "
        "strace (slowed); 1-cert = warm open with a one-certificate system CA bundle; "
        "sig/open = ms per signal with one open per signal, sig/reuse = with one open for all signals."
    )
    return "\n".join(lines)


def write(out: Path, results: dict[str, Any], s3: Any, bucket: str, key: str, size: int, opens: int) -> Path:
    """anatomy.json: the results with the endpoint (never credentials), object, machine and load."""
    from shotbench.provenance import machine_info, utc_iso

    doc = {
        "created": utc_iso(),
        "endpoint": s3.public()["endpoint"],
        "tls": bool(getattr(s3, "ca_bundle", None)),
        "object": {"bucket": bucket, "key": key, "size": size},
        "opens": opens,
        "machine": machine_info(),
        "load_average": list(os.getloadavg()),
        "backends": results,
    }
    path = Path(out) / "anatomy.json"
    atomic_write(path, json.dumps(doc, indent=1) + "\n")
    return path


def after_bench(run: Path, backends: list[str], workload: Any, opens: int, say: Any) -> Path | None:
    """`bench --anatomy`: the anatomy of the run's S3 backends on its first file, into the run folder."""
    from shotbench.backends import registry

    names = [b for b in backends if registry.get(b).reads_hdf5 and registry.get(b).needs_s3]
    if not names or workload.s3 is None or not workload.files:
        return None
    first = workload.files[0]
    say(f"anatomy of an open ({', '.join(names)}; {opens} opens of {first.key})")
    results = run_anatomy(names, workload.s3, workload.source.bucket, first.key, int(first.size), opens, say=say)
    say(table(results))
    return write(run, results, workload.s3, workload.source.bucket, first.key, int(first.size), opens)


def target(data: str | None, tls: bool, say: Any) -> tuple[Any, str, str, int, Any]:
    """(S3 settings, bucket, key, size, context manager keeping the server up)."""
    import contextlib

    from shotbench.paths import state_dir
    from shotbench.store.embedded import resolve_s3config
    from shotbench.store.s3 import list_shot_files, parse_location

    if data:
        loc = parse_location(data)
        if loc.kind != "s3":
            raise UserError("--data must be an s3://bucket/key URL of one HDF5 shot file.")
        s3 = resolve_s3config()  # the S3 `ls` would list it from
        objs = list_shot_files(loc, s3)
        if not objs:
            raise UserError(f"no object found at {data}; name one HDF5 shot file.")
        return s3, loc.bucket, objs[0].key, int(objs[0].size), contextlib.nullcontext()
    from shotbench.hdf5.synthesis import make_dataset
    from shotbench.store.embedded import embedded_server
    from shotbench.store.staging import stage

    shots = state_dir() / "anatomy-shots"
    make_dataset(shots, shots=1, seed=0)
    stack = contextlib.ExitStack()
    info = stack.enter_context(
        embedded_server(state_dir() / ("anatomy-server-tls" if tls else "anatomy-server"), tls=tls)
    )
    s3 = info.s3config()
    loc = parse_location("s3://anatomy/shots/")
    stage(shots, loc, s3, jobs=2, progress=False, create_bucket=True)
    obj = list_shot_files(loc, s3)[0]
    say(f"embedded S3 server: {info.endpoint_url}; object s3://{loc.bucket}/{obj.key} ({obj.size} bytes)")
    return s3, loc.bucket, obj.key, int(obj.size), stack
