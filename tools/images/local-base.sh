#!/usr/bin/env bash
# Make a local base image from Debian packages, for machines that cannot pull from a public
# registry (the Dockerfiles take their base as a build argument; docs/kubernetes.md#images):
#
#   tools/images/local-base.sh python      -> localhost/lanes-base/python:3.11-bookworm
#   tools/images/local-base.sh spark       -> localhost/lanes-base/spark:<pyspark>-java17-bookworm
#
# `python` stands in for python:3.11-slim-bookworm: Debian's Python 3.11 as `python` with venv,
# CA certificates, nothing else. `spark` stands in for apache/spark's image: the same plus
# OpenJDK 17 and Spark from PyPI's pyspark (its jars, bin/ and python/) at /opt/spark, and
# Spark's user 185. Both are made with debootstrap (minbase) into a root file system, imported
# as one layer (FROM scratch + the tarball) and cached as a tarball under ~/.cache/lanes/images/
# so a warm machine only imports it. The host's CA bundle is the image's, so pip and apt inside
# builds trust what this machine trusts (its network may reach registries only through a proxy).
# Prints the image's name on stdout.
set -euo pipefail
kind=${1:?usage: local-base.sh python|spark}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/podman-env.sh"

SUITE=bookworm
MIRROR=${LANES_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Spark's version is the lanes-spark Dockerfile's public base's (apache/spark:X.Y.Z-...).
PYSPARK_VERSION=$(sed -n 's/^ARG SPARK_IMAGE=apache\/spark:\([0-9.]*\)-.*$/\1/p' "$here/../../deploy/docker/lanes-spark.Dockerfile")
cache=${LANES_IMAGE_CACHE:-$HOME/.cache/lanes/images}
mkdir -p "$cache"

case $kind in
  python)
    image=localhost/lanes-base/python:3.11-$SUITE
    packages=python3,python3-venv,python-is-python3,ca-certificates ;;
  spark)
    image=localhost/lanes-base/spark:$PYSPARK_VERSION-java17-$SUITE-2  # -2: with the entrypoint
    packages=python3,python3-venv,python-is-python3,ca-certificates,openjdk-17-jre-headless,procps,tini ;;
  *) echo "unknown base: $kind" >&2; exit 2 ;;
esac
# The root file system does not change with the image's revision suffix (-2 and later).
tarball=$cache/$(echo "${image%-[0-9]}" | tr '/:' '__').tar

if podman image exists "$image"; then
  echo "$image"
  exit 0
fi

if [[ ! -f $tarball ]]; then
  command -v debootstrap >/dev/null || { echo "local-base.sh needs debootstrap (Debian package)" >&2; exit 1; }
  echo "making the $kind base image with debootstrap (once; cached in $cache)" >&2
  rootfs=$(mktemp -d "$cache/rootfs.XXXXXX")
  trap 'rm -rf "$rootfs" "$rootfs.log"' EXIT
  debootstrap --variant=minbase --include="$packages" "$SUITE" "$rootfs" "$MIRROR" >"$rootfs.log" 2>&1 ||
    { tail -20 "$rootfs.log" >&2; exit 1; }
  rm -f "$rootfs.log"
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
  if [[ $kind == spark ]]; then
    in_root=(chroot "$rootfs" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin PIP_CERT=/etc/ssl/certs/ca-certificates.crt
      PIP_DISABLE_PIP_VERSION_CHECK=1)
    "${in_root[@]}" python -m venv /opt/pyspark
    "${in_root[@]}" /opt/pyspark/bin/pip install --no-cache-dir --quiet --use-pep517 "pyspark==$PYSPARK_VERSION" >&2
    site=$("${in_root[@]}" /opt/pyspark/bin/python -c 'import pyspark, os; print(os.path.dirname(pyspark.__file__))')
    # pyspark's package is a Spark home as the official image's /opt/spark is: bin/, jars/, and
    # python/lib/ with pyspark.zip and py4j, which spark-submit puts on the Python path.
    ln -s "$site" "$rootfs/opt/spark"
    chroot "$rootfs" groupadd --system --gid 185 spark
    chroot "$rootfs" useradd --system --uid 185 --gid 185 --home-dir /opt/spark/work-dir --no-create-home spark
    mkdir -p "$rootfs/opt/spark-work-dir" && chown 185:185 "$rootfs/opt/spark-work-dir"
  fi
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar --numeric-owner -C "$rootfs" -cf "$tarball.partial" .
  mv "$tarball.partial" "$tarball"
  rm -rf "$rootfs"
  trap - EXIT
fi

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
ln "$tarball" "$context/rootfs.tar" 2>/dev/null || cp "$tarball" "$context/rootfs.tar"
cp "$here/spark-entrypoint.sh" "$context/entrypoint.sh"
{
  echo "FROM scratch"
  echo "ADD rootfs.tar /"
  echo "ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt LANG=C.UTF-8"
  if [[ $kind == spark ]]; then
    echo "ENV SPARK_HOME=/opt/spark JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64 PATH=/opt/spark/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    echo "WORKDIR /opt/spark-work-dir"
    echo "COPY entrypoint.sh /opt/entrypoint.sh"
    echo 'ENTRYPOINT ["/usr/bin/tini", "-s", "--", "/opt/entrypoint.sh"]'
    echo "USER 185"
  fi
  echo 'CMD ["/bin/bash"]'
} >"$context/Containerfile"
podman build --quiet -t "$image" "$context" >/dev/null
echo "$image"
