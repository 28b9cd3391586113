# The two commands a newcomer needs: `make run` and `make test`. Everything they need is
# installed here, into .venv, from pyproject.toml: `make run` only what the service runs
# on; `make test` (and lint, bench) the development tools beside it (pytest, Playwright,
# mypy, ruff: its `dev` extra).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SUM    := $(shell cksum pyproject.toml | cut -d' ' -f1)
# The Python asked for on the command line or in the environment (make run PYTHON=...), if
# any: .venv is made again when it was made by another one (scripts/venv-ensure).
ASKED  := $(if $(filter command line environment,$(origin PYTHON)),$(PYTHON))

.PHONY: install install-dev run test test-fast test-cluster cluster-server bench lint format browsers conformance browsers-chromium prod-check caddy clients

## The service's own packages (no test tools), in a .venv made by a supported Python.
install:
	@sh scripts/venv-ensure $(VENV) "$(ASKED)"
	@if [ ! -f $(VENV)/.installed-run-$(SUM) ] && [ ! -f $(VENV)/.installed-dev-$(SUM) ]; then \
		$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade pip && \
		$(BIN)/python -m pip install -q --disable-pip-version-check -e . && \
		rm -f $(VENV)/.installed-* && touch $(VENV)/.installed-run-$(SUM); \
	fi

## The service's packages and the development tools.
install-dev:
	@sh scripts/venv-ensure $(VENV) "$(ASKED)"
	@if [ ! -f $(VENV)/.installed-dev-$(SUM) ]; then \
		$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade pip && \
		$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[dev]' && \
		rm -f $(VENV)/.installed-* && touch $(VENV)/.installed-dev-$(SUM); \
	fi

## The whole service on embedded defaults (SQLite + bundled Redis) at http://127.0.0.1:8000
run: install
	$(BIN)/python -m config.serve

## What a developer runs before every commit: every test that needs no browser, no cluster
## and no production layout, in parallel (tests/lanes.py says which is which): four workers
## on two cores, since a part of its time is waiting on the servers it starts.
WORKERS ?= 2
# Every process a test run starts (its workers, the servers and clients they start) reads
# its modules compiled, kept under var/ (a shell or an image that sets
# PYTHONDONTWRITEBYTECODE would have each one compile and assertion-rewrite them all again:
# about 5 CPU-seconds a worker).
# Workers steal from each other's queues (--dist worksteal): a few tests run for many
# seconds, and handing out fixed shares left one worker with a long tail while the others
# sat idle (make test-fast 256 s -> 177 s).
PYTEST := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/var/pycache $(BIN)/python -m pytest --dist worksteal
test-fast: install-dev
	$(PYTEST) -q -n 4 -m "not browser and not prod"

## The whole suite, in parallel: everything on one Redis (DATABASE_URL / REDIS_URL when
## set, else SQLite and an embedded Redis per worker), then the tests that reach Redis
## (marker store) again on a real Redis Cluster. The failures of both come last (what CI
## shows).
test: install-dev browsers clients cluster-server caddy
	@mkdir -p var; \
	{ $(PYTEST) -q -n $(WORKERS); echo $$? > var/test-single.rc; } 2>&1 | tee var/test-single.log; \
	{ $(MAKE) --no-print-directory test-cluster; echo $$? > var/test-cluster.rc; } 2>&1 | tee var/test-cluster.log; \
	echo "--- what failed, in either pass (the last lines CI shows) ---"; \
	grep -hE '^(FAILED|ERROR) |^[0-9]+ (passed|failed)|[0-9]+ (passed|failed).* in [0-9.]+s' var/test-single.log var/test-cluster.log | cut -c1-300; \
	[ "$$(cat var/test-single.rc)" -eq 0 ] && [ "$$(cat var/test-cluster.rc)" -eq 0 ]

## The tests that reach Redis (marker store), on a real Redis Cluster of their own (3
## masters, 3 replicas on loopback per worker: tests/redis_cluster.py). A connect may take
## longer there than the service's 0.5 s default on a busy machine, and the rate limiter,
## which lets a call through when its store does not answer, would then admit one call past
## an exact ceiling: 3 s here. The failover test kills a master. The pass varies the Redis
## topology alone: its database is SQLite whatever DATABASE_URL says (the single pass runs
## every test on that database, and the database's cost is no part of what this pass tests).
test-cluster: install-dev cluster-server
	@if redis-server --version 2>/dev/null | grep -Eq 'v=([7-9]|[1-9][0-9])\.'; then \
		DATABASE_URL= TEST_REDIS_CLUSTER=1 REDIS_CONNECT_TIMEOUT_SECONDS=$${REDIS_CONNECT_TIMEOUT_SECONDS:-3} $(PYTEST) -q -n $(WORKERS); \
	else echo "No redis-server 7 or newer: the cluster pass is skipped (apt-get install redis-server)."; fi

