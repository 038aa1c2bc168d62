#!/usr/bin/env bash
# What `make bench` needs beyond Python packages: the peer servers Lanes is compared with
# (Debian's redis-server and nats-server). Installed with apt-get when missing.
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || [[ -x /usr/bin/redis-server ]] || missing+=(redis-server)
command -v nats-server >/dev/null 2>&1 || [[ -x /usr/sbin/nats-server ]] || missing+=(nats-server)
((${#missing[@]})) || exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "make bench needs: ${missing[*]} (no apt-get here: install them yourself)" >&2
  exit 1
fi
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
echo "installing benchmark peers: ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
