#!/bin/bash
# The local Spark base's entrypoint (tools/images/local-base.sh spark), for what Spark on
# Kubernetes runs in its pods, as the official apache/spark image's /opt/entrypoint.sh does:
#   driver ARGS     spark-submit in client mode inside the driver pod, bound to the pod's address
#   executor        the executor backend, configured by the environment Spark's driver sets
#   anything else   run as given
set -euo pipefail
SPARK_CLASSPATH="${SPARK_CLASSPATH:-}:${SPARK_HOME}/jars/*"
case "${1:-}" in
  driver)
    shift
    exec "$SPARK_HOME/bin/spark-submit" \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS}" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=${SPARK_DRIVER_BIND_ADDRESS}" \
      --deploy-mode client "$@"
    ;;
  executor)
    shift
    java_options=()
    while IFS='=' read -r name value; do
      [[ $name == SPARK_JAVA_OPT_* ]] && java_options+=("$value")
    done < <(env)
    exec "${JAVA_HOME}/bin/java" "${java_options[@]}" \
      "-Xms${SPARK_EXECUTOR_MEMORY}" "-Xmx${SPARK_EXECUTOR_MEMORY}" \
      -cp "$SPARK_CLASSPATH" org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID" --cores "$SPARK_EXECUTOR_CORES" \
      --app-id "$SPARK_APPLICATION_ID" --hostname "$SPARK_EXECUTOR_POD_IP" \
      --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID" --podName "$SPARK_EXECUTOR_POD_NAME"
    ;;
  *)
    exec "$@"
    ;;
esac