## Debian's redis-server 7, which the cluster pass starts six of.
cluster-server:
	@redis-server --version >/dev/null 2>&1 || \
		( [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		  (apt-get install -y -qq redis-server >/dev/null 2>&1 || \
		   (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq redis-server >/dev/null 2>&1)) ) || \
		echo "redis-server could not be installed: the cluster pass will be skipped."

## Debian's Chromium for the browser tests (they skip, saying why, when none can be had),
## and axe-core from npm for their accessibility check.
AXE := $(VENV)/axe/node_modules/axe-core/axe.min.js
browsers: browsers-chromium $(AXE)
$(AXE):
	@command -v npm >/dev/null 2>&1 && npm install --silent --no-audit --no-fund --prefix $(VENV)/axe axe-core@4.14.1 >/dev/null 2>&1 || \
		echo "axe-core could not be installed (npm): the accessibility checks will be skipped."
browsers-chromium:
	@test -x /usr/bin/chromium || command -v chromium >/dev/null 2>&1 || \
		( [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		  (apt-get install -y -qq chromium >/dev/null 2>&1 || \
		   (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1)) ) || \
		echo "Chromium could not be installed: the browser tests will be skipped."

## The clients' own command-line tools, for the README's walkthrough test
## (tests/e2e/test_readme_walkthrough.py, which skips saying why without them): pinned, from
## npm, into .venv/clients once (a second run finds them there and downloads nothing).
CLIENT_VERSIONS := @anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0
CLIENTS_STAMP   := $(VENV)/clients/.installed-$(shell echo '$(CLIENT_VERSIONS)' | cksum | cut -d' ' -f1)
clients: $(CLIENTS_STAMP)
$(CLIENTS_STAMP):
	@command -v npm >/dev/null 2>&1 && \
		npm install --silent --no-audit --no-fund --prefix $(VENV)/clients $(CLIENT_VERSIONS) >/dev/null 2>&1 && \
		touch $@ || \
		echo "Claude Code and Codex could not be installed (npm): the README walkthrough's client steps will be skipped."

## Debian's Caddy, the TLS proxy of the production layout (deploy/Caddyfile).
caddy:
	@command -v caddy >/dev/null 2>&1 || \
		( [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		  (apt-get install -y -qq caddy >/dev/null 2>&1 || \
		   (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq caddy >/dev/null 2>&1)) ) || \
		echo "Caddy could not be installed: the prod-check (and its test) will be skipped."

## The production configuration on this machine, through Caddy's TLS, used as people and
## agents use it, then stopped (ops/prod_check.py). make test runs it too.
prod-check: install-dev browsers-chromium caddy
	$(BIN)/python -m ops.prod_check

## Latency, throughput, contention and exactness figures over real HTTP.
bench: install
	@command -v wrk >/dev/null 2>&1 || (command -v apt-get >/dev/null 2>&1 && \
		(apt-get install -y -qq wrk >/dev/null 2>&1 || (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq wrk >/dev/null 2>&1)) || \
		echo "wrk unavailable: throughput falls back to the Python load generator")
	$(BIN)/python -m bench.run

## The conformance kit (docs/conformance.md) against any Room Protocol server, ours or roomd:
##   make conformance URL=http://host:port[/mcp] KEY=<a team key> [KEY_B=<another team's key>]
## KEY_B runs the cross-team isolation checks (without it they skip, saying why). The keys
## reach the kit through the environment, so they are not echoed or shown in `ps`.
conformance: install
	@if [ -z "$(URL)" ] || [ -z "$(KEY)" ]; then \
		echo "make conformance needs URL and KEY: make conformance URL=http://host:port[/mcp] KEY=<team key> [KEY_B=<another team's key>] [RATE_WAIT=<seconds>]" >&2; \
		exit 2; \
	fi
	@CONFORMANCE_URL="$(URL)" CONFORMANCE_KEY="$(KEY)" CONFORMANCE_KEY_B="$(KEY_B)" \
		$(BIN)/python -m conformance $(if $(RATE_WAIT),--rate-wait $(RATE_WAIT))

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .

format: install-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .
