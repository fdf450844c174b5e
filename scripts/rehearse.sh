#!/usr/bin/env bash
# Rehearse what a new user runs: a fresh clone of the committed HEAD, an empty HOME, a stock
# PATH (no uv, no pyenv, no Go), then the README's commands, each timed.
#   scripts/rehearse.sh [warm|cold] [TARGET...]     (default: warm bench-ros3 test)
# warm reuses this machine's build cache through SHOTBENCH_CACHE; cold starts from an empty one
# (the libhdf5 builds then take 5–8 min more on a quiet 2-core machine). Logs stay in the folder it prints.
set -uo pipefail
mode=${1:-warm}; shift || true
case "$mode" in warm|cold) ;; *) echo "rehearse: the first argument is warm or cold, not '$mode'." >&2; exit 2;; esac
targets=("$@"); [ ${#targets[@]} -eq 0 ] && targets=(bench-ros3 test)
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/shotbench-rehearse.XXXXXX)
git clone -q "$root" "$work/clone" || { echo "rehearse: cannot clone $root." >&2; exit 1; }
mkdir "$work/home"
cache=${SHOTBENCH_CACHE:-$HOME/.cache/shotbench}
[ "$mode" = cold ] && cache="$work/cache"
echo "rehearse: $mode cache ($cache), clone of $(git -C "$root" rev-parse --short HEAD) in $work" >&2
status=0
for target in "${targets[@]}"; do
  started=$(date +%s)
  env -i HOME="$work/home" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    SHOTBENCH_CACHE="$cache" make -C "$work/clone" "$target" >"$work/$target.log" 2>&1
  rc=$?
  echo "rehearse: make $target → exit $rc in $(( $(date +%s) - started )) s (log: $work/$target.log)"
  [ $rc -eq 0 ] || status=1
done
exit $status
