#!/bin/sh
# Generates the API reference of the e2b module (HTML, docs/api/) from the
# LDoc comments in lua/ with config.ld. Needs ldoc (Debian: lua-ldoc, which
# scripts/setup.sh installs). The manual, docs/manual.md, reads as it is.
set -eu
cd "$(dirname "$0")/.."
if ! command -v ldoc >/dev/null 2>&1; then
  echo "docs: ldoc not found (Debian: apt-get install lua-ldoc)" >&2
  exit 1
fi
rm -rf docs/api
ldoc .
echo "docs: docs/api/index.html"
