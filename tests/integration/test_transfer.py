"""The transfer benchmark against a real embedded S3 server, on files of a few hundred KiB."""

from __future__ import annotations

import csv
import json
import uuid
from pathlib import Path

import pandas as pd
import pytest

from shotbench.cli import main as cli_main
from shotbench.transfer import delivery as verify
from shotbench.transfer import results as analysis
from shotbench.transfer.cases import Row, ensure_files, parse_rows, size_label
from shotbench.transfer.execute import Case, RunContext, TransferPlan, case_order, run_transfer, seed_source
from shotbench.transfer.programs import Target, make_tools
from shotbench.units import KiB, MiB
from support.serverdisk import flip_stored_byte

TINY = [Row(3, 64 * KiB), Row(1, 192 * KiB)]


def _ctx(tmp_path: Path, s3_server, bucket: str) -> RunContext:
    cfg = s3_server.s3config()
    return RunContext(
        run_dir=tmp_path / "runs" / "run-1",
        scratch=tmp_path / "scratch",
        files_root=tmp_path / "files",
        cfg=cfg,
        bucket=bucket,
        base_prefix=f"t-{uuid.uuid4().hex[:8]}/",
        data_info={"embedded": True, **cfg.public()},
        server_pids=s3_server.pids(),
    )


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_tiny_matrix_end_to_end_writes_verified_results(tmp_path, s3_server, s3_bucket):
    ctx = _ctx(tmp_path, s3_server, s3_bucket)
    plan = TransferPlan("test", TINY, ["shotbench", "obstore"], [2], trials=2, seed=1)
    run_transfer(ctx, plan, make_tools(plan.tools), progress=lambda m: None)

    assert {p.name for p in ctx.run_dir.iterdir()} >= {"cases.csv", "transfers.csv", "run.json"}
    cases = _rows(ctx.run_dir / "cases.csv")
    # 2 tools x 2 directions x 2 rows x 2 trials, all verified with a time
    assert len(cases) == 16
    assert all(r["error"] == "" and float(r["seconds"]) > 0 and float(r["mb-per-s"]) > 0 for r in cases), cases
    # each case is charged the CPU it used on both sides: the client's own, and the server's answering it
    assert all(float(r["client-cpu-s"]) > 0 and float(r["server-cpu-s"]) > 0 for r in cases), cases
    # and the machine's CPU time the hypervisor took meanwhile (this kernel counts it): never below none
    assert all(float(r["stolen-cpu-s"]) >= 0 for r in cases), cases
    assert s3_server.pid in s3_server.pids() and len(s3_server.pids()) >= 2  # versitygw and its byte counter
    transfers = _rows(ctx.run_dir / "transfers.csv")
    assert len(transfers) == 2 * 2 * 2 * (3 + 1)  # tools x directions x trials x files
    assert all(r["verified"] == "True" for r in transfers)
    meta = json.loads((ctx.run_dir / "run.json").read_text())
    assert meta["status"] == "finished" and meta["tools"]["obstore"]["status"] == "ok"
    assert (meta["kind"], meta["schema"]) == ("transfer", 1)
    for name in ("cases.csv", "transfers.csv", "run.json"):
        text = (ctx.run_dir / name).read_text()
        assert s3_server.secret_key not in text and s3_server.access_key not in text

    table = analysis.seed_table(analysis.load_cases(ctx.run_dir), "upload")
    assert list(table.index) == ["3 File/64 KiB ea", "1 File/192 KiB ea"]
    assert list(table.columns) == ["Total Transfer Size", "obstore", "shotbench"]
    assert all(cell.endswith("s") for cell in table[["obstore", "shotbench"]].values.ravel())


