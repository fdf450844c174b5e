#!/usr/bin/env bash
# Make the project's Python environment (.venv) from the lock file, installing uv if missing.
# Idempotent and quick when nothing changed; every Makefile target that runs Python calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
export UV_PYTHON_DOWNLOADS=never

if ! command -v uv >/dev/null 2>&1; then
  echo "bootstrap: installing uv from PyPI" >&2
  python3 -m pip install --quiet --user uv 2>/dev/null || python3 -m pip install --quiet uv
  export PATH="$HOME/.local/bin:$PATH"
fi
stamp=.venv/.shotbench-sync
if [ ! -x .venv/bin/shotbench ] || [ ! -f "$stamp" ] || [ uv.lock -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  uv sync --frozen --quiet "$@"
  touch "$stamp"
fi
