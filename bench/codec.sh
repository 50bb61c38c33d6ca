#!/bin/sh
# bench/codec.sh: the client's stream decoding alone (core/tests/bench_codec.c):
# a command's output as Connect envelopes of JSON data events with base64
# bytes, decoded into queued events; MB/s per core for each stage. Builds the
# tests (RelWithDebInfo) into build/ when the benchmark is not there yet.
#   sh bench/codec.sh [MB=1024] [chunk_bytes=65536]
set -eu
cd "$(dirname "$0")/.."
if [ ! -x build/core/tests/bench_codec ]; then
  cmake -S . -B build -DE2B_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j2 --target bench_codec >/dev/null
fi
build/core/tests/bench_codec "${1:-1024}" "${2:-65536}"