def test_corrupted_object_gives_an_error_cell_not_a_time(tmp_path, s3_server, s3_bucket):
    ctx = _ctx(tmp_path, s3_server, s3_bucket)
    row = Row(3, 64 * KiB)
    files = ensure_files(row, ctx.files_root, seed=0)
    source = Target(s3_bucket, f"{ctx.base_prefix}src/{row.key}-s0/")
    seed_source(ctx.cfg, source, files)
    # same size, different bytes, changed where the server keeps them (its ETag and stored checksum
    # left as they were, so the run's own seeding keeps the object): only a checksum can tell
    flip_stored_byte(s3_server, s3_bucket, source.key(files[1].name), 1000)

    plan = TransferPlan("test", [row], ["shotbench", "raw-get"], [2], trials=1, directions=["download"])
    run_transfer(ctx, plan, make_tools(plan.tools), progress=lambda m: None)

    cases = {r["tool"]: r for r in _rows(ctx.run_dir / "cases.csv")}
    assert set(cases) == {"shotbench", "raw-get"}
    for r in cases.values():
        assert r["seconds"] == "" and r["mb-per-s"] == "", r
    # shotbench's download compares each file with the CRC64NVME the server stores, and says so; the
    # runner's SHA-256 of every file, after the clock, finds the same file
    assert "does not have the CRC64NVME the server stores" in cases["shotbench"]["error"], cases["shotbench"]
    assert cases["shotbench"]["files-ok"] == "2"
    bad_rows = [r for r in _rows(ctx.run_dir / "transfers.csv") if r["verified"] == "False"]
    assert [(r["tool"], r["file"]) for r in bad_rows if r["tool"] == "shotbench"] == [("shotbench", files[1].name)]
    # raw-get's GETs are botocore's, which check a whole object against the checksum its response carries
    assert cases["raw-get"]["error"].startswith("FlexibleChecksumError"), cases["raw-get"]
    cell = analysis.seed_table(analysis.load_cases(ctx.run_dir), "download").loc[row.label, "shotbench"]
    assert cell.startswith("error: UserError")  # the cell is cut short; the row above has the sentence


def test_awscrt_sha256_objects_carry_the_sha256_the_server_verified(tmp_path, s3_server, s3_bucket):
    """`awscrt-sha256` is what its name says: each object it uploads holds the SHA-256 the server
    checked on arrival, equal to the file's (one PUT, and parts with their composite); the plain
    `awscrt` row sends none. The like-for-like check of `stage` rests on this."""
    import base64
    import hashlib

    cfg = s3_server.s3config()
    client = cfg.boto3_client()
    files = ensure_files(Row(2, 64 * KiB), tmp_path / "files", seed=5)
    (big,) = ensure_files(Row(1, 9 * MiB), tmp_path / "files", seed=5)  # above awscrt's 8 MiB part size
    for name in ("awscrt-sha256", "awscrt"):
        (tool,) = make_tools([name])
        assert tool.check() is None
        target, apart = Target(s3_bucket, f"c-{uuid.uuid4().hex[:8]}/"), Target(s3_bucket, f"b-{uuid.uuid4().hex[:8]}/")
        tool.upload(files, tmp_path, target, cfg, 2)
        tool.upload([big], tmp_path, apart, cfg, 2)  # its own prefix: file names repeat between rows
        for f in files:
            head = client.head_object(Bucket=s3_bucket, Key=target.key(f.name), ChecksumMode="ENABLED")
            sent = head.get("ChecksumSHA256")
            if name == "awscrt":
                assert sent is None, head
            else:
                assert sent == base64.b64encode(bytes.fromhex(f.sha256)).decode(), head
                assert sent == base64.b64encode(hashlib.sha256(f.path.read_bytes()).digest()).decode()
        head = client.head_object(Bucket=s3_bucket, Key=apart.key(big.name), ChecksumMode="ENABLED")
        assert head["ContentLength"] == big.size
        assert (head.get("ChecksumSHA256") is not None) == (name == "awscrt-sha256"), head
    assert make_tools(["awscrt-sha256"])[0].directions == ("upload",)


def test_corrupted_file_on_disk_is_caught(tmp_path):
    files = ensure_files(Row(2, 32 * KiB), tmp_path, seed=3)
    dest = tmp_path / "dest"
    dest.mkdir()
    for f in files:
        dest.joinpath(f.name).write_bytes(f.path.read_bytes())
    assert verify.summarize(verify.verify_dir(files, dest)) == ""
    data = bytearray(dest.joinpath(files[0].name).read_bytes())
    data[-1] ^= 1
    dest.joinpath(files[0].name).write_bytes(bytes(data))
    dest.joinpath(files[1].name).write_bytes(b"short")
    checks = verify.verify_dir(files, dest)
    assert [c.error for c in checks] == ["checksum mismatch", f"size 5 != {32 * KiB}"]


