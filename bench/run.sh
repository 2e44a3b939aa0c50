#!/usr/bin/env bash
# `make bench`: runs every benchmark under bench/; each prints ratios against a peer measured in the same run.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
for script in bench/*.sh; do
  case "$(basename "$script")" in run.sh|soak.sh) continue ;; esac   # soak.sh runs for an hour on its own
  echo "== $script"
  bash "$script" || status=1
  echo
done
exit $status
