#!/usr/bin/env bash
# Make the project's Python environment (.venv) from uv.lock, with nothing but a system
# python3 >= 3.11 to start from: externally managed (PEP 668) or not, with or without pip,
# in a fresh HOME. uv comes from PyPI into a private venv under the cache and is always
# called by its absolute path; shotbench.which.uv() finds the same copy later.
# Idempotent and quick when nothing changed; every Makefile target that runs Python calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
export UV_PYTHON_DOWNLOADS=never
# trust the machine's CA store, as pip and curl do (corporate and proxy roots live there)
export UV_SYSTEM_CERTS="${UV_SYSTEM_CERTS:-1}"
UV_VERSION=0.13.9
CACHE="${SHOTBENCH_CACHE:-$HOME/.cache/shotbench}"
TOOLVENV="$CACHE/tools/uv"

say() { echo "bootstrap: $*" >&2; }
die() { echo "bootstrap: $*" >&2; exit 1; }

# 1. an interpreter: python3 >= 3.11 on PATH
PY="$(command -v python3 || true)"
[ -n "$PY" ] || die "python3 is not installed; install Python >= 3.11 (e.g. \`apt-get install python3 python3-venv\`) and retry."
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || die "python3 at $PY is $("$PY" -c 'import platform; print(platform.python_version())'); shotbench needs Python >= 3.11."

# 2. uv: SHOTBENCH_UV if set, else a private copy from PyPI in $TOOLVENV
UV="${SHOTBENCH_UV:-$TOOLVENV/bin/uv}"
mkdir -p "$CACHE/tools"
exec 9>"$CACHE/tools/uv.lock"
flock 9  # several checkouts may bootstrap at once against one cache
if [ ! -x "$UV" ] || ! "$UV" --version 2>/dev/null | grep -q "^uv $UV_VERSION"; then
  [ -n "${SHOTBENCH_UV:-}" ] && die "SHOTBENCH_UV=$SHOTBENCH_UV is not a working uv; unset it to let bootstrap install uv $UV_VERSION."
  say "installing uv $UV_VERSION from PyPI into $TOOLVENV"
  mkdir -p "$(dirname "$TOOLVENV")"
  rm -rf "$TOOLVENV"
  if ! "$PY" -m venv "$TOOLVENV" >/dev/null 2>&1; then
    # Debian/Ubuntu ship venv's ensurepip in a package of its own
    pyver="$("$PY" -c 'import sys; print(f"{sys.version_info.major}.{sys.version_info.minor}")')"
    say "python3 cannot make a venv; installing python$pyver-venv with apt"
    scripts/apt-ensure.sh "python$pyver-venv" \
      || die "python3 cannot create a virtual environment; install python3-venv (\`apt-get install python3-venv\`) and retry."
    rm -rf "$TOOLVENV"
    "$PY" -m venv "$TOOLVENV" >/dev/null 2>&1 \
      || die "python3 -m venv still fails after installing python$pyver-venv; try \`$PY -m venv /tmp/x\` by hand."
  fi
  if ! "$TOOLVENV/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"; then
    rm -rf "$TOOLVENV"
    die "could not install uv $UV_VERSION from PyPI with pip; check that PyPI is reachable (proxy settings) and retry."
  fi
  UV="$TOOLVENV/bin/uv"
fi
flock -u 9
export SHOTBENCH_UV="$UV"

# 3. .venv from the lock, with the same interpreter (extra arguments go to `uv sync`, e.g. --group lab);
#    bytecode compiled once here, so no process (a test, a Dask worker) compiles pandas again when
#    PYTHONDONTWRITEBYTECODE is set or site-packages is read-only
stamp=.venv/.shotbench-sync
if [ $# -gt 0 ] || [ ! -x .venv/bin/shotbench ] || [ ! -f "$stamp" ] || [ uv.lock -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  "$UV" sync --frozen --quiet --compile-bytecode --python "$PY" "$@" \
    || die "\`uv sync\` failed (see above); check that PyPI is reachable and retry \`make venv\`."
  touch "$stamp"
fi
# .venv remembers which uv made it, whatever SHOTBENCH_CACHE says later (shotbench.which.uv)
ln -sfn "$UV" .venv/bin/uv
