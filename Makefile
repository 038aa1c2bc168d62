# Lanes developer commands. Every target creates and uses .venv by itself; re-running a
# target when nothing changed does no installation work (stamp files under .venv/).
#
#   make test    install what tests need, lint, run the whole suite (what CI runs)
#   make lint    ruff, mypy, import layering
#   make proto   regenerate services/lanes/v1 from proto/lanes/v1
#   make bench   run the benchmarks in tests/perf and print results (never part of make test)
#   make up      install and run the local cluster (lanes up: a controller and 3 brokers) until Ctrl-C
#   make demo    install Spark and run the seeds' trading pipeline with a live summary until Ctrl-C
#   make images  build the lanes and lanes-spark images with podman (LOCAL_BASE=1: bases made here
#                from Debian packages; IMAGE_REPOSITORY, IMAGE_TAG, PUSH=1: docs/kubernetes.md#images)
#   make test-node  a one-node Kubernetes cluster here and the chart on it (root, not in make test)
#   make test-deps  the tests' one-off builds, cached under ~/.cache/lanes: Kubernetes' binaries
#                (etcd, kube-apiserver, kubectl, helm from the Go module proxy) and the image bases

PYTHON ?= python3
#: pytest-xdist workers of make test (tests/conftest.py keeps the ones that must not overlap apart);
#: the Spark tests run beside them in one process of their own (in a worker, a streaming query's
#: foreachBatch callback has hung for good: PySpark's callback server was gone from the worker process)
TEST_WORKERS ?= 2
#: what make test runs beside the workers, after the Spark tests (the image builds there too
#: starved the workers' timing tests of CPU: brokers fenced, quotas' throughput bounds missed);
#: the simulations, pure CPU in one process of their own (a process per core starved the workers'
#: timing tests), fill the third of the two cores the workers leave idle (tests that wait)
BESIDE := tests/e2e tests/simulation
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
STAMP  := $(VENV)/.stamp

# What an install depends on: the project metadata and the C fast path it compiles.
INSTALL_INPUTS := pyproject.toml services/lanes/protocol/_records_c.c services/lanes/client/_open_batches_c.c

.PHONY: test pytest lint proto bench up demo clean images test-deps test-node container-tools

$(PY):
	tools/ensure-build-deps.sh $(PYTHON)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"

$(STAMP)-dev: $(INSTALL_INPUTS) | $(PY)
	$(PY) -m pip install --quiet -e ".[dev]"
	@touch $@ $(STAMP)-run $(STAMP)-demo

$(STAMP)-run: $(INSTALL_INPUTS) | $(PY)
	$(PY) -m pip install --quiet -e .
	@touch $@

test: lint pytest

pytest: $(STAMP)-dev test-deps
	tools/ensure-debian-packages.sh "the tests" promtool=prometheus java=default-jre-headless iptables=iptables ip=iproute2 tc=iproute2 chromium=chromium kcat=kcat
	@mkdir -p build
	@# beside the two workers (they leave a third of the two cores idle: tests that wait), one process
	@# after another: the Spark tests (their JVM started before anything else in that process), then
	@# the e2e tests (one lanes up cluster); their output follows the others'
	(SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$(abspath $(PY)) $(BIN)/pytest -q --durations=10 -p no:xdist \
	  -p no:cacheprovider tests/spark; spark=$$?; \
	  LANES_SIM_PROCESSES=1 $(BIN)/pytest -q --durations=10 -p no:xdist -p no:cacheprovider $(BESIDE); exit $$(( spark | $$? ))) \
	  > build/beside-tests.log 2>&1 & beside=$$!; \
	SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$(abspath $(PY)) $(BIN)/pytest -q --durations=25 \
	  -n $(TEST_WORKERS) --dist loadgroup --ignore=tests/spark $(BESIDE:%=--ignore=%) tests; status=$$?; \
	wait $$beside; beside_status=$$?; \
	echo "--- tests/spark, then $(BESIDE) (run beside the others, exit $$beside_status):"; \
	cat build/beside-tests.log; \
	test $$status -eq 0 && test $$beside_status -eq 0

lint: $(STAMP)-dev
	$(BIN)/ruff check services operator spark-apps tests tools
	$(BIN)/ruff format --check services operator spark-apps tests tools
	$(BIN)/mypy
	$(BIN)/lint-imports
	@# the console's one script (no build step): its syntax, by Node.js (decision 0039)
	tools/ensure-debian-packages.sh "the console script's check" node=nodejs
	node --check services/lanes/console/static/console.js

proto: $(STAMP)-dev
	$(PY) tools/genproto.py

$(STAMP)-bench: $(INSTALL_INPUTS) | $(PY)
	$(PY) -m pip install --quiet -e ".[dev,bench]"
	@touch $@ $(STAMP)-dev $(STAMP)-run

bench: $(STAMP)-bench
	tools/ensure-debian-packages.sh "the benchmarks' peers" redis-server=redis-server nats-server=nats-server
	LANES_BENCH=1 $(BIN)/pytest -q -s -p no:cacheprovider tests/perf

container-tools:
	tools/ensure-debian-packages.sh "building and running images" podman=podman buildah=buildah runc=runc debootstrap=debootstrap catatonit=catatonit

# The Go builds (CPU) and the image bases and Apache Kafka's jars (network and disk) run side by
# side; all are no-ops once cached. The image builds themselves are the tests' (tests/k8s/test_images.py).
test-deps: container-tools
	tools/kube/build-binaries.sh & kube=$$!; \
	  tools/images/local-base.sh python >/dev/null && tools/images/local-base.sh spark >/dev/null \
	  && tools/kafka/fetch.sh >/dev/null; bases=$$?; wait $$kube && exit $$bases

# A one-node Kubernetes cluster on this machine and the chart on it (root; a few minutes; not in
# make test): tests/k8s/test_one_node_cluster.py, docs/kubernetes.md#a-one-node-cluster.
test-node: $(STAMP)-dev test-deps
	tools/ensure-debian-packages.sh "the one-node cluster" containerd=containerd conntrack=conntrack \
	  /usr/lib/cni/bridge=containernetworking-plugins iptables=iptables
	tools/kube/build-binaries.sh kubelet kube-scheduler kube-controller-manager kube-proxy coredns
	LANES_K8S_NODE=1 SPARK_LOCAL_IP=127.0.0.1 $(BIN)/pytest -q -p no:cacheprovider tests/k8s/test_one_node_cluster.py

images: container-tools
	tools/images/build.sh

up: $(STAMP)-run
	$(BIN)/lanes up

# The seeds' trading pipeline (docs/demo.md): the spark extra and a Java runtime, then the demo on
# the cluster of ./.lanes (started in the background when none runs; lanes down stops it).
$(STAMP)-demo: $(INSTALL_INPUTS) | $(PY)
	$(PY) -m pip install --quiet -e ".[spark]"
	@touch $@ $(STAMP)-run

demo: $(STAMP)-demo
	tools/ensure-debian-packages.sh "the demo's Spark jobs" java=default-jre-headless
	$(BIN)/lanes demo trading

clean:
	rm -rf $(VENV) build *.egg-info services/*.egg-info .pytest_cache .mypy_cache .ruff_cache
	find services -name '*.so' -delete
