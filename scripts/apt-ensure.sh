#!/usr/bin/env bash
# Install Debian packages that are missing (build headers, chromium for the browser test).
# Usage: scripts/apt-ensure.sh PKG...   Only acts on packages dpkg does not know as installed.
set -euo pipefail
missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
  echo "apt-ensure: missing Debian packages: ${missing[*]}; install them with apt-get (needs root)." >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "apt-ensure: installing ${missing[*]}" >&2
$SUDO apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
