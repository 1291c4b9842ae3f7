#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer.
#   Fuzz/run.sh [SECONDS] [TARGET...]     (default 120 seconds; targets: check store entries timeline lsp)
# Each target is compiled from the sources it exercises as one module (imports of the
# package's own modules removed), so no package build is needed. Crashes are written
# to .build/fuzz/TARGET/ as crash-*; add each one under Tests/ as a regression input.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-120}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(check store entries timeline lsp)
root=.build/fuzz
# The harnesses keep a program in a global, which LeakSanitizer reports at exit.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
# RuleRuntime imports the system zlib through the CZlib module map, and three C targets of its
# own, compiled here with the toolchain's clang and linked in: the shared region's SIGBUS guard,
# the folded CRC-32 and the file calls (swapping two paths' files).
mkdir -p "$root"
clang -c -O -fsanitize=address Sources/CRegionGuard/region_guard.c -I Sources/CRegionGuard/include \
  -o "$root/region_guard.o"
clang -c -O -fsanitize=address Sources/CRuleChecksum/crc32_fold.c -I Sources/CRuleChecksum/include \
  -o "$root/crc32_fold.o"
clang -c -O -fsanitize=address Sources/CFileCalls/file_calls.c -I Sources/CFileCalls/include \
  -o "$root/file_calls.o"
flags=(-sanitize=fuzzer,address -parse-as-library -O -module-name Fuzzed -package-name Rules -I Sources/CZlib
  -I Sources/CRegionGuard/include -I Sources/CRuleChecksum/include -I Sources/CFileCalls/include
  "$root/region_guard.o" "$root/crc32_fold.o" "$root/file_calls.o")

sources() {  # copies of the given sources without imports of the package's modules
  local out="$root/$1/src"
  shift
  rm -rf "$out" && mkdir -p "$out"
  for f in "$@"; do sed -e '/^import RuleLang$/d' -e '/^import RuleRuntime$/d' -e '/^import RuleTools$/d' "$f" > "$out/$(basename "$f")"; done
  echo "$out"/*.swift
}

for target in "${targets[@]}"; do
  mkdir -p "$root/$target/corpus"
  case "$target" in
    check)
      cp examples/*.rules examples/seeds/*.rules examples/invalid/*.rules "$root/$target/corpus/" 2>/dev/null || true
      files=$(sources check Sources/RuleLang/*.swift Fuzz/FuzzCheck.swift) ;;
    store)
      cp Fuzz/corpus/store/* "$root/$target/corpus/" 2>/dev/null || true
      files=$(sources store Sources/RuleLang/*.swift $(find Sources/RuleRuntime -name "*.swift") Fuzz/FuzzStore.swift) ;;
    entries)
      files=$(sources entries Sources/RuleLang/*.swift $(find Sources/RuleRuntime -name "*.swift") Fuzz/FuzzEntries.swift) ;;
    timeline)
      cp examples/*.timeline examples/seeds/*.timeline "$root/$target/corpus/" 2>/dev/null || true
      files=$(sources timeline Sources/RuleLang/*.swift $(find Sources/RuleRuntime -name "*.swift") Sources/RuleTimeline/Timeline.swift Sources/RuleTimeline/TimelineMessages.swift \
        Fuzz/FuzzTimeline.swift) ;;
    lsp)
      cp examples/*.rules "$root/$target/corpus/" 2>/dev/null || true
      files=$(sources lsp Sources/RuleLang/*.swift Sources/RuleTools/*.swift Sources/RuleLSP/*.swift Fuzz/FuzzLSP.swift) ;;
    *) echo "unknown target '$target'; targets: check store entries timeline lsp" >&2; exit 64 ;;
  esac
  # shellcheck disable=SC2086
  { swiftc "${flags[@]}" $files -o "$root/$target/fuzz-$target" 2>&1 || exit 1; } | { grep -v "Cannot export local symbol" || true; }
  (cd "$root/$target" && ./"fuzz-$target" -max_total_time="$seconds" -max_len=4096 -timeout=5 -rss_limit_mb=4096 \
    corpus 2>&1 | tail -n 3)
done
