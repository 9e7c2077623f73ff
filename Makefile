# The two commands the README starts with: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run serve check test test-sqlite test-postgres setup lint bench bench-api bench-readme screenshots clean

# A first run takes a minute here, which pip --quiet would spend in silence: each step
# says what it does instead of echoing its command.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
	@test -x $(BIN)/python || { echo "Creating $(VENV) with $(PYTHON) ..."; $(PYTHON) -m venv $(VENV); }
	@echo "Installing Reduction Lab and its dependencies into $(VENV) (a minute the first time) ..."
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)
	@echo "Migrating the database ..."
	@$(BIN)/python manage.py migrate --noinput --verbosity 0
	@$(BIN)/python manage.py collectstatic --noinput --verbosity 0

# The web server and, beside it, the task worker that runs background simulations, on
# http://HOST:PORT: `make run PORT=8765`, `make run HOST=0.0.0.0` (every address of this
# machine; a browser elsewhere must name it by a host in DJANGO_ALLOWED_HOSTS). HOST comes
# from the command line only: some shells export HOST as the machine's name (tcsh does),
# and the development server, with DEBUG on, should not follow it onto the network.
# Ctrl-C stops both (scripts/run_together.py says how) and make prints no error; make
# exits 130, as any command interrupted by Ctrl-C does, so that a script running it can
# tell an interruption from a server that ended by itself (its status then). First the
# demo workspace is seeded (idempotent: a second run keeps what is there) with a member
# who can sign in right away; choose them with
# `make run DEMO_USER=ada DEMO_PASSWORD='a long secret'`.
HOST = 127.0.0.1
PORT ?= 8000
# An IPv6 address goes in brackets, in the URL and for runserver alike.
ADDRESS = $(if $(findstring :,$(HOST)),[$(HOST)],$(HOST)):$(PORT)
DEMO_USER ?= demo
DEMO_PASSWORD ?= demo-password
run: setup
	@echo "Seeding the demo workspace ..."
	@$(BIN)/python manage.py seed_demo --user '$(DEMO_USER)' --password '$(DEMO_PASSWORD)' \
		--site 'http://$(ADDRESS)'
	@echo "Serving on http://$(ADDRESS) (Ctrl-C stops the server and the worker)"
	@$(BIN)/python scripts/run_together.py \
		-- $(BIN)/python manage.py db_worker --no-reload --no-startup-delay \
		-- $(BIN)/python manage.py runserver '$(ADDRESS)'

# The production server (docs/deploying.md): DEBUG off, static files collected for
# whitenoise, gunicorn with WEB_CONCURRENCY sync workers (default: one per core, at
# least 2) on GUNICORN_BIND (default 127.0.0.1:8000), and the task worker beside it;
# Ctrl-C stops both. DJANGO_SECRET_KEY must be set (DJANGO_ALLOW_INSECURE_KEY=1 runs on
# the development key, for a server only this machine reaches).
serve: export DJANGO_DEBUG = 0
serve: $(STAMP)
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	@$(BIN)/python scripts/run_together.py \
		-- $(BIN)/python manage.py db_worker --no-reload \
		-- $(BIN)/gunicorn --config config/gunicorn_conf.py config.wsgi

