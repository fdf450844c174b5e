# shotbench: the front door. `make help` lists every target.
SHELL := bash
.DEFAULT_GOAL := help
export UV_PYTHON_DOWNLOADS := never
export UV_SYSTEM_CERTS ?= 1

SB      := .venv/bin/shotbench
PY      := .venv/bin/python
DATA    ?=
PROFILE ?= quick
NETWORK ?=
CONFIG  ?=
RUN     ?=
CODE    ?=
# A switch (CODE, HTTP, ANONYMOUS, TLS) is on at 1/yes/true/on and off when empty or 0/no/false/off;
# any other value stops make with one sentence (HTTP=0 used to turn plain http on).
on = $(if $(filter 1 yes true on,$(1)),1,$(if $(filter-out 0 no false off,$(1)),$(error $(2)=$(1) is not a switch; write $(2)=1 to turn it on, or leave it out)))
code    = $(if $(call on,$(CODE),CODE),--code)
$(foreach v,CODE HTTP ANONYMOUS TLS,$(if $(call on,$($(v)),$(v)),))  # checked now, before any prerequisite is built
SHOTS   ?= 24
# q: a value a user gives (DATA=, RUN=, THRESHOLD=, ...) as exactly one shell word, whatever it holds (spaces,
# quotes, a `--flag` of its own): `make report RUN="data/runs/my run"` split the path, and THRESHOLD="1.1 --output x"
# passed a flag through.
q = '$(subst ','\'',$(1))'
BUILD_DEPS   := build-essential libcurl4-openssl-dev libssl-dev zlib1g-dev pkg-config
BROWSER_DEPS := chromium
TOOL_DEPS    := strace openssl util-linux

bench_args = --profile $(call q,$(PROFILE)) $(if $(NETWORK),--network $(call q,$(NETWORK))) $(if $(DATA),--data $(call q,$(DATA))) $(if $(CONFIG),--config $(call q,$(CONFIG))) \
             $(if $(call on,$(HTTP),HTTP),--no-tls) $(if $(call on,$(ANONYMOUS),ANONYMOUS),--anonymous) \
             $(if $(FAULTS),--faults $(call q,$(FAULTS)) --keep-going) $(if $(TRIALS),--trials $(call q,$(TRIALS)))

.PHONY: help venv tools envs synth server-start server-stop server-status doctor bench-ros3 bench-direction bench-readers bench-repeat \
        bench-harness anatomy bench-transfer report reports site report-reference compare columns lab lint test test-all test-fast fuzz bench-chaos rehearse clean

