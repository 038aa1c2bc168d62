# The `lanes-spark` image: Apache Spark (the official image: JVM, Spark, its Python API in
# /opt/spark/python) plus Lanes' Spark data source and example jobs, for SparkApplications and
# `spark-submit --master k8s://...` (docs/spark.md). Build from the repository's root:
#   docker build -f deploy/docker/lanes-spark.Dockerfile -t lanes-spark:dev .
# Lanes needs Python 3.11; the Spark image's Ubuntu (jammy) has it as python3.11. Drivers and
# executors run it from /opt/lanes (PYSPARK_PYTHON), with Spark's own pyspark on the path Spark
# sets, so the Python side always matches the JVM side.
# tests/k8s/test_images.py checks this file against the repository.

ARG SPARK_IMAGE=apache/spark:4.3.0-scala2.13-java17-python3-ubuntu

# Build: the dependencies (pyarrow with them) in a Python 3.11 virtual environment, and Lanes as a
# wheel with its compiled codec.
FROM ${SPARK_IMAGE} AS build
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.11 python3.11-venv python3.11-dev gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml ./
# The dependencies (with the arrow extra) in a layer of their own, before the code: a build after a
# change to the code alone takes them from the layer cache.
RUN python3.11 -m venv /opt/lanes \
 && python3.11 -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print("\n".join(p["dependencies"] + p["optional-dependencies"]["arrow"]))' > /tmp/requirements.txt \
 && /opt/lanes/bin/pip install --no-cache-dir -r /tmp/requirements.txt
COPY README.md ./
COPY services ./services
COPY operator ./operator
COPY spark-apps ./spark-apps
# Lanes itself as a wheel (with its compiled codec), installed in the final stage on top of the
# dependencies: the environment copied there stays the dependencies' alone, so its layer is reused
# after a change to the code, and only the wheel's small layer is new.
RUN /opt/lanes/bin/pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# Run: Spark's image, Python 3.11 without a compiler, the environment, the jobs.
FROM ${SPARK_IMAGE}
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.11 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/lanes /opt/lanes
# (a COPY, not a RUN --mount of the build stage: buildah's layer cache keys a COPY by what it
# copies, but a RUN by its text alone, and would keep installing the first wheel it saw)
COPY --from=build /wheels /tmp/wheels
RUN /opt/lanes/bin/pip install --no-cache-dir --no-deps --no-index /tmp/wheels/*.whl \
 && rm -rf /tmp/wheels \
 && /opt/lanes/bin/python -c "import lanes.protocol._records_c, lanes.client._open_batches_c, lanes_spark, pyarrow"
COPY spark-apps /opt/lanes-spark
ENV PYSPARK_PYTHON=/opt/lanes/bin/python \
    PYSPARK_DRIVER_PYTHON=/opt/lanes/bin/python \
    PYTHONDONTWRITEBYTECODE=1
# Spark's user (uid 185 in the official image), numeric so runAsNonRoot can check it.
USER 185