# `make test` runs the whole suite on SQLite and, beside it, the tests that use the
# database (marked `db` by tests/conftest.py) on PostgreSQL; the PostgreSQL pass writes
# to a file, shown when the SQLite pass ends. TEST_TOGETHER=no runs them one after the
# other (and stops after a failing SQLite pass). PostgreSQL is the
# server TEST_DATABASE_URL names, or else the one scripts/ensure_postgres.sh finds or
# starts on 127.0.0.1:5432 (installing Debian's package when root). TEST_POSTGRES says
# what happens when there is none: auto (default) runs SQLite only and says so first;
# yes (the default under CI=true) fails; no skips PostgreSQL without asking.
# PYTEST_ARGS goes to both runs, e.g. `make test PYTEST_ARGS='-x tests/app'`.
TEST_POSTGRES ?= $(if $(filter true 1,$(CI)),yes,auto)
# The browser tests need Debian's Chromium; scripts/ensure_chromium.sh installs it when
# missing (as root). TEST_BROWSER works like TEST_POSTGRES: auto leaves tests/browser out
# (and says so) when there is no Chromium; yes (the default under CI=true) fails.
TEST_BROWSER ?= $(if $(filter true 1,$(CI)),yes,auto)
PYTEST_ARGS ?=
TEST_TOGETHER ?= yes
# Test runs keep the bytecode of what they load: pytest rewrites the assertions of about
# 750 modules (the tests' and its plugins'), which PYTHONDONTWRITEBYTECODE, set in some
# environments, would have every run and every server a test starts redo.
TEST_ENV := env -u PYTHONDONTWRITEBYTECODE
# The SQLite pass must not pick up a database from the environment.
SQLITE_ENV := $(TEST_ENV) -u TEST_DATABASE_URL -u DATABASE_URL

test: $(STAMP)
	@set -e; browser_args=""; \
	if ! bash scripts/ensure_chromium.sh >/dev/null; then \
		if [ "$(TEST_BROWSER)" = yes ]; then \
			echo "make test: Chromium is required (TEST_BROWSER=yes) and could not be provided" >&2; \
			exit 1; \
		fi; \
		browser_args="--ignore=tests/browser"; \
		echo "make test: no Chromium here, so tests/browser is left out (see above why)"; \
	fi; \
	pg_url="$${TEST_DATABASE_URL:-}"; \
	if [ -z "$$pg_url" ] && [ "$(TEST_POSTGRES)" != no ]; then \
		pg_url=$$(bash scripts/ensure_postgres.sh) || pg_url=""; \
		if [ -z "$$pg_url" ] && [ "$(TEST_POSTGRES)" = yes ]; then \
			echo "make test: PostgreSQL is required (TEST_POSTGRES=yes) and could not be provided" >&2; \
			exit 1; \
		fi; \
	fi; \
	if [ -n "$$pg_url" ]; then \
		echo "make test: the suite runs on SQLite, and the tests that use the database on PostgreSQL ($$pg_url)"; \
	elif [ "$(TEST_POSTGRES)" = no ]; then \
		echo "make test: the suite runs on SQLite only (TEST_POSTGRES=no)"; \
	else \
		echo "make test: the suite runs on SQLite only; no PostgreSQL here (see above why)"; \
	fi; \
	postgres="$(TEST_ENV) TEST_DATABASE_URL=$$pg_url $(BIN)/python -m pytest --db-only"; \
	pg_pid=""; \
	if [ -n "$$pg_url" ] && [ "$(TEST_TOGETHER)" = yes ]; then \
		pg_log=$$(mktemp); \
		$$postgres $$browser_args $(PYTEST_ARGS) >"$$pg_log" 2>&1 & pg_pid=$$!; \
		trap 'kill $$pg_pid 2>/dev/null; rm -f "$$pg_log"; exit 130' INT TERM; \
	fi; \
	echo "== SQLite =="; \
	sqlite_status=0; \
	$(SQLITE_ENV) $(BIN)/python -m pytest $$browser_args $(PYTEST_ARGS) || sqlite_status=$$?; \
	[ $$sqlite_status = 0 ] || [ -n "$$pg_pid" ] || exit $$sqlite_status; \
	pg_status=0; \
	if [ -n "$$pg_url" ]; then \
		echo "== PostgreSQL ($$pg_url): the tests that use the database =="; \
		if [ -n "$$pg_pid" ]; then \
			wait $$pg_pid || pg_status=$$?; cat "$$pg_log"; rm -f "$$pg_log"; \
		else \
			$$postgres $$browser_args $(PYTEST_ARGS) || pg_status=$$?; \
		fi; \
	fi; \
	[ $$sqlite_status = 0 ] || exit $$sqlite_status; \
	exit $$pg_status

