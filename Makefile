# Lanes developer commands. Every target creates and uses .venv by itself; re-running a
# target when nothing changed does no installation work (stamp files under .venv/).
#
#   make test    install what tests need, lint, run the whole suite (what CI runs)
#   make lint    ruff, mypy, import layering
#   make proto   regenerate services/lanes/v1 from proto/lanes/v1
#   make bench   run the benchmarks in tests/perf and print results (never part of make test)
#   make up      install and run the local cluster (lanes up: a controller and 3 brokers) until Ctrl-C

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
STAMP  := $(VENV)/.stamp

# What an install depends on: the project metadata and the C fast path it compiles.
INSTALL_INPUTS := pyproject.toml services/lanes/protocol/_records_c.c

.PHONY: test pytest lint proto bench up clean

$(PY):
	tools/ensure-build-deps.sh $(PYTHON)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"

$(STAMP)-dev: $(INSTALL_INPUTS) | $(PY)
	$(PY) -m pip install --quiet -e ".[dev]"
	@touch $@ $(STAMP)-run

$(STAMP)-run: $(INSTALL_INPUTS) | $(PY)
	$(PY) -m pip install --quiet -e .
	@touch $@

test: lint pytest

pytest: $(STAMP)-dev
	tools/ensure-debian-packages.sh "the tests" promtool=prometheus java=default-jre-headless iptables=iptables ip=iproute2 tc=iproute2
	SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$(abspath $(PY)) $(BIN)/pytest -q --durations=25 tests

lint: $(STAMP)-dev
	$(BIN)/ruff check services operator spark-apps tests tools
	$(BIN)/ruff format --check services operator spark-apps tests tools
	$(BIN)/mypy
	$(BIN)/lint-imports

proto: $(STAMP)-dev
	$(PY) tools/genproto.py

$(STAMP)-bench: $(INSTALL_INPUTS) | $(PY)
	$(PY) -m pip install --quiet -e ".[dev,bench]"
	@touch $@ $(STAMP)-dev $(STAMP)-run

bench: $(STAMP)-bench
	tools/ensure-debian-packages.sh "the benchmarks' peers" redis-server=redis-server nats-server=nats-server
	LANES_BENCH=1 $(BIN)/pytest -q -s -p no:cacheprovider tests/perf

up: $(STAMP)-run
	$(BIN)/lanes up

clean:
	rm -rf $(VENV) build *.egg-info services/*.egg-info .pytest_cache .mypy_cache .ruff_cache
	find services -name '*.so' -delete
