#!/usr/bin/env bash
# ctest's offline check of deploy/k8s (label "cluster"), with no cluster to talk to:
# kubectl builds the kustomization and parses every object (kubectl kustomize, then
# kubectl label --local), and tests/cluster/node/k8s_check.mjs checks what the manifests
# promise (probes, preStop and grace, requests, HPA metric) against tandem itself.
# Not checked offline: the objects' schema (that needs an API server's OpenAPI document),
# and their behaviour on a real cluster.
#
#   tests/cluster/k8s.sh TANDEM_BINARY
#
# Skips (77) when kubectl or node is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tandem=${1:?usage: tests/cluster/k8s.sh TANDEM_BINARY}
command -v kubectl >/dev/null || { echo "k8s check skipped: kubectl is missing (scripts/setup installs kubernetes-client)"; exit 77; }
command -v node >/dev/null || { echo "k8s check skipped: node is missing (scripts/setup installs nodejs)"; exit 77; }
export KUBECONFIG=/dev/null  # no cluster: nothing may be contacted
work=$(mktemp -d "${TMPDIR:-/tmp}/tandem-k8s-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
kubectl version --client 2>/dev/null | head -n 1 || true
kubectl kustomize "$repo/deploy/k8s" >"$work/built.yaml"
kubectl label --local -f "$work/built.yaml" -o json checked-by=tests-cluster-k8s >"$work/objects.json"
"$tandem" make-model --shape tiny --out "$work/tiny.gguf" >/dev/null
node "$here/node/k8s_check.mjs" "$work/objects.json" "$tandem" "$work/tiny.gguf"
