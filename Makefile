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

.PHONY: install install-dev run test test-cluster cluster-server bench lint format browsers conformance browsers-chromium prod-check caddy

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

## The whole suite. Uses DATABASE_URL / REDIS_URL when set, else SQLite + embedded Redis.
## The cluster pass runs at the same time, beside it (its own Redis Cluster, its own test
## database, key prefix and folders): each pass leaves a core mostly idle while it waits.
## Its output follows the single pass's, and the failures of both come last (what CI shows).
test: install-dev browsers cluster-server caddy
	@mkdir -p var; \
	$(MAKE) --no-print-directory test-cluster > var/test-cluster.log 2>&1 & cluster=$$!; \
	{ $(BIN)/python -m pytest -q; echo $$? > var/test-single.rc; } 2>&1 | tee var/test-single.log; \
	single=$$(cat var/test-single.rc); \
	wait $$cluster; clustered=$$?; \
	echo "--- the cluster pass (var/test-cluster.log) ---"; cat var/test-cluster.log; \
	echo "--- what failed, in either pass (the last lines CI shows) ---"; \
	grep -hE '^(FAILED|ERROR) |^[0-9]+ (passed|failed)|[0-9]+ (passed|failed).* in [0-9.]+s' var/test-single.log var/test-cluster.log | cut -c1-300; \
	[ $$single -eq 0 ] && [ $$clustered -eq 0 ]

## The whole suite again, on a real Redis Cluster of its own (3 masters, 3 replicas on
## loopback: tests/redis_cluster.py). Its six nodes share two cores with the single pass's
## browsers and servers: a connect may take longer than the service's 0.5 s default, and
## the rate limiter, which lets a call through when its store does not answer, would then
## admit one call past an exact ceiling. 3 s here; the outage tests that time a store that
## does not answer run in the single pass. The few tests that stop or kill the single embedded
## Redis skip themselves there (marker single_redis); the failover test kills a master.
test-cluster: install-dev cluster-server
	@if redis-server --version 2>/dev/null | grep -Eq 'v=([7-9]|[1-9][0-9])\.'; then \
		TEST_REDIS_CLUSTER=1 REDIS_CONNECT_TIMEOUT_SECONDS=$${REDIS_CONNECT_TIMEOUT_SECONDS:-3} $(BIN)/python -m pytest -q; \
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

## Debian's Caddy, the TLS proxy of the production layout (deploy/Caddyfile).
caddy:
	@command -v caddy >/dev/null 2>&1 || \
		( [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		  (apt-get install -y -qq caddy >/dev/null 2>&1 || \
		   (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq caddy >/dev/null 2>&1)) ) || \
		echo "Caddy could not be installed: the prod-check (and its test) will be skipped."

## The production configuration on this machine, through Caddy's TLS, used as people and
## agents use it, then stopped (config/prod_check.py). make test runs it too.
prod-check: install-dev browsers-chromium caddy
	$(BIN)/python -m config.prod_check

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
