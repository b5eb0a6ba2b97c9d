#!/usr/bin/env bash
# Runs every Fuzz target in the module for the given time each (default 5s).
set -euo pipefail
cd "$(dirname "$0")/.."
t="${1:-5s}"
for f in $(grep -rl --include='*_test.go' '^func Fuzz' .); do
  pkg="./$(dirname "${f#./}")"
  for name in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$f" | cut -d' ' -f2); do
    echo "fuzz: $pkg $name ($t)"
    go test -run='^$' -fuzz="^${name}\$" -fuzztime="$t" "$pkg" >/tmp/mcplens-fuzz.log 2>&1 || { cat /tmp/mcplens-fuzz.log; exit 1; }
  done
done