def test_missing_tool_is_reported_not_dropped(tmp_path, s3_server, s3_bucket):
    ctx = _ctx(tmp_path, s3_server, s3_bucket)
    plan = TransferPlan("test", [Row(2, 64 * KiB)], ["s5cmd", "shotbench"], [2], trials=1, directions=["upload"])
    tools = make_tools(plan.tools, {"s5cmd": str(tmp_path / "no-such-dir" / "s5cmd")})
    run_transfer(ctx, plan, tools, progress=lambda m: None)

    cases = {r["tool"]: r for r in _rows(ctx.run_dir / "cases.csv")}
    assert cases["s5cmd"]["error"].startswith("not installed:") and "no-such-dir" in cases["s5cmd"]["error"]
    assert cases["s5cmd"]["seconds"] == ""
    assert cases["shotbench"]["error"] == "" and float(cases["shotbench"]["seconds"]) > 0
    meta = json.loads((ctx.run_dir / "run.json").read_text())
    assert meta["tools"]["s5cmd"]["status"].startswith("not installed:")
    table = analysis.seed_table(analysis.load_cases(ctx.run_dir), "upload")
    assert table.loc["2 File/64 KiB ea", "s5cmd"] == "not installed"


def test_rows_sizes_and_interleaving():
    assert parse_rows("1000x1MiB, 10x100MiB") == (Row(1000, MiB), Row(10, 100 * MiB))
    assert Row(1000, MiB).label == "1000 File/1 MiB ea" and size_label(10 * 1024 * MiB) == "10 GiB"
    cases = [Case("upload", t, 4, Row(1, MiB)) for t in "abcdef"]
    order = case_order(cases, trials=3, seed=7)
    assert order == case_order(cases, trials=3, seed=7)
    assert [t for t, _ in order] == [0] * 6 + [1] * 6 + [2] * 6
    assert [c for _, c in order[:6]] != [c for _, c in order[6:12]]  # each trial its own shuffle


def test_ratios_from_cases():
    base = {
        "trial": 0,
        "error": "",
        "test": "1000 File/1 MiB ea",
        "file-count": 1000,
        "file-size": MiB,
        "total-bytes": 1000 * MiB,
    }
    rows = [
        {**base, "direction": "upload", "tool": "shotbench", "concurrency": 8, "seconds": 10.0, "mb-per-s": 104.9},
        {**base, "direction": "upload", "tool": "aws-s3-sync", "concurrency": 8, "seconds": 25.0, "mb-per-s": 41.9},
        {**base, "direction": "download", "tool": "s5cmd", "concurrency": 8, "seconds": 5.0, "mb-per-s": 209.7},
        {**base, "direction": "download", "tool": "raw-get", "concurrency": 8, "seconds": 4.0, "mb-per-s": 262.1},
    ]
    df = pd.DataFrame(rows)
    assert analysis.stage_vs_sync(df).value == pytest.approx(2.5)
    [r] = analysis.best_vs_raw(df)
    assert r.value == pytest.approx(209.7 / 262.1) and "s5cmd" in r.numerator


