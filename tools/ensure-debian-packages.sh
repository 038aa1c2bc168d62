#!/usr/bin/env bash
# Install the Debian packages whose programs are missing, with apt-get (as root, or with sudo).
#   tools/ensure-debian-packages.sh "WHAT FOR" PROGRAM=PACKAGE ...
# A program counts as present when it is on PATH or in /usr/sbin or /usr/bin (some packages put
# servers in /usr/sbin, off an unprivileged PATH). Used by `make test` (promtool, from the
# prometheus package: it checks the alert rules and dashboard queries; java, for the Spark tests)
# and `make bench` (the peer servers redis-server and nats-server). Package servers are not
# started here.
set -euo pipefail
purpose=$1
shift
missing=()
for pair in "$@"; do
  program=${pair%%=*}
  package=${pair#*=}
  command -v "$program" >/dev/null 2>&1 || [[ -x /usr/sbin/$program || -x /usr/bin/$program ]] || missing+=("$package")
done
((${#missing[@]})) || exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "$purpose needs the Debian/Ubuntu packages: ${missing[*]} (no apt-get here: install them yourself)" >&2
  exit 1
fi
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
echo "installing $purpose: ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