# What to run while working: lint, types, and the tests that need no database, browser
# or PostgreSQL and take no more than a moment (not `db`, `browser` or `slow`), with few
# Hypothesis examples. PYTEST_ARGS narrows it, e.g. `make check PYTEST_ARGS=tests/engine`.
CHECK_MARKS := not db and not browser and not slow
check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(SQLITE_ENV) $(BIN)/python -m pytest -q -m '$(CHECK_MARKS)' --ignore=tests/browser $(PYTEST_ARGS)

test-sqlite: $(STAMP)
	$(SQLITE_ENV) $(BIN)/python -m pytest $(PYTEST_ARGS)

# PostgreSQL only, the tests that use the database: TEST_DATABASE_URL if set, else
# scripts/ensure_postgres.sh (which fails loudly when it cannot provide a server).
test-postgres: $(STAMP)
	@set -e; pg_url="$${TEST_DATABASE_URL:-}"; \
	if [ -z "$$pg_url" ]; then pg_url=$$(bash scripts/ensure_postgres.sh); fi; \
	echo "== PostgreSQL ($$pg_url): the tests that use the database =="; \
	$(TEST_ENV) TEST_DATABASE_URL="$$pg_url" $(BIN)/python -m pytest --db-only $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The pictures of docs/dashboard.md, each page as a 1,280 x 800 window shows it, taken in
# Debian's Chromium of a demo workspace seeded into a temporary database
# (scripts/screenshots.py says how): `make screenshots`.
screenshots: $(STAMP)
	@bash scripts/ensure_chromium.sh >/dev/null
	$(BIN)/python scripts/screenshots.py

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m benchmarks.replay
	$(BIN)/python -m benchmarks.flat
	$(BIN)/python -m benchmarks.truncation
	$(BIN)/python -m benchmarks.memory

# /api/v1/clear under load, through gunicorn on loopback (benchmarks/README.md).
# BENCH_ARGS goes to the benchmark, e.g. `make bench-api BENCH_ARGS='--seconds 60'`.
BENCH_ARGS ?=
bench-api: $(STAMP)
	$(BIN)/python -m benchmarks.api_load $(BENCH_ARGS)

# Every benchmark, one after another, each writing its figures into its block of
# benchmarks/README.md (see "Regenerating" there): about 45 minutes, best on an idle
# machine. The PostgreSQL runs make a fresh database on BENCH_POSTGRES (a server URL), or
# else on the server scripts/ensure_postgres.sh finds or starts. BENCHMARKS picks some,
# e.g. `make bench-readme BENCHMARKS='replay flat'`.
BENCHMARKS ?= replay flat truncation memory quotas bounds purge soak stateful reused_ids otlp sweep corpus_sweep recommend held_out sweep-tasks api_load
bench-readme: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	@set -e; pg_url="$${BENCH_POSTGRES:-}"; \
	case " $(BENCHMARKS) " in *" sweep-tasks "*|*" api_load "*|*" soak "*|*" stateful "*|*" bounds "*|*" reused_ids "*) \
		if [ -z "$$pg_url" ]; then pg_url=$$(bash scripts/ensure_postgres.sh); fi;; \
	esac; \
	for name in $(BENCHMARKS); do \
		case $$name in \
		sweep-tasks) runs="sweep --tasks|sweep --tasks --database-url $$pg_url";; \
		soak) runs="soak|soak --database-url $$pg_url";; \
		stateful) runs="stateful --database-url $$pg_url";; \
		reused_ids) runs="reused_ids|reused_ids --database-url $$pg_url";; \
		bounds) runs="bounds --postgres $$pg_url";; \
		api_load) runs="api_load|api_load --no-conversation-id|api_load --postgres $$pg_url|api_load --postgres $$pg_url --no-conversation-id";; \
		*) runs=$$name;; \
		esac; \
		IFS='|'; for run in $$runs; do \
			unset IFS; echo "== python -m benchmarks.$$run --readme =="; \
			$(SQLITE_ENV) $(BIN)/python -m benchmarks.$$run --readme; \
		done; unset IFS; \
	done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
