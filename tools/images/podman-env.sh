# Sourced by the image scripts and the image tests: podman and buildah settings that work on a
# machine without a Docker engine, systemd or cgroup v2 delegation (../shared/TESTING.md): the
# runc runtime (crun refuses this cgroup layout), cgroupfs, file events, explicit ulimits (raising
# RLIMIT_NOFILE fails otherwise). Image layers are stored under ~/.cache/lanes/images/storage,
# beside the other one-off builds, so a machine that keeps that cache rebuilds only what changed.
# An existing CONTAINERS_CONF or CONTAINERS_STORAGE_CONF is respected.
lanes_image_cache=${LANES_IMAGE_CACHE:-$HOME/.cache/lanes/images}
mkdir -p "$lanes_image_cache"
if [[ -z ${CONTAINERS_CONF:-} ]]; then
  CONTAINERS_CONF=$lanes_image_cache/containers.conf
  cat >"$CONTAINERS_CONF.new" <<'CONF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
  mv "$CONTAINERS_CONF.new" "$CONTAINERS_CONF"
  export CONTAINERS_CONF
fi
if [[ -z ${CONTAINERS_STORAGE_CONF:-} && $(id -u) == 0 ]]; then
  CONTAINERS_STORAGE_CONF=$lanes_image_cache/storage.conf
  cat >"$CONTAINERS_STORAGE_CONF.new" <<CONF
[storage]
driver = "overlay"
graphroot = "$lanes_image_cache/storage"
runroot = "/run/lanes-containers"
CONF
  mv "$CONTAINERS_STORAGE_CONF.new" "$CONTAINERS_STORAGE_CONF"
  export CONTAINERS_STORAGE_CONF
fi
if ! command -v podman >/dev/null 2>&1; then
  echo "building images needs podman and buildah (Debian packages podman buildah runc; make images installs them)" >&2
  exit 1
fi
