"""HTTP-level faults on purpose: the fault-injecting proxy in front of the real embedded server,
read through by real clients (boto3, obstore, s3fs, plain HTTP on a presigned URL), and one
tiny `bench --faults slowdown-5pc` run with real Dask workers."""

from __future__ import annotations

import csv
import http.client
import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from shotbench.processes import terminate
from shotbench.store import faultproxy as fp
from shotbench.store.s3 import S3Config
from support.bench import assert_one_sentence, refuse
from support.bench import state_env as _env
from support.runfolder import bench_proc, only_run

BIG = 24 * 1024 * 1024


# --- the decision: seeded, per request, at the given rate (no server) ---


def _decisions(faults: fp.HttpFaults, requests: list[tuple[str, str, str]]) -> list[str | None]:
    d = fp.Decider(faults)
    return [d.decide(*r) for r in requests]


REQUESTS = [("GET", f"/b/shots/{i % 7}.h5", f"bytes={i * 4096}-{i * 4096 + 4095}") for i in range(4000)]


def test_same_seed_same_faults_other_seed_other_faults() -> None:
    faults = fp.HttpFaults((("slowdown", 0.1), ("truncated", 0.1)), seed=7)
    first = _decisions(faults, REQUESTS)
    assert first == _decisions(faults, REQUESTS)
    assert first != _decisions(replace(faults, seed=8), REQUESTS)


def test_decision_does_not_depend_on_the_order_of_other_requests() -> None:
    """Concurrent clients interleave differently from run to run; each request's fate stays."""
    faults = fp.HttpFaults((("internal", 0.3),))
    forward = dict(zip(REQUESTS, _decisions(faults, REQUESTS)))
    backward = dict(zip(REQUESTS[::-1], _decisions(faults, REQUESTS[::-1])))
    assert forward == backward


def test_rates_are_kept_and_a_retry_gets_a_fresh_draw() -> None:
    faults = fp.HttpFaults((("slowdown", 0.05), ("internal", 0.03)))
    got = _decisions(faults, REQUESTS)
    assert 0.04 < got.count("slowdown") / len(got) < 0.06
    assert 0.02 < got.count("internal") / len(got) < 0.04
    same = _decisions(fp.HttpFaults((("slowdown", 0.5),)), [("GET", "/b/k", "bytes=0-9")] * 400)
    assert 150 < same.count("slowdown") < 250  # the same request, retried, is not doomed
    assert set(_decisions(fp.HttpFaults((("slowdown", 0.0),)), REQUESTS)) == {None}


def test_methods_limit_what_may_be_hit_and_presigned_dates_do_not_count() -> None:
    only_get = fp.HttpFaults((("slowdown", 1.0),), methods=("GET",))
    assert _decisions(only_get, [("HEAD", "/b/k", ""), ("GET", "/b/k", "")]) == [None, "slowdown"]
    assert fp.request_key("GET", "/b/k?X-Amz-Date=1&X-Amz-Signature=a&partNumber=2", "") == fp.request_key(
        "GET", "/b/k?partNumber=2&X-Amz-Date=2&X-Amz-Signature=b", ""
    )
    with pytest.raises(ValueError):
        fp.HttpFaults((("slowdown", 0.7), ("internal", 0.7)))