def test_bad_rows_option_is_one_sentence(capsys):
    assert cli_main(["transfer", "--rows", "10xlots"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("shotbench: cannot read the size 'lots'") and "Traceback" not in err


def test_sweep_rows_are_added_only_where_asked():
    from shotbench.transfer.execute import plan_cases

    plan = TransferPlan(
        "t",
        [Row(4, MiB), Row(1, 4 * MiB)],
        ["shotbench", "raw-get"],
        [16],
        trials=1,
        sweep=[4, 16, 64],
        sweep_rows=[Row(4, MiB)],
    )
    cases = plan_cases(plan, make_tools(plan.tools))
    # shotbench: 2 directions x (2 rows + 2 extra concurrencies on one row); raw-get: download only
    assert len(cases) == 2 * 4 + 4
    assert {c.concurrency for c in cases if c.row == Row(1, 4 * MiB)} == {16}
    assert TransferPlan.from_json(json.loads(json.dumps(plan.to_json()))) == plan


@pytest.mark.slow
def test_notebook_renders_tables_and_plots_offline(tmp_path, s3_server, s3_bucket):
    from shotbench.paths import repo_root
    from shotbench.reports.htmlcheck import external_resources, figure_count
    from shotbench.reports.render import render_notebook

    ctx = _ctx(tmp_path, s3_server, s3_bucket)
    plan = TransferPlan("test", TINY, ["shotbench", "raw-get"], [2], trials=1, sweep=[4], sweep_rows=[TINY[0]])
    run_transfer(ctx, plan, make_tools(plan.tools), progress=lambda m: None)

    html_path = render_notebook(
        repo_root() / "notebooks" / "transfer.ipynb",
        {"inputs": [f"tiny={ctx.run_dir}"]},
        tmp_path / "report",
        "transfer",
        hide_code=True,
    )
    html = html_path.read_text()
    assert "3 File/64 KiB ea" in html and "Total Transfer Size" in html
    assert "best tool MB/s / raw-get MB/s" in html
    assert figure_count(html) >= 3  # upload + download bars per test, and the sweep
    assert external_resources(html) == []
    assert (tmp_path / "report" / "download-seconds.csv").is_file()
    assert (
        tmp_path / "report" / "upload-checks.csv"
    ).is_file() and "CRC64NVME whole-object" in html  # the check column


def test_interrupted_run_resumes_without_repeating_cases(tmp_path, s3_server, s3_bucket):
    ctx = _ctx(tmp_path, s3_server, s3_bucket)
    plan = TransferPlan("test", TINY, ["obstore"], [2], trials=1, directions=["upload"])
    run_transfer(ctx, plan, make_tools(plan.tools), progress=lambda m: None)
    path = ctx.run_dir / "cases.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]))  # as if stopped after the first case

    run_transfer(ctx, plan, make_tools(plan.tools), progress=lambda m: None)
    again = path.read_text().splitlines(keepends=True)
    assert again[:2] == lines[:2] and len(again) == 3
    assert sorted(r["case-id"] for r in _rows(path)) == sorted(r["case-id"] for r in csv.DictReader(lines))


def test_undecided_rows_get_more_trials_up_to_the_cap_and_a_resume_adds_none_twice(tmp_path, s3_server, s3_bucket):
    ctx = _ctx(tmp_path, s3_server, s3_bucket)
    plan = TransferPlan("test", [Row(4, 64 * KiB)], ["shotbench", "obstore"], [2], trials=1, max_trials=3)
    said: list[str] = []
    run_transfer(ctx, plan, make_tools(plan.tools), progress=said.append)

    cases = _rows(ctx.run_dir / "cases.csv")
    # one trial decides nothing, so both rows reach the cap, stage and its one rival alike
    trials: dict[tuple[str, str], list[int]] = {}
    for r in cases:
        trials.setdefault((r["direction"], r["tool"]), []).append(int(r["trial"]))
    assert {k: sorted(v) for k, v in trials.items()} == {
        (d, t): [0, 1, 2] for d in ("upload", "download") for t in ("shotbench", "obstore")
    }
    assert all(r["error"] == "" for r in cases), cases
    more = json.loads((ctx.run_dir / "run.json").read_text())["more_trials"]
    assert more["stopped"] == "trial cap" and [a["trial"] for a in more["added"]] == [1, 2]
    assert sum("undecided against 1.10×" in m for m in said) == 2
    text = analysis.threshold_text(ctx.run_dir)
    assert "0 within, 0 slower, 2 undecided" in text and "(undecided, 3 and 3 trials)" in text

    path = ctx.run_dir / "cases.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-3]))  # as if stopped three cases before the end of the last added trial
    run_transfer(ctx, plan, make_tools(plan.tools), progress=lambda m: None)
    again = _rows(path)
    assert sorted((r["case-id"], r["trial"]) for r in again) == sorted((r["case-id"], r["trial"]) for r in cases)


def test_latency_sweep_runs_sync_and_async_through_the_network_profile(tmp_path, s3_server, s3_bucket):
    """The sync-vs-async sweep goes through toxiproxy: the same server, ~20 ms more per response."""
    from shotbench.commands.transfer import latency_endpoints

    ctx = _ctx(tmp_path, s3_server, s3_bucket)
    upstream = s3_server.upstream_port or s3_server.port
    plan = TransferPlan(
        "test",
        [Row(2, 64 * KiB)],
        ["obstore", "obstore-async"],
        [2],
        trials=1,
        latency_networks=["s3-same-region"],
        latency_tools=["obstore", "obstore-async"],
        latency_concurrency=[1, 4, 16],
        latency_rows=[Row(4, 64 * KiB)],
    )
    with latency_endpoints(tmp_path / "net", upstream, ctx.cfg, plan.latency_networks) as nets:
        ctx.networks = nets
        run_transfer(ctx, plan, make_tools(plan.tools), progress=lambda m: None)
    cases = analysis.load_cases(ctx.run_dir)
    swept = cases[cases["network"] == "s3-same-region"]
    # 2 tools x 2 directions x concurrency 1 and 4 (16 >= 4 files is the same case as 4)
    assert len(swept) == 8 and set(swept["concurrency"]) == {1, 4}
    assert (swept["error"] == "").all()
    direct = cases[cases["network"] == "loopback"]
    # four 64 KiB files one at a time pay four ~20 ms first bytes; loopback pays none
    slow = swept[(swept["concurrency"] == 1) & (swept["direction"] == "download")]["seconds"].min()
    assert slow > 4 * 0.015 > direct["seconds"].min() / 2
    assert not analysis.latency_table(cases, "download").empty
    assert analysis.async_finding(cases).startswith("sync vs async")


def test_stage_threshold_names_ties_and_fails_a_slow_row(tmp_path):
    base = {
        "error": "",
        "network": "loopback",
        "test": "4 File/1 MiB ea",
        "file-count": 4,
        "file-size": MiB,
        "total-bytes": 4 * MiB,
        "direction": "upload",
        "concurrency": 16,
    }
    rows = []
    for trial, (me, crt, obs) in enumerate([(1.00, 0.98, 2.0), (1.02, 1.01, 2.1), (1.05, 0.99, 2.2)]):
        rows += [
            {**base, "trial": trial, "tool": "shotbench", "seconds": me, "mb-per-s": 4.2 / me},
            {**base, "trial": trial, "tool": "awscrt", "seconds": crt, "mb-per-s": 4.2 / crt},
            {**base, "trial": trial, "tool": "obstore", "seconds": obs, "mb-per-s": 4.2 / obs},
        ]
    slow = {**base, "test": "1 File/4 MiB ea", "file-count": 1, "file-size": 4 * MiB}
    for trial in range(3):
        rows += [
            {**slow, "trial": trial, "tool": "shotbench", "seconds": 2.0 + trial / 10, "mb-per-s": 2.0},
            {**slow, "trial": trial, "tool": "awscrt", "seconds": 1.0 + trial / 10, "mb-per-s": 4.0},
        ]
    run = tmp_path / "run"
    run.mkdir()
    pd.DataFrame(rows).to_csv(run / "cases.csv", index=False)
    checks = {c.test: c for c in analysis.stage_checks(analysis.load_cases(run))}
    ok, bad = checks["4 File/1 MiB ea"], checks["1 File/4 MiB ea"]
    assert ok.passed and ok.best_tool == "awscrt" and ok.tied == ["awscrt"] and ok.ratio == pytest.approx(1.02 / 0.99)
    assert not bad.passed and bad.ratio == pytest.approx(2.1 / 1.1)
    text = analysis.threshold_text(run)
    assert "FAIL (1 of 2 rows pass)" in text and "tied with awscrt" in text
    assert cli_main(["transfer", "--check", str(run)]) == 1


def test_like_for_like_compares_stage_with_the_same_check_beside_the_verdict(tmp_path):
    """An upload row where stage loses to awscrt by its check but keeps up with awscrt-crc64nvme:
    the threshold still fails (the verdict and exit status are the fastest tool's), and the
    like-for-like line and sentence say it passes against the same check. Rows where no tool
    made that check (here a download) are not judged like for like."""
    base = {"error": "", "network": "loopback", "concurrency": 16, "file-count": 4, "file-size": MiB}
    up = {**base, "test": "4 File/1 MiB ea", "total-bytes": 4 * MiB, "direction": "upload"}
    down = {**up, "direction": "download"}
    rows = []
    for trial in range(3):
        for row, times in (
            (up, {"shotbench": 1.16, "awscrt": 1.0, "awscrt-crc64nvme": 1.18}),
            (down, {"shotbench": 0.5, "awscrt": 0.5}),
        ):
            rows += [
                {**row, "trial": trial, "tool": tool, "seconds": t + trial / 100, "mb-per-s": 4.2 / t}
                for tool, t in times.items()
            ]
    run = tmp_path / "run"
    run.mkdir()
    pd.DataFrame(rows).to_csv(run / "cases.csv", index=False)
    cases = analysis.load_cases(run)
    main = {c.direction: c for c in analysis.stage_checks(cases)}
    assert not main["upload"].passed and main["upload"].best_tool == "awscrt" and main["download"].passed
    (same,) = analysis.like_for_like(cases)
    assert (same.direction, same.best_tool, same.passed) == ("upload", "awscrt-crc64nvme", True)
    assert same.ratio == pytest.approx(1.17 / 1.19)
    text = analysis.threshold_text(run)
    assert "FAIL (1 of 2 rows pass)" in text
    assert "like for like, beside the verdict above" in text and "PASS (1 of 1 rows pass)" in text
    assert cli_main(["transfer", "--check", str(run)]) == 1
    said = analysis.answer(cases)
    assert (
        "**Against the same check** (awscrt-crc64nvme" in said and "0.98–0.98× its time, within 1.10× on 1 of 1" in said
    )
    assert "what keeps them from the fastest tool is that check" in said


def _sync_async_rows() -> list[dict]:
    """Three trials of s3fs/obstore, blocking and async, at 1 and 4 in flight on two networks."""
    base = {"error": "", "test": "8 File/1 MiB ea", "file-count": 8, "file-size": MiB, "total-bytes": 8 * MiB}
    speed = {"s3fs": 10.0, "s3fs-async": 15.0, "obstore": 40.0, "obstore-async": 40.0}  # MB/s
    rows = []
    for net in ("loopback", "s3-same-region"):
        for conc in (1, 4):
            for tool, mbps in speed.items():
                for trial in range(3):
                    v = mbps * conc * (1 + trial / 100)
                    rows.append(
                        {**base, "network": net, "direction": "download", "tool": tool, "concurrency": conc}
                        | {"trial": trial, "mb-per-s": v, "seconds": 8.4 / v}
                    )
    return rows


def test_the_answer_names_the_leader_its_ties_the_threshold_and_where_async_pays():
    df = pd.DataFrame(_sync_async_rows())
    leaders = {(r.direction, r.concurrency): r for r in analysis.leaders(df)}
    lead = leaders[("download", 4)]
    # obstore and obstore-async move the same bytes in the same time: one leads, the other is its tie
    assert {lead.tool, *lead.tied} == {"obstore", "obstore-async"}
    verdicts = {v.library: v for v in analysis.async_verdicts(df)}
    assert verdicts["s3fs"].pays and verdicts["s3fs"].median == pytest.approx(1.5, rel=0.02)
    assert not verdicts["obstore"].pays and verdicts["obstore"].median == pytest.approx(1.0, rel=0.02)
    text = analysis.answer(df)
    assert text.index("| download |") < text.index("**Sync or async:**")
    assert "for **s3fs** it pays" in text and "for **obstore** it does not pay" in text
    assert "shotbench stage" not in text  # shotbench did not run: no threshold sentence


def test_sync_vs_async_figures_keep_one_colour_per_series_and_leave_out_one_point_rows():
    from shotbench.transfer import panels as plots

    rows = _sync_async_rows()
    one_file = {"test": "1 File/8 MiB ea", "file-count": 1, "file-size": 8 * MiB, "concurrency": 1}
    rows += [r | one_file for r in rows if r["concurrency"] == 1]  # a row measured at 1 in flight only
    df = pd.DataFrame(rows)
    gain = plots.async_gain(df, "download")
    assert gain is not None and len(gain) == 2  # a panel per network
    colours: dict[str, set] = {}
    for panel in gain:
        for el in panel:
            if el.label:
                colours.setdefault(el.label, set()).add(el.opts.get().kwargs["color"])
    assert set(colours) == {
        "obstore · 1 File/8 MiB ea",
        "obstore · 8 File/1 MiB ea",
        "s3fs · 1 File/8 MiB ea",
        "s3fs · 8 File/1 MiB ea",
    }
    assert all(len(c) == 1 for c in colours.values())  # the same colour in every panel
    sweep = plots.latency_sweep(df, "download")
    assert sweep is not None and len(sweep) == 2  # the one-file row (one point per tool) is not a panel
    assert all("8 File/1 MiB ea" in p.opts.get().kwargs["title"] for p in sweep)
    assert plots.async_gain(df, "upload") is None
