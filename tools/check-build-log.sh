#!/usr/bin/env bash
# Fails when a build log shows a warning or an error located in Tessera's own headers (dsl/,
# codegen/, backends/). Device compilers (nvcc, hipcc) report device-pass diagnostics that the
# host compiler's -Werror never sees, so CI reads the log instead.
#   usage: tools/check-build-log.sh BUILD.log
set -euo pipefail
log=${1:?usage: check-build-log.sh BUILD.log}
root=$(cd "$(dirname "$0")/.." && pwd)
# GCC/clang "file:line:col: warning:" and nvcc/EDG "file(line): warning #N-D:" forms.
pattern="^($root/)?(dsl|codegen|backends)/tessera/[^:(]*(:[0-9]+:[0-9]+: |\\([0-9]+\\): )(warning|error)"
if grep -E "$pattern" "$log" >/tmp/tessera-header-diagnostics.txt; then
  echo "check-build-log: diagnostics in Tessera's headers:" >&2
  sort -u /tmp/tessera-header-diagnostics.txt | head -40 >&2
  exit 1
fi
if grep -qE '^FAILED: ' "$log"; then
  echo "check-build-log: the build failed:" >&2
  grep -E '^FAILED: ' "$log" | head -20 >&2
  exit 1
fi
echo "check-build-log: no warnings or errors from Tessera's headers in $log"
