#!/usr/bin/env bash
# Apache Kafka's jars (tools/kafka/pom.xml) in ~/.cache/lanes/kafka/VERSION/libs, from Maven Central
# (cached in ~/.m2); prints that directory. A no-op once they are there. With "spark": Spark's Kafka
# connector instead (tools/kafka/spark/pom.xml).
#   tools/kafka/fetch.sh         ->   /root/.cache/lanes/kafka/4.4.0/libs
#   tools/kafka/fetch.sh spark   ->   /root/.cache/lanes/kafka/spark-4.2.0/libs
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pom=$here/pom.xml
[[ ${1:-} == spark ]] && pom=$here/spark/pom.xml
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
libs=${LANES_CACHE:-$HOME/.cache/lanes}/kafka/$version/libs
if [[ ! -f $libs/.complete ]]; then
  "$here/../ensure-debian-packages.sh" "Apache Kafka's tools" mvn=maven >&2
  rm -rf "$libs"
  mvn -q -B -f "$pom" dependency:copy-dependencies -DoutputDirectory="$libs" -DincludeScope=runtime >&2
  touch "$libs/.complete"
fi
echo "$libs"