def test_a_case_is_credited_its_own_faults_and_a_resume_keeps_earlier_ones(tmp_path: Path) -> None:
    """Counts read around each case from the proxy's stats file; the raw-get ceiling's are apart."""
    from shotbench.bench.faultcount import InjectedFaults, summary_lines

    stats = tmp_path / fp.STATS_FILE

    def proxy_counted(answered: int = 0, **kinds: int) -> None:
        fp.write_stats(stats, {"injected": kinds, fp.ANSWERED_GETS: answered})

    proxy_counted(slowdown=2, answered=1)  # staging
    faults = InjectedFaults(stats)
    with faults.case("c1"):
        proxy_counted(slowdown=5, truncated=1, answered=3)
        with faults.ceiling():
            proxy_counted(slowdown=6, truncated=1, answered=4)
    proxy_counted(slowdown=7, truncated=1, answered=4)  # a health check
    with faults.case("c2"):
        pass
    rec = faults.record()
    assert rec["by_case"] == {
        "c1": {"slowdown": 3, "internal": 0, "truncated": 1, "answered-gets": 2},
        "c2": {"slowdown": 0, "internal": 0, "truncated": 0, "answered-gets": 0},
    }
    assert rec["raw_get_ceiling"]["slowdown"] == 1 and rec["total"]["slowdown"] == 7
    proxy_counted(internal=1)  # the proxy of the resumed session starts from zero
    resumed = InjectedFaults(stats, rec)
    with resumed.case("c3"):
        proxy_counted(internal=4)
    again = resumed.record()
    assert set(again["by_case"]) == {"c1", "c2", "c3"} and again["by_case"]["c3"]["internal"] == 3
    assert again["total"] == {"slowdown": 7, "internal": 4, "truncated": 1, "answered-gets": 4}
    lines = summary_lines(again, [{"case_id": "c1", "backend": "obstore"}, {"case_id": "c3", "backend": "obstore"}])
    assert "  obstore    3 × 503 SlowDown, 3 × 500 InternalError, 1 truncated" in lines
    assert InjectedFaults().record() is None


# --- the proxy in front of the real server ---


