# The `lanes` image: every Lanes service (controller, broker, coordinator), the operator and the
# CLI, in one virtual environment. Build from the repository's root:
#   docker build -f deploy/docker/lanes.Dockerfile -t lanes:dev .
# Run a service: `python -m lanes.broker --broker-id 1 ...` (the chart sets the command).
# tests/k8s/test_images.py checks this file against the repository and builds the same wheel.

ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# Build: the dependencies (with the operator's extra) in a virtual environment, and Lanes as a wheel
# with its C fast paths compiled (the record codec, the producer's open batches). The official
# image has Python's headers; a Debian base gets them from python3-dev.
FROM ${PYTHON_IMAGE} AS build
RUN apt-get update \
 && headers=$(python -c 'import sysconfig; print(sysconfig.get_paths()["include"])') \
 && apt-get install -y --no-install-recommends gcc libc6-dev $(test -f "$headers/Python.h" || echo python3-dev) \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml ./
# The dependencies (pyproject.toml's, with the operator's extra) in a layer of their own, before
# the code: a build after a change to the code alone takes them from the layer cache.
RUN python -m venv /opt/lanes \
 && python -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print("\n".join(p["dependencies"] + p["optional-dependencies"]["operator"]))' > /tmp/requirements.txt \
 && /opt/lanes/bin/pip install --no-cache-dir -r /tmp/requirements.txt
COPY README.md ./
COPY services ./services
COPY operator ./operator
COPY spark-apps ./spark-apps
# Lanes itself as a wheel (with its compiled fast paths), installed in the final stage on top of
# the dependencies: the environment copied there stays the dependencies' alone, so its layer is
# reused after a change to the code, and only the wheel's small layer is new.
RUN /opt/lanes/bin/pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# Run: the interpreter, the dependencies' environment and Lanes' wheel installed in it; no
# compiler, no shell tools added.
FROM ${PYTHON_IMAGE}
RUN groupadd --gid 10001 lanes \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin lanes
COPY --from=build /opt/lanes /opt/lanes
# (a COPY, not a RUN --mount of the build stage: buildah's layer cache keys a COPY by what it
# copies, but a RUN by its text alone, and would keep installing the first wheel it saw)
COPY --from=build /wheels /tmp/wheels
RUN /opt/lanes/bin/pip install --no-cache-dir --no-deps --no-index /tmp/wheels/*.whl \
 && rm -rf /tmp/wheels \
 && /opt/lanes/bin/python -c "import lanes.protocol._records_c, lanes.client._open_batches_c, lanes_operator.main"
ENV PATH=/opt/lanes/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    LANES_LOG_FORMAT=json
# gRPC: broker 9092, controller 9093, coordinator 9094; Prometheus: 9401-9403 (docs/operations.md)
EXPOSE 9092 9093 9094 9401 9402 9403
# Data lives on a mounted volume (the chart's volumeClaimTemplates); the root filesystem can be read-only.
VOLUME ["/var/lib/lanes"]
USER 10001:10001
ENTRYPOINT ["lanes"]
CMD ["--help"]
