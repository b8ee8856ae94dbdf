# dreamtown — build, run, test and benchmark the Redis module.
#
#   make run     build, install what is missing, start redis-server with the module
#   make test    unit, integration (real redis-server), client and redis-py tests
#   make cluster a local 3-master Redis Cluster with the module (make cluster-stop stops it)
#   make bench   ratios against the seeds (Lua scripts, tinytown round trips) and native commands

SHELL := /bin/bash
CARGO ?= cargo
PORT ?= 6390
CLUSTER_PORT ?= 7001
MODULE := $(CURDIR)/target/release/libdreamtown.so
VENV := $(CURDIR)/.venv
PYTHON := $(VENV)/bin/python
APT_PACKAGES := redis-server clang libclang-dev python3-venv

export PATH := $(HOME)/.cargo/bin:$(PATH)
export DREAMTOWN_MODULE := $(MODULE)

.PHONY: all build deps venv run test test-unit test-rust test-client test-python cluster cluster-stop bench clean help

all: build

help:
	@echo "make run    - build and start redis-server on port $(PORT) with the module"
	@echo "make test   - run every test against real redis-server processes"
	@echo "make bench  - benchmark against the seeds' Lua scripts and native commands"
	@echo "make build  - build target/release/libdreamtown.so"
	@echo "make cluster - start a local 3-master cluster (ports $(CLUSTER_PORT)..) with the module; make cluster-stop"

## deps: install redis-server, clang and libclang-dev from Debian if missing.
deps:
	@missing=""; \
	for pkg in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$pkg 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "== installing:$$missing"; \
	  if [ "$$(id -u)" -ne 0 ]; then echo "run as root, or install:$$missing" >&2; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	else echo "== prerequisites present: $(APT_PACKAGES)"; fi
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs)" >&2; exit 1; }

## venv: a Python virtualenv with pytest and redis-py for python-tests/.
venv: $(VENV)/.ready
$(VENV)/.ready:
	@echo "== creating $(VENV) with pytest and redis-py"
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check pytest redis
	@touch $@

build:
	@echo "== building $(MODULE)"
	$(CARGO) build --release -p dreamtown
	@ls -l $(MODULE)

run: deps build
	@echo "== starting redis-server on 127.0.0.1:$(PORT) with dreamtown loaded (Ctrl-C stops it)"
	@echo "== connect with:  redis-cli -p $(PORT)    e.g.  redis-cli -p $(PORT) DREAMS.LEN acme"
	exec redis-server --port $(PORT) --bind 127.0.0.1 --save '' --appendonly no --loadmodule $(MODULE)

test: build venv test-unit test-rust test-client test-python
	@echo "== all tests passed"

test-unit:
	@echo "== unit tests (pure core, no server)"
	$(CARGO) test -p dreamtown --lib

test-rust:
	@echo "== integration tests against redis-server (module: $(MODULE))"
	$(CARGO) test -p dreamtown --test '*'

# The client crate alone: built with the module crate's default `module`
# feature it would link RedisAlloc, which aborts outside redis-server.
test-client:
	@echo "== client crate tests against redis-server and a local cluster (module: $(MODULE))"
	@if $(CARGO) tree -p dreamtown-client -e features -i dreamtown | grep -q 'feature "module"'; then \
	  echo "dreamtown-client must depend on dreamtown without its module feature" >&2; exit 1; fi
	$(CARGO) test -p dreamtown-client

cluster: build
	CLUSTER_PORT=$(CLUSTER_PORT) DREAMTOWN_MODULE=$(MODULE) scripts/cluster.sh start

cluster-stop:
	CLUSTER_PORT=$(CLUSTER_PORT) scripts/cluster.sh stop

test-python:
	@echo "== python-tests (redis-py against redis-server)"
	$(PYTHON) -m pytest -q python-tests

## bench: not part of `make test`. Knobs: BENCH_REPS (5), BENCH_SECONDS (1.0
## per run), BENCH_ONLY (regex of rows), BENCH_PIN=0 (no taskset),
## BENCH_STRICT=1 (exit 1 on a missed target). See bench/README.md.
bench: build
	@echo "== benchmark (one redis-server, module vs the seed's Lua vs native commands)"
	python3 bench/run.py --module $(MODULE)

clean:
	$(CARGO) clean
	rm -rf $(VENV)