help: ## Show this map of the repository's commands
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[1m%-16s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo "  Variables: DATA=s3://bucket/prefix  PROFILE=quick|full|layouts|readers|upstream-ec2  NETWORK=none|s3-same-region|s3-cross-region|upstream-ec2  CONFIG=file.toml  HTTP=1 (plain http; default https)  FAULTS=flaky-5pc|slowdown-5pc|http-flaky-5pc|…  CODE=1 (show code in reports); a switch (HTTP, ANONYMOUS, CODE, TLS) is off when empty or 0"

venv: ## Create/refresh the Python environment (.venv) from uv.lock
	@scripts/bootstrap.sh

tools: venv ## Build the embedded S3 server (versitygw) into ~/.cache/shotbench (toxiproxy: when a run needs it); install headless Chromium for report screenshots
	@scripts/apt-ensure.sh $(TOOL_DEPS) $(BROWSER_DEPS)
	@$(SB) server install

envs: venv ## Build libhdf5 1.14.6 and 2.0 with ROS3 + h5py, install the h5py-s3 wheel (2.2: built when a run selects it)
	@scripts/apt-ensure.sh $(BUILD_DEPS)
	@$(SB) envs build

synth: venv ## Make SHOTS (default 24) synthetic shot files in data/shots (skips files already there)
	@$(SB) synth --out data/shots --shots $(call q,$(SHOTS))

server-start: tools ## Start the embedded S3 server; prints endpoint and credentials file
	@$(SB) server start

server-stop: venv ## Stop the embedded S3 server
	@$(SB) server stop

server-status: venv ## Is the embedded S3 server running, and where
	@$(SB) server status

doctor: venv ## One screen before a run: endpoint, region, credentials and expiry, instance, builds, what bench-ros3 would run and how long (its DATA=, PROFILE=, NETWORK=, CONFIG=, FAULTS=, TRIALS=, HTTP=1, ANONYMOUS=1)
	@$(SB) doctor --profile $(call q,$(PROFILE)) $(if $(DATA),--data $(call q,$(DATA))) $(if $(NETWORK),--network $(call q,$(NETWORK))) $(if $(CONFIG),--config $(call q,$(CONFIG))) \
	    $(if $(call on,$(HTTP),HTTP),--no-tls) $(if $(call on,$(ANONYMOUS),ANONYMOUS),--anonymous) $(if $(FAULTS),--faults $(call q,$(FAULTS))) $(if $(TRIALS),--trials $(call q,$(TRIALS)))

bench-ros3: envs tools ## Run the ROS3/backends benchmark (DATA=, PROFILE=, NETWORK=, CONFIG=, FAULTS=, TRIALS=), then the report
	@$(SB) bench $(bench_args)
	@$(SB) report --latest $(code)

bench-direction: envs tools ## Ablation: one knob at a time (page buffer, workers, TLS, latency, bandwidth, credentials, 2.2 block size, 2.0 vs wheel) and the open-cost reproducer, then its report
	@$(SB) direction $(if $(TRIALS),--trials $(call q,$(TRIALS)))
	@$(SB) report --direction latest $(code)

bench-readers: envs tools ## Every reader on the compat and the default files (shots, signals; 1, 2 workers), then its report
	@$(SB) bench --profile readers $(if $(NETWORK),--network $(call q,$(NETWORK)))

bench-repeat: envs tools ## The bench matrix N times back to back (N=3; PROFILE=, CONFIG=, …): how far ratios to local and to the rest of each round move, how often intervals cover
	@$(SB) repeat --times $(call q,$(or $(N),3)) -- $(bench_args)

bench-harness: envs tools ## Upstream-style harness vs ours on the same files: prints the runtime ratio
	@$(SB) bench-harness $(if $(DATA),--data $(call q,$(DATA)))

anatomy: envs tools ## Where one open's time goes, per backend (TLS=1 for https; DATA=s3://bucket/key.h5)
	@$(SB) anatomy $(if $(call on,$(TLS),TLS),--tls) $(if $(DATA),--data $(call q,$(DATA)))

bench-transfer: tools ## Upload/download benchmark, tool against tool (DATA=, PROFILE=quick|medium|full)
	@$(SB) transfer --install-only
	@$(SB) transfer --profile $(call q,$(PROFILE)) $(if $(DATA),--data $(call q,$(DATA)))
	@$(SB) report --latest-transfer $(code)
	@$(SB) transfer --check latest

report: venv ## Render the report of the latest run (or RUN=data/runs/<id>) into reports/
	@$(SB) report $(if $(RUN),--run $(call q,$(RUN)),--latest) $(code)

site: venv ## Build docs/ (Sphinx), every published report and the run folders into site/: static, offline, ready for GitHub Pages
	@$(SB) site

reports: report-reference ## Re-render every run and the upstream study; write reports/index.html
	@$(SB) reports $(code)

compare: venv ## Compare two runs case by case (A=run-dir B=run-dir THRESHOLD=1.10): exit 1 on a significant slowdown
	@$(SB) compare $(if $(A),$(call q,$(A))) $(if $(B),$(call q,$(B))) $(if $(THRESHOLD),--threshold $(call q,$(THRESHOLD)))

report-reference: venv ## Render the upstream MDSplusBench single-shot and many-shot studies (old vs new ROS3) into reports/mdsplusbench
	@$(SB) report --reference $(code)

columns: venv ## Write the column reference (docs/reference/columns.md) from the schema
	@$(SB) columns

lab: venv ## Open the notebooks in JupyterLab
	@scripts/bootstrap.sh --group lab && .venv/bin/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/

lint: venv ## Layering contract (import-linter), ruff check, mypy, then ruff format --check
	@.venv/bin/lint-imports
	@.venv/bin/ruff check scripts/shotbench tests
	@# mypy's cache lives with the build cache: a fresh clone checks in under a second what took 22 s
	@# (mypy compares each file's hash with the cache's, so a changed file is always checked again)
	@MYPY_CACHE_DIR=$(call q,$(or $(SHOTBENCH_CACHE),$(HOME)/.cache/shotbench)/mypy) .venv/bin/mypy scripts/shotbench
	@.venv/bin/ruff format --check scripts/shotbench tests

TEST_JOBS ?= 3
# 3 processes keep 2 cores busy (91 % in the parallel part, 433.7 s); 4 made them 96 % busy and took
# 438.2 s (2026-12-04, back to back): the part is bound by CPU, not by its waits. One file per
# process keeps module fixtures shared. Tests that time runs against each other or count TCP segments
# (marked `alone`) run after, with the machine to themselves.
pytest_parallel = $(PY) -m pytest -n $(call q,$(TEST_JOBS)) --dist loadfile -m "not alone"
pytest_alone    = $(PY) -m pytest -m alone

test: venv envs tools lint ## Run make lint, then the suite on what `make bench-ros3` builds (1.14.6, 2.0, the wheel); lists the tests that need optional builds
	@$(SB) server install --all
	@$(pytest_parallel) --without-optional-builds
	@$(pytest_alone) --without-optional-builds

test-all: venv envs tools lint ## What CI runs: build the optional builds too (2.2, 2.0 + zlib-ng), then every test
	@$(SB) envs build --all
	@$(SB) server install --all
	@$(pytest_parallel)
	@$(pytest_alone)

test-fast: venv ## The unit tier (tests/unit): no builds, no server, no notebook, no browser; under a minute from a fresh clone
	@# against an empty, offline build cache and no environments: a test that would build or start a server fails here
	@# (tests/conftest.py refuses a unit test marked or using a server, a notebook, a browser or `slow`)
	@empty=$$(mktemp -d) && SHOTBENCH_CACHE=$$empty/shotbench SHOTBENCH_ENVS=$$empty/envs UV_CACHE_DIR=$$empty/uv UV_OFFLINE=1 GOPROXY=off SHOTBENCH_FUZZ_EXAMPLES=50 \
	  $(PY) -m pytest -n auto tests/unit; rc=$$?; rm -rf "$$empty"; exit $$rc

bench-chaos: envs tools ## Quick matrix under mixed faults (resets, stalls, 503s), a SIGKILL and a server kill, resumed: prints lost/duplicated counts
	@$(SB) chaos --profile $(call q,$(PROFILE)) $(if $(CONFIG),--config $(call q,$(CONFIG)))

fuzz: venv ## Fuzz bench's arguments and TOML configs with many generated inputs (FUZZ_EXAMPLES=5000 per property)
	@SHOTBENCH_FUZZ_EXAMPLES=$(call q,$(or $(FUZZ_EXAMPLES),5000)) $(PY) -m pytest tests/unit/test_fuzz_inputs.py -p no:cacheprovider -q

rehearse: ## A fresh clone, empty HOME, stock PATH: run `make bench-ros3` and `make test` as a new user (REHEARSE=warm|cold)
	@scripts/rehearse.sh $(call q,$(or $(REHEARSE),warm))

clean: ## Remove generated reports and local state (keeps data/runs and the build cache)
	rm -rf reports/*.html reports/*/ .shotbench
