#!/usr/bin/env bash
# Build the Lanes images with podman/buildah (no Docker engine needed): `make images`.
#
#   tools/images/build.sh [lanes] [lanes-spark]       (default: both)
#
# Settings (environment, or make variables of the same name):
#   IMAGE_REPOSITORY  where the images are named (default localhost): REPO/lanes:TAG, REPO/lanes-spark:TAG
#   IMAGE_TAG         default: the project's version (pyproject.toml), as the chart's image.tag default
#   LOCAL_BASE=1      build on bases made here from Debian packages (tools/images/local-base.sh)
#                     instead of pulling python:3.11-slim-bookworm and apache/spark
#   PUSH=1            push the images to IMAGE_REPOSITORY afterwards (podman push; log in first)
# Prints each built image's name. Point the chart at them with
#   --set image.repository=$IMAGE_REPOSITORY/lanes --set image.tag=$IMAGE_TAG
# (and image.pullPolicy=Never when the image is only in the node's local store).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/podman-env.sh"

repository=${IMAGE_REPOSITORY:-localhost}
tag=${IMAGE_TAG:-$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/pyproject.toml")}
images=("$@")
((${#images[@]})) || images=(lanes lanes-spark)

for image in "${images[@]}"; do
  args=()
  case $image in
    lanes)
      [[ ${LOCAL_BASE:-0} == 1 ]] && args+=(--build-arg "PYTHON_IMAGE=$("$here/local-base.sh" python)") ;;
    lanes-spark)
      [[ ${LOCAL_BASE:-0} == 1 ]] && args+=(--build-arg "SPARK_IMAGE=$("$here/local-base.sh" spark)") ;;
    *) echo "unknown image: $image (lanes, lanes-spark)" >&2; exit 2 ;;
  esac
  name=$repository/$image:$tag
  echo "building $name" >&2
  # The build stage first, tagged (IMAGE-build): the prune below drops untagged images, and with
  # them the layers of an untagged build stage (its compiler, the dependencies): every build would
  # then make those again. The full build takes that stage from the layer cache.
  podman build --network host --layers "${args[@]}" -f "$root/deploy/docker/$image.Dockerfile" \
    --target build -t "$repository/$image-build:$tag" "$root" >&2
  podman build --network host --layers "${args[@]}" -f "$root/deploy/docker/$image.Dockerfile" -t "$name" "$root" >&2
  if [[ ${PUSH:-0} == 1 ]]; then
    podman push "$name" >&2
  fi
  echo "$name"
done
# Each build leaves the images it superseded (the previous build's and build stage's, untagged now)
# behind: some 4.5 GB per run of the image tests. Drop those of earlier builds; the layers this
# build reused have tagged children and stay, so the next build still finds its cache.
podman image prune -f --filter until=15m >/dev/null
