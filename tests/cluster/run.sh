#!/usr/bin/env bash
# ctest's entry to the cluster test (label "cluster"): three replicas behind nginx.
#
#   tests/cluster/run.sh TANDEM_BINARY
#
# Skips (exit 77, which ctest reports as skipped) when nginx, node or the test's npm client
# (tests/cluster/node/node_modules, installed by tests/cluster/setup) is missing. Whatever
# happens, the clusters it started are killed (each runs in its own process group) and its
# temp dir is removed (kept, with every log, when TANDEM_CLUSTER_KEEP is set).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tandem=${1:?usage: tests/cluster/run.sh TANDEM_BINARY}

skip() {
  echo "cluster test skipped: $*"
  exit 77
}
command -v nginx >/dev/null || skip "nginx is not installed (scripts/setup installs it)"
command -v node >/dev/null || skip "node is not installed (scripts/setup installs nodejs)"
command -v curl >/dev/null || skip "curl is not installed (scripts/setup installs it)"
[[ -f $here/node/node_modules/openai/package.json &&
  -f $here/node/node_modules/@anthropic-ai/sdk/package.json ]] ||
  skip "the openai or @anthropic-ai/sdk npm package is not installed: run tests/cluster/setup"
((BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1))) ||
  skip "scripts/cluster needs bash 5.1"

work=$(mktemp -d "${TMPDIR:-/tmp}/tandem-cluster-test.XXXXXX")
cleanup() {
  local f pgid
  for f in "$work"/*.pgid; do
    [[ -f $f ]] || continue
    pgid=$(cat "$f")
    if kill -0 -- "-$pgid" 2>/dev/null; then
      echo "cluster test: killing process group $pgid left running" >&2
      kill -KILL -- "-$pgid" 2>/dev/null
    fi
  done
  if [[ -n ${TANDEM_CLUSTER_KEEP:-} ]]; then
    echo "cluster test: kept $work (TANDEM_CLUSTER_KEEP)"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

cd "$here/node" || exit 1
timeout -k 5 180 node "$here/node/cluster_test.mjs" "$tandem" "$repo" "$work"
