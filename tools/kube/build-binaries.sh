#!/usr/bin/env bash
# Build the real Kubernetes control-plane binaries the tests run, once, from the Go module proxy
# (no registry ships them), and cache them by version under ~/.cache/lanes/kube/ :
#
#   tools/kube/build-binaries.sh [COMPONENT ...]      (default: etcd kube-apiserver kubectl helm)
#
# COMPONENT is one of etcd, helm, coredns, or a command of k8s.io/kubernetes (kube-apiserver,
# kubectl, kubelet, kube-scheduler, kube-controller-manager, kube-proxy). The node's components
# (kubelet and the rest) serve the one-node cluster (tools/kube/node.sh), not `make test`. Prints nothing when everything asked for is
# cached; each binary lands at ~/.cache/lanes/kube/<component>-<version> and is written under a
# temporary name first, so an interrupted build never leaves a half binary behind. Versions are
# pinned here (and only here); LANES_KUBE_CACHE moves the cache.
#
# Cold on 2 cores: kube-apiserver 5.5-7 min (2.4 GB peak at the link), kubectl ~30 s more,
# etcd < 1 min, helm ~2 min. GOTOOLCHAIN stays the machine's Go (1.26 builds all of these).
set -euo pipefail

KUBERNETES_VERSION=v1.37.2
ETCD_VERSION=v3.7.3
HELM_VERSION=v3.22.0
COREDNS_VERSION=v1.15.0

cache=${LANES_KUBE_CACHE:-$HOME/.cache/lanes/kube}
mkdir -p "$cache"
# One build at a time per cache (a test asking for a binary while `make test-deps` builds it waits).
exec 9>"$cache/.lock"
flock 9
components=("$@")
((${#components[@]})) || components=(etcd kube-apiserver kubectl helm)

if ! command -v go >/dev/null 2>&1; then
  echo "building the Kubernetes test binaries needs Go (1.26 or newer) on PATH" >&2
  exit 1
fi
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
# Keep the module and build caches with the binaries, so a warm machine reuses both.
export GOMODCACHE=${GOMODCACHE:-$cache/go/mod} GOCACHE=${GOCACHE:-$cache/go/build}

version_of() {
  case $1 in
    etcd) echo "$ETCD_VERSION" ;;
    helm) echo "$HELM_VERSION" ;;
    coredns) echo "$COREDNS_VERSION" ;;
    *) echo "$KUBERNETES_VERSION" ;;
  esac
}

# A throwaway module per product, in the cache (its go.sum is reused next time).
module_dir() {
  local dir=$cache/src/$1
  mkdir -p "$dir"
  echo "$dir"
}

build_etcd() {
  local dir
  dir=$(module_dir "etcd-$ETCD_VERSION")
  cat >"$dir/main.go" <<'GO'
// Command etcd is etcd's own server main, built from its module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  [[ -f $dir/go.mod ]] || (cd "$dir" && go mod init lanes.dev/kube/etcd >/dev/null 2>&1)
  (cd "$dir" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null 2>&1 && go mod tidy >/dev/null 2>&1 &&
    go build -trimpath -ldflags "-s -w" -o "$2" .)
}

build_helm() {
  local dir
  dir=$(module_dir "helm-$HELM_VERSION")
  cat >"$dir/tools.go" <<'GO'
//go:build tools

// Package tools pins helm's module for `go build helm.sh/helm/v3/cmd/helm`.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
GO
  [[ -f $dir/go.mod ]] || (cd "$dir" && go mod init lanes.dev/kube/helm >/dev/null 2>&1)
  local v=${HELM_VERSION#v}
  (cd "$dir" && go get "helm.sh/helm/v3@$HELM_VERSION" >/dev/null 2>&1 && go mod tidy >/dev/null 2>&1 &&
    go build -trimpath -o "$2" \
      -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=37 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37" \
      helm.sh/helm/v3/cmd/helm)
  : "$v"
}

build_coredns() {
  local dir
  dir=$(module_dir "coredns-$COREDNS_VERSION")
  cat >"$dir/tools.go" <<'GO'
//go:build tools

// Package tools pins CoreDNS's module for `go build github.com/coredns/coredns`.
package tools

import _ "github.com/coredns/coredns"
GO
  [[ -f $dir/go.mod ]] || (cd "$dir" && go mod init lanes.dev/kube/coredns >/dev/null 2>&1)
  (cd "$dir" && go get "github.com/coredns/coredns@$COREDNS_VERSION" >/dev/null 2>&1 && go mod tidy >/dev/null 2>&1 &&
    go build -trimpath -ldflags "-s -w" -o "$2" github.com/coredns/coredns)
}

# k8s.io/kubernetes is not meant to be a dependency: its go.mod replaces each staging module by
# a directory of its own tree. Map each of them to the published k8s.io/X v0.<minor>.<patch>.
kubernetes_module() {
  local dir
  dir=$(module_dir "kubernetes-$KUBERNETES_VERSION")
  if [[ ! -f $dir/go.mod ]]; then
    local upstream staging=v0${KUBERNETES_VERSION#v1}
    upstream=$(go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
    {
      echo "module lanes.dev/kube/kubernetes"
      echo
      echo "go $(sed -n 's/^go \(.*\)$/\1/p' "$upstream")"
      echo
      echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
      echo
      echo "replace ("
      sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*$#\t\1 => \1 '"$staging"'#p' "$upstream"
      echo ")"
    } >"$dir/go.mod.new"
    mv "$dir/go.mod.new" "$dir/go.mod"
    cat >"$dir/tools.go" <<'GO'
//go:build tools

// Package tools pins the Kubernetes commands built from this module.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
    (cd "$dir" && go mod tidy >/dev/null)
  fi
  echo "$dir"
}

build_kubernetes() {
  local dir minor=${KUBERNETES_VERSION#v1.}
  minor=${minor%%.*}
  dir=$(kubernetes_module)
  local pkg=component-base/version
  local ldflags="-s -w -X k8s.io/$pkg.gitVersion=$KUBERNETES_VERSION -X k8s.io/$pkg.gitMajor=1 -X k8s.io/$pkg.gitMinor=$minor -X k8s.io/$pkg.gitTreeState=clean -X k8s.io/$pkg.buildDate=1970-01-01T00:00:00Z"
  ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$KUBERNETES_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  (cd "$dir" && go build -trimpath -ldflags "$ldflags" -o "$2" "k8s.io/kubernetes/cmd/$1")
}

for component in "${components[@]}"; do
  version=$(version_of "$component")
  target=$cache/$component-$version
  [[ -x $target ]] && continue
  echo "building $component $version into $cache (once; later runs reuse it)" >&2
  started=$SECONDS
  case $component in
    etcd) build_etcd "$component" "$target.partial" ;;
    helm) build_helm "$component" "$target.partial" ;;
    coredns) build_coredns "$component" "$target.partial" ;;
    kube-apiserver | kubectl | kubelet | kube-scheduler | kube-controller-manager | kube-proxy)
      build_kubernetes "$component" "$target.partial" ;;
    *) echo "unknown component: $component" >&2; exit 2 ;;
  esac
  mv "$target.partial" "$target"
  echo "built $component $version in $((SECONDS - started)) s" >&2
done
