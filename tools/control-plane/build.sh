#!/usr/bin/env bash
# Builds the real control plane the tests run against (kube-apiserver, kube-controller-manager,
# kubectl, etcd) from the pinned modules of this directory, into .cache/control-plane/<key>/bin,
# where <key> is a digest of both go.mod and go.sum files and of this script. A second run with
# the same key only prints the directory. Usage: tools/control-plane/build.sh [print-dir]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
key="$(cat "$here/go.mod" "$here/go.sum" "$here/etcd/go.mod" "$here/etcd/go.sum" "$here/build.sh" \
    | sha256sum | cut -c1-16)"
out="$root/.cache/control-plane/$key"
if [ "${1:-}" = "print-dir" ]; then echo "$out"; exit 0; fi
if [ -f "$out/.complete" ]; then echo "$out"; exit 0; fi
command -v go >/dev/null 2>&1 || {
    echo "Go is not installed: the real control plane cannot be built (see docs/real-cluster.md)" >&2
    exit 3
}
mkdir -p "$out/bin"
# -mod=readonly: go.sum must already hold every module; nothing is resolved at build time.
export GOFLAGS="-mod=readonly -trimpath" CGO_ENABLED=0
k8s_version="$(cd "$here" && go list -m -f '{{.Version}}' k8s.io/kubernetes)"
etcd_version="$(cd "$here/etcd" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)"
major="${k8s_version#v}"; minor="${major#*.}"; major="${major%%.*}"; minor="${minor%%.*}"
date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major"
    ldflags="$ldflags -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
done
start=$SECONDS
(cd "$here" && go build -ldflags "-s -w$ldflags" -o "$out/bin/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kubectl)
(cd "$here/etcd" && go build -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$etcd_version" \
    -o "$out/bin/etcd" go.etcd.io/etcd/server/v3)
echo "built kube-apiserver, kube-controller-manager, kubectl $k8s_version and etcd $etcd_version" \
    "in $((SECONDS - start)) s" >&2
touch "$out/.complete"
echo "$out"
