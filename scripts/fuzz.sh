#!/usr/bin/env bash
# Runs every Go fuzz target in the module, one at a time, for a bounded time.
#
#   scripts/fuzz.sh            10s per target
#   scripts/fuzz.sh 1m         1m per target (any -fuzztime value: 30s, 2m, 500x)
#   FUZZTIME=30s scripts/fuzz.sh
#   FUZZMINIMIZETIME=10s scripts/fuzz.sh   time to minimize an input (1s)
#
# Targets are found with `go test -list '^Fuzz'` in every package whose
# tests declare one. It prints a table of target, package and result, and
# exits 1 if any target fails. A failing input is written by the fuzzer to
# the package's testdata/fuzz/<Target>/ and its path is printed: commit it
# as a seed with the fix. A run that passes leaves the tree as it was (the
# generated corpus lives in GOCACHE). A target that fails only with Go
# 1.26's own "context deadline exceeded" at the end of its time, with no
# failing input, runs once more and says so in the table.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fuzztime=${1:-${FUZZTIME:-10s}}
# Minimizing each input that finds new coverage (60s by default) would
# eat a short run of a slow target; a failing input is minimized too, and
# 1s is enough to shorten it.
minimizetime=${FUZZMINIMIZETIME:-1s}

# The test binary's timeout bounds a hung input: the fuzzing time plus
# room for building, replaying the corpus and minimizing a failure.
case "$fuzztime" in
  *[0-9]s) secs=${fuzztime%s} ;;
  *[0-9]m) secs=$(( ${fuzztime%m} * 60 )) ;;
  *[0-9]h) secs=$(( ${fuzztime%h} * 3600 )) ;;
  *) secs=600 ;;
esac
[[ "$secs" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: fuzz time \"$fuzztime\" is not a whole number of s, m or h, nor a count like 500x" >&2; exit 2; }
timeout="$(( secs + 180 ))s"

start=$(date +%s)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# Only packages whose tests declare a fuzz target are built for listing.
mapfile -t pkgs < <(grep -rlE --include='*_test.go' --exclude-dir=node_modules --exclude-dir=testdata --exclude-dir=.git '^func Fuzz[A-Z0-9_a-z]*\(' . \
  | xargs -r -n1 dirname | sort -u)

targets=()   # "package target"
failed=0
rows=()
for pkg in "${pkgs[@]}"; do
  if ! out=$(go test -list '^Fuzz' "$pkg" 2>&1); then
    rows+=("$(printf '%-28s %-44s %s' '(list)' "${pkg#./}" 'FAIL: go test -list')")
    printf '%s\n' "$out" >&2
    failed=1
    continue
  fi
  while read -r name; do
    targets+=("$pkg $name")
  done < <(printf '%s\n' "$out" | grep -E '^Fuzz')
done

n=0
for t in "${targets[@]}"; do
  pkg=${t% *}
  name=${t#* }
  n=$(( n + 1 ))
  log="$logs/$n.log"
  echo "== ${pkg#./} $name ($fuzztime)" >&2
  t0=$(date +%s)
  fuzz_once() { go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimizetime" -timeout "$timeout" "$pkg" >"$log" 2>&1; }
  # Go 1.26's fuzzing coordinator can report its own -fuzztime deadline as
  # a failure (go.dev/issue/75804, fixed in Go 1.27): the deadline fires, the
  # coordinator reads the parent context's error before the child's is set,
  # and the target fails with a bare "context deadline exceeded" after its
  # whole fuzzing time, having written no input. A real finding always
  # writes one. Such a target runs once more; if the race strikes again the
  # target fuzzed its full time twice and found nothing, so it passes with
  # a note rather than failing the run on a toolchain bug.
  deadline_race() {
    grep -q 'Failing input written' "$log" && return 1
    awk '/^--- FAIL: /{getline l; gsub(/^[ \t]+|[ \t]+$/, "", l); if (l != "context deadline exceeded") bad=1; n++} END{exit !(n == 1 && !bad)}' "$log"
  }
  retried=""
  status=0
  fuzz_once || status=$?
  if [ "$status" != 0 ] && deadline_race; then
    retried=" (run twice: go.dev/issue/75804)"
    status=0
    fuzz_once || status=$?
    if [ "$status" != 0 ] && deadline_race; then
      retried=" (deadline race twice, no input found: go.dev/issue/75804)"
      status=0
    fi
  fi
  if [ "$status" = 0 ]; then
    result="ok$retried"
  else
    failed=1
    result="FAIL"
    input=$(sed -n 's/.*Failing input written to \(testdata\/fuzz\/[^ ]*\).*/\1/p' "$log" | head -n 1)
    if [ -n "$input" ]; then
      result="FAIL: input ${pkg#./}/$input"
    fi
    echo "-- output of $name in ${pkg#./}:" >&2
    tail -n 60 "$log" >&2
  fi
  rows+=("$(printf '%-28s %-44s %s (%ds)' "$name" "${pkg#./}" "$result" $(( $(date +%s) - t0 )))")
done

printf '\n%-28s %-44s %s\n' TARGET PACKAGE RESULT
printf '%s\n' "${rows[@]}"
printf '\n%d targets, fuzz time %s each, %ds in all (with building)\n' "${#targets[@]}" "$fuzztime" $(( $(date +%s) - start ))
exit "$failed"
