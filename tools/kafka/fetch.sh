#!/usr/bin/env bash
# Apache Kafka's jars (tools/kafka/pom.xml) in ~/.cache/lanes/kafka/VERSION/libs, from Maven Central
# (cached in ~/.m2); prints that directory. A no-op once they are there.
#   tools/kafka/fetch.sh   ->   /root/.cache/lanes/kafka/4.4.0/libs
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")
libs=${LANES_CACHE:-$HOME/.cache/lanes}/kafka/$version/libs
if [[ ! -f $libs/.complete ]]; then
  "$here/../ensure-debian-packages.sh" "Apache Kafka's tools" mvn=maven >&2
  rm -rf "$libs"
  mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$libs" -DincludeScope=runtime >&2
  touch "$libs/.complete"
fi
echo "$libs"
