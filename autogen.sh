#!/bin/sh
# Regenerate the build system: installs config/tap-driver.sh and friends.
set -e
cd "$(dirname "$0")"
mkdir -p config/m4
autoreconf --install --force --warnings=all "$@"
