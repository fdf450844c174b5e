#!/usr/bin/env bash
# Rehearse what a new user runs: a fresh clone of the committed HEAD, an empty HOME, a stock
# PATH (no uv, no pyenv, no Go), then the README's two commands, timed step by step.
#   scripts/rehearse.sh [warm|cold]            the front door: `make bench-ros3`, then `make test`
#   scripts/rehearse.sh [warm|cold] TARGET...  just these make targets, each timed whole
# warm reuses this machine's build cache through SHOTBENCH_CACHE; cold starts from an empty one.
# When every step exits 0, the clone, its HOME and a cold cache (2-5 GB) are removed and the logs
# kept; on a failure, or with REHEARSE_KEEP=1, everything stays for a look.
#
# The front door runs as the steps `make bench-ros3` is made of (venv, envs, tools, then the
# benchmark and its report), one make call each: the same work, in the same order, as one
# `make bench-ros3`, so the table adds up to what a user waits for. Every log line carries the
# seconds since the clone, which is how the report's start and its screenshot are timed.
set -uo pipefail
mode=${1:-warm}; shift || true
case "$mode" in warm|cold) ;; *) echo "rehearse: the first argument is warm or cold, not '$mode'." >&2; exit 2;; esac
targets=("$@")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/shotbench-rehearse.XXXXXX)
t0=$(date +%s)
git clone -q "$root" "$work/clone" || { echo "rehearse: cannot clone $root." >&2; exit 1; }
mkdir "$work/home"
cache=${SHOTBENCH_CACHE:-$HOME/.cache/shotbench}
[ "$mode" = cold ] && cache="$work/cache"
echo "rehearse: $mode cache ($cache), clone of $(git -C "$root" rev-parse --short HEAD) in $work" >&2
echo "rehearse: load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

since() { echo $(( $(date +%s) - t0 )); }

# run NAME TARGET: one make call as a new user, each output line stamped with seconds since the clone.
run() {
  local name=$1 target=$2 started rc
  started=$(date +%s)
  env -i HOME="$work/home" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    SHOTBENCH_CACHE="$cache" make -C "$work/clone" "$target" 2>&1 \
    | while IFS= read -r line; do printf '%5d %s\n' $(( $(date +%s) - t0 )) "$line"; done >"$work/$name.log"
  rc=${PIPESTATUS[0]}
  secs[$name]=$(( $(date +%s) - started )); rcs[$name]=$rc
  echo "rehearse: make $target → exit $rc in ${secs[$name]} s (log: $work/$name.log)" >&2
  return "$rc"
}

# tidy STATUS: after a green rehearsal only the logs stay; the rest is gigabytes in /tmp.
tidy() {
  if [ "$1" -eq 0 ] && [ -z "${REHEARSE_KEEP:-}" ]; then
    chmod -R u+w "$work/clone" "$work/home" "$work/cache" 2>/dev/null  # uv's cache holds read-only files
    rm -rf "$work/clone" "$work/home" "$work/cache"
    echo "rehearse: removed the clone, its HOME and cache; the logs stay in $work (REHEARSE_KEEP=1 keeps all)" >&2
  else
    echo "rehearse: everything stays in $work" >&2
  fi
}

declare -A secs rcs
status=0
if [ ${#targets[@]} -gt 0 ]; then
  for target in "${targets[@]}"; do run "$target" "$target" || status=1; done
  tidy $status
  exit $status
fi

bench_started=$(since)
run venv venv && run envs envs && run tools tools && run bench bench-ros3 || status=1
bench_done=$(since)
# The report starts at the renderer's first line; the cases are everything of `bench` before it.
report_at=$(grep -m1 -E '^ *[0-9]+ Rendering ' "$work/bench.log" 2>/dev/null | awk '{print $1}')
# the first report screenshot: "<mtime> <path>", its time for the table, its file kept after the tidy
png=$(find "$work/clone/reports" -name '*.png' -printf '%T@ %p\n' 2>/dev/null | sort -n | head -1)
first_png=$([ -n "$png" ] && echo $(( ${png%%.*} - t0 )) || echo "none")
[ -n "$png" ] && cp "${png#* }" "$work/"
[ $status -eq 0 ] && { run test test || status=1; }
total=$(since)

cases=${secs[bench]:-0}; report=0
if [ -n "$report_at" ]; then report=$(( bench_done - report_at )); cases=$(( ${secs[bench]:-0} - report )); fi
printf '\n| step | seconds |\n|---|---|\n'
printf '| uv bootstrap and the Python environment (`make venv`) | %s |\n' "${secs[venv]:-–}"
printf '| libhdf5 + h5py builds the default matrix needs (`make envs`) | %s |\n' "${secs[envs]:-–}"
printf '| S3 server, toxiproxy, headless browser (`make tools`) | %s |\n' "${secs[tools]:-–}"
printf '| the cases of the default matrix | %s |\n' "$cases"
printf '| the report and its screenshot | %s |\n' "$report"
printf '| **`make bench-ros3`, exit %s** | **%s** |\n' "${rcs[bench]:-–}" "$(( bench_done - bench_started ))"
printf '| first report screenshot, seconds after the clone | %s |\n' "$first_png"
printf '| **`make test`, exit %s** | **%s** |\n' "${rcs[test]:-–}" "${secs[test]:-–}"
printf '| **both commands, clone to green suite** | **%s** |\n' "$total"
printf 'load average at the end: %s (2 cores: above 2 means something else was running)\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
tidy $status
exit $status