@pytest.fixture(scope="module")
def big_object(s3_server, s3_bucket: str) -> tuple[str, bytes]:
    data = bytes(range(251)) * (BIG // 251 + 1)
    data = data[:BIG]
    s3_server.s3config().boto3_client().put_object(Bucket=s3_bucket, Key="faults/big.bin", Body=data)
    return "faults/big.bin", data


@pytest.fixture
def proxy(s3_server, tmp_path: Path) -> Iterator[Callable[..., tuple[S3Config, fp.FaultProxyInfo]]]:
    """Start a fault proxy in front of the session's server; S3 settings that go through it."""
    started: list[int] = []

    def make(
        *rates: tuple[str, float], seed: int = 1, methods: tuple[str, ...] = ()
    ) -> tuple[S3Config, fp.FaultProxyInfo]:
        state = tmp_path / f"proxy{len(started)}"
        state.mkdir()
        info = fp.start(state, s3_server.upstream_port, fp.HttpFaults(tuple(rates), methods, seed), private=True)
        started.append(info.pid)
        return replace(s3_server.s3config(), endpoint_url=f"http://127.0.0.1:{info.port}"), info

    yield make
    for pid in started:
        terminate(pid, fp.MODULE)


def _proxy_rss_peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_at_rate_zero_every_client_reads_identical_bytes(proxy, staged_shots, big_object, s3_bucket: str) -> None:
    """Signed requests whose Host is the proxy's address pass (headers forwarded unchanged),
    range GETs of many MB stream through without the proxy holding the object."""
    import obstore

    from shotbench.backends.fsspec import make_filesystem
    from shotbench.backends.obstore import make_store

    cfg, info = proxy(("slowdown", 0.0))
    key, data = big_object
    before = _proxy_rss_peak_kib(info.pid)
    s3 = cfg.boto3_client()
    assert s3.get_object(Bucket=s3_bucket, Key=key)["Body"].read() == data
    assert s3.get_object(Bucket=s3_bucket, Key=key, Range="bytes=1000-9000999")["Body"].read() == data[1000:9001000]
    assert s3.head_object(Bucket=s3_bucket, Key=key)["ContentLength"] == BIG
    assert bytes(obstore.get_range(make_store(cfg, s3_bucket), key, start=5, end=BIG - 5)) == data[5:-5]
    loc, _, objs = staged_shots
    fs = make_filesystem(cfg)
    for o in objs:
        with fs.open(f"{loc.bucket}/{o.key}", "rb") as fh:
            assert fh.read() == s3_server_get(staged_shots, o.key)
    assert (_proxy_rss_peak_kib(info.pid) - before) * 1024 < BIG, "the proxy held a whole object in memory"
    assert fp.read_stats(info.stats) == {"slowdown": 0, "internal": 0, "truncated": 0}


def s3_server_get(staged, key: str) -> bytes:
    loc, cfg, _ = staged
    return cfg.boto3_client().get_object(Bucket=loc.bucket, Key=key)["Body"].read()


@pytest.mark.parametrize("kind,status,code", [("slowdown", 503, "SlowDown"), ("internal", 500, "InternalError")])
def test_error_answers_are_s3s(proxy, big_object, s3_bucket: str, kind: str, status: int, code: str) -> None:
    """boto3 sees S3's own error (code and status), after its retries; obstore gives up naming
    the status; every answer was counted."""
    import obstore
    from botocore.exceptions import ClientError

    from shotbench.backends.obstore import make_store

    cfg, info = proxy((kind, 1.0))
    with pytest.raises(ClientError) as err:
        cfg.boto3_client(retries=2).get_object(Bucket=s3_bucket, Key=big_object[0], Range="bytes=0-99")
    assert err.value.response["Error"]["Code"] == code
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    with pytest.raises(Exception) as oerr:
        obstore.get_range(make_store(cfg, s3_bucket), big_object[0], start=0, end=100)
    assert str(status) in str(oerr.value)
    counted = fp.read_stats(info.stats)[kind]
    assert counted >= 4  # boto3's 3 attempts (2 retries) and obstore's at least one


def test_error_body_is_the_s3_xml_and_head_gets_none(proxy, big_object, s3_bucket: str) -> None:
    cfg, info = proxy(("slowdown", 1.0))
    url = urlsplit(cfg.endpoint_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    conn.request("GET", f"/{s3_bucket}/{big_object[0]}")
    resp = conn.getresponse()
    body = resp.read()
    assert resp.status == 503 and resp.getheader("Content-Type") == "application/xml"
    assert b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message>" in body
    conn.request("HEAD", f"/{s3_bucket}/{big_object[0]}")
    head = conn.getresponse()
    assert head.status == 503 and head.read() == b""
    conn.close()
    # both answered by the proxy, only the GET is one the server's access log would have had
    assert fp.read_counts(info.stats) == {"slowdown": 2, "internal": 0, "truncated": 0, fp.ANSWERED_GETS: 1}


def test_truncated_body_ends_at_half_its_content_length(proxy, big_object, s3_bucket: str) -> None:
    """The declared length is the server's; the connection closes after half of it, and the
    bytes that did arrive are the object's own."""
    cfg, info = proxy(("truncated", 1.0))
    key, data = big_object
    url = cfg.boto3_client().generate_presigned_url("get_object", Params={"Bucket": s3_bucket, "Key": key})
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("GET", f"{parts.path}?{parts.query}", headers={"Range": "bytes=100-4000099"})
    resp = conn.getresponse()
    assert resp.status == 206 and resp.getheader("Content-Length") == "4000000"
    with pytest.raises(http.client.IncompleteRead) as short:
        resp.read()
    assert short.value.partial == data[100:2000100]
    conn.close()
    with pytest.raises(Exception, match="IncompleteRead|Connection broken"):
        cfg.boto3_client().get_object(Bucket=s3_bucket, Key=key)["Body"].read()
    assert fp.read_stats(info.stats)["truncated"] == 2


def test_same_seed_gives_the_same_failed_requests_against_the_server(proxy, big_object, s3_bucket: str) -> None:
    from botocore.exceptions import ClientError

    def failed(seed: int) -> list[int]:
        cfg, _ = proxy(("slowdown", 0.3), seed=seed)
        s3 = cfg.boto3_client(retries=0)  # one attempt per request
        out = []
        for i in range(40):
            try:
                s3.get_object(Bucket=s3_bucket, Key=big_object[0], Range=f"bytes={i * 1000}-{i * 1000 + 999}")[
                    "Body"
                ].read()
            except ClientError:
                out.append(i)
        return out

    first = failed(3)
    assert 2 < len(first) < 25
    assert failed(3) == first
    assert failed(4) != first


def test_http_faults_over_tls_are_refused_in_one_sentence(tmp_path: Path) -> None:
    proc = refuse(["--faults", "slowdown-5pc", "--tls"], tmp_path)
    assert_one_sentence(proc, tmp_path, "--tls")


@pytest.mark.server
def test_bench_slowdown_run_records_what_was_injected(shot_dir: Path, tmp_path: Path) -> None:
    """A tiny `--faults slowdown-5pc` run: it completes, every ok row is verified against the
    local copy, run.json holds the proxy's count per case, and the report prints it."""
    backends = ["fsspec", "obstore"]
    from shotbench.backends import registry

    if Path(registry.get("ros3-2.0").python()).exists():
        backends.append("ros3-2.0")
    (tmp_path / "c.toml").write_text(
        f'backends = {json.dumps(backends)}\nmodes = ["shots", "signals"]\nworkers = [1]\npage_buffers = [0]\n'
        "trials = 1\nshots = 2\nfile_size = 2000000\npage_size = 1000000\nsignals = 12\n"
    )
    proc = bench_proc(
        tmp_path / "runs",
        [
            "--config",
            str(tmp_path / "c.toml"),
            "--shots-dir",
            str(shot_dir),
            "--faults",
            "slowdown-5pc",
            "--keep-going",
        ],
        _env(tmp_path),
    )
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    assert "reliability under faults 'slowdown-5pc'" in out
    assert "faults injected by the HTTP proxy:" in out
    run = only_run(tmp_path / "runs")
    meta = json.loads((run / "run.json").read_text())
    with open(run / "workers.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["backend"] for r in rows} == set(backends)
    assert rows and all(r["verified"] == "yes" for r in rows if r["status"] == "ok")
    injected = meta["faults_injected"]
    assert set(injected["by_case"]) == {c["case_id"] for c in meta["plan"]}
    in_cases = sum(c["slowdown"] for c in injected["by_case"].values())
    assert 0 < in_cases <= injected["total"]["slowdown"] - injected["raw_get_ceiling"]["slowdown"]
    assert injected["total"]["internal"] == injected["total"]["truncated"] == 0


@pytest.mark.server
def test_a_profile_with_both_layers_chains_them_and_stops_them(tmp_path: Path, monkeypatch) -> None:
    """client -> toxiproxy (20 ms) -> fault proxy (GETs answered SlowDown) -> versitygw: a HEAD
    passes late, a GET gets S3's error, and stopping the server stops both proxies."""
    import time

    from botocore.exceptions import ClientError

    from shotbench.processes import pid_alive
    from shotbench.store import embedded as server
    from shotbench.store import network

    both = network.Profile(20, 0, http=fp.HttpFaults((("slowdown", 1.0),), methods=("GET",)))
    monkeypatch.setitem(network.NETWORK_PROFILES, "both-layers", both)
    state = tmp_path / "state"
    with server.embedded_server(state, network="both-layers") as info:
        rec = json.loads((state / "server.json").read_text())
        assert info.fault_stats is not None and rec["proxy_pid"] and rec["fault_proxy_pid"]
        direct = replace(info.s3config(), endpoint_url=f"http://127.0.0.1:{info.upstream_port}").boto3_client()
        direct.create_bucket(Bucket="both")
        direct.put_object(Bucket="both", Key="k", Body=b"x" * 1000)
        s3 = info.s3config().boto3_client(retries=0)
        t = time.perf_counter()
        assert s3.head_object(Bucket="both", Key="k")["ContentLength"] == 1000
        assert time.perf_counter() - t >= 0.015
        with pytest.raises(ClientError, match="SlowDown"):
            s3.get_object(Bucket="both", Key="k")
        assert fp.read_stats(info.fault_stats)["slowdown"] == 1
    assert not pid_alive(rec["fault_proxy_pid"], fp.MODULE) and not pid_alive(rec["proxy_pid"], "toxiproxy")


def test_a_dead_server_behind_the_proxy_gets_no_answer(tmp_path: Path) -> None:
    """No HTTP error in its place: the health check between cases must see a dead server as dead."""
    from shotbench.bench.runner import answers
    from shotbench.processes import free_port

    info = fp.start(tmp_path, free_port(), fp.HttpFaults(()), private=True)
    try:
        with pytest.raises(OSError):
            answers(f"http://127.0.0.1:{info.port}", 5)
    finally:
        terminate(info.pid, fp.MODULE)
