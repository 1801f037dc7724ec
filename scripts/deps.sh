#!/usr/bin/env bash
# Installs the Debian packages ptimer builds with, if any is missing.
# Run by the other scripts (bash scripts/deps.sh [extra packages...]); uses
# sudo when not root.
set -euo pipefail
pt_deps=(cmake gcc make pkg-config libmimalloc-dev liburing-dev "$@")
missing=()
for p in "${pt_deps[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "ptimer: installing ${missing[*]}" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    # A failed update (no network, a broken mirror) need not be fatal: the
    # package lists already on the machine may still hold what is missing.
    if ! $sudo apt-get update -qq; then
        echo "ptimer: apt-get update failed; trying the install with the package lists as they are" >&2
    fi
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
