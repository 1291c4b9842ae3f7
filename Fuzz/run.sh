#!/usr/bin/env bash
# Coverage-guided fuzzing of the front end with libFuzzer.
#   Fuzz/run.sh [SECONDS]     (default 120)
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/fuzz
mkdir -p "$out/corpus"
cp examples/*.rules examples/seeds/*.rules examples/invalid/*.rules "$out/corpus/" 2>/dev/null || true
swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name RuleLang \
  Sources/RuleLang/*.swift Fuzz/FuzzCheck.swift -o "$out/fuzz-check"
"$out/fuzz-check" -max_total_time="${1:-120}" -max_len=4096 -timeout=5 -rss_limit_mb=4096 "$out/corpus"
