#!/usr/bin/env bash
# The labs' CI proof (labs/README.md, "Wrong solutions and the tests they fail"), run by .ci/run
# after the main tests:
#   1. the reference tree grades itself to full marks;
#   2. each wrong solution in labs/wrong/<labN_what>/ fails exactly the tests the README lists
#      for it, no more and no fewer; the one that hangs is graded with every lab, and costs
#      only its own lab's points, and its feedback names the rank and the collective;
#   3. scripts/make-student-release writes a release (its own scan: no solution text leaks),
#      which configures, builds only the lab targets, and grades itself to 0 with every test
#      failing on a not-implemented message; graded as a submission here, the same.
#   4. the release's own test suites (--release-suites, default "parallel"; "all": every one, as
#      ctest runs them): each test needs the labs tests/needs_labs.txt gives it and no others,
#      so a test needing none passes, and the others fail only on those labs' not-implemented
#      messages (ringgrad-needs-check).
# All gradings of this tree share one copy and one build folder (in --work, default
# $TMPDIR/ringgrad-labs-check).
# Usage: scripts/labs-check.sh [--work DIR] [--only NAME] [--release-suites "S1 S2"|all]
#        (--only NAME: one wrong solution, nothing else)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
# Outside the tree: the release must be (make-student-release refuses an OUTDIR inside it).
work=${TMPDIR:-/tmp}/ringgrad-labs-check only="" release_suites=parallel
while [[ $# -gt 0 ]]; do
  case $1 in
    --work) work=$(realpath -m "$2"); shift 2 ;;
    --only) only=$2; shift 2 ;;
    --release-suites) release_suites=$2; shift 2 ;;
    *) echo "usage: scripts/labs-check.sh [--work DIR] [--only NAME] [--release-suites S|all]" >&2; exit 2 ;;
  esac
done
mkdir -p "$work"
problems=0
problem() { echo "labs-check: FAIL: $*" >&2; problems=$((problems + 1)); }
started=$(date +%s)

grade() { "$repo/scripts/grade" --work "$work/grade" "$@"; }

# The tests labs/README.md lists under "### `NAME`" in its wrong-solutions section.
listed_failures() {
  awk -v name="$1" '
    /^## / { in_section = ($0 ~ /^## Wrong solutions and the tests they fail/) }
    in_section && /^### / { current = $0; gsub(/^### `|`.*$/, "", current) }
    in_section && current == name && /^- `labs\.lab/ { line = $0; sub(/^- `/, "", line); sub(/`.*$/, "", line); print line }
  ' "$repo/labs/README.md" | sort
}

# A wrong solution holds only the regions it changes: everything else comes from the reference
# (every other lab done right), so that its listed failures are its own.
complete_wrong_solution() {
  local wrong=$1 lab=$2 out=$3 f
  rm -rf "$out"
  mkdir -p "$out"
  (cd "$repo" && git ls-files | grep -v '^labs/' | xargs grep -l '^[[:space:]]*// BEGIN SOLUTION lab' |
    xargs cp --parents -t "$out")
  (cd "$wrong" && find . -type f | sed 's|^\./||') | while IFS= read -r f; do
    awk -v mode=splice -v lab="$lab" -v path="$f" -v submission="$wrong/$f" -v missing=keep \
        -f "$repo/scripts/solution-regions.awk" "$repo/$f" > "$out/$f"
  done
}

# Grades one wrong solution and compares what failed with the README's list.
check_wrong_solution() {
  local name=$1 lab scope=()
  lab=$(sed -nE 's/^lab([0-9]+)_.*/\1/p' <<< "$name")
  [[ -n $lab ]] || { problem "labs/wrong/$name: the name must start with labN_"; return; }
  if ! compgen -G "$repo/labs/tests/test_lab${lab}_*.cpp" > /dev/null; then
    echo "== labs-check: labs/wrong/$name skipped: lab $lab has no tests yet"
    return
  fi
  local expected
  expected=$(listed_failures "$name")
  [[ -n $expected ]] || problem "labs/README.md lists no failing tests for labs/wrong/$name"
  complete_wrong_solution "$repo/labs/wrong/$name" "$lab" "$work/submissions/$name"
  # The hanging one is graded with every lab: the grade must finish and cost only its lab.
  # (Its collectives give up after --timeout / 6 s: a quarter minute per test, not a minute.)
  if [[ $name == *hang* ]]; then scope=(--timeout 30); else scope=(--labs "$lab"); fi
  echo "== labs-check: labs/wrong/$name"
  grade "${scope[@]}" --failed "$work/$name.failed" --json "$work/$name.json" "$work/submissions/$name" \
    > "$work/$name.log" 2>&1 || { problem "$name: the grade did not finish (log: $work/$name.log)"; return; }
  if ! diff <(echo "$expected") <(sort "$work/$name.failed") > "$work/$name.diff"; then
    problem "$name: the failed tests differ from labs/README.md's list ('<' listed only, '>' failed only):"
    cat "$work/$name.diff" >&2
  fi
  if [[ $name == *hang* ]] && ! grep -q -E 'rank [0-9]+: [a-z_]+ \([a-z_]+\) #[0-9]+ timed out' "$work/$name.json"; then
    problem "$name: no test's feedback names the rank and the collective it hung in"
  fi
}

# Every test of a results.json failed, and each with a not-implemented message.
all_not_implemented() {
  local json=$1 what=$2 passed not_named
  passed=$(grep -c '"status": "passed"' "$json" || true)
  [[ $passed == 0 ]] || problem "$what: $passed test(s) passed"
  not_named=$(awk '/"output": / { out = $0 } /"status": "failed"/ { if (out !~ /: not implemented/) n++ } END { print n + 0 }' "$json")
  [[ $not_named == 0 ]] || problem "$what: $not_named failed test(s) without a not-implemented message"
  grep -q '"score": 0' "$json" || problem "$what: the score is not 0"
}

# The release's test suites, built in its grader's build folder, against tests/needs_labs.txt.
check_release_tests() {
  local build=$work/release-grade/src/build targets=(ringgrad-needs-check) pattern=() suite
  if [[ $release_suites != all ]]; then
    # (The lab test programs are there already: the release's own grade built them.)
    for suite in $release_suites; do targets+=("${suite}_tests"); done
    # The MPI variants run with "all" only: their programs are not among the targets.
    pattern=(-R "^(${release_suites// /|}|labs)\." -E "\.mpi\.")
  else
    targets=(all)
  fi
  echo "== labs-check: the release's tests (${release_suites})"
  cmake --build "$build" --parallel "$(nproc)" --target "${targets[@]}" > "$work/release-tests-build.log" 2>&1 ||
    { tail -30 "$work/release-tests-build.log" >&2; problem "the release's tests did not build"; return; }
  RINGGRAD_COLLECTIVE_TIMEOUT_S=10 ctest --test-dir "$build" "${pattern[@]}" --parallel "$(nproc)" --timeout 120 \
    --output-junit "$work/release-tests.xml" > "$work/release-tests.log" 2>&1 || true
  "$build/bin/ringgrad-needs-check" "$work/release/tests/needs_labs.txt" "$work/release-tests.xml" ||
    problem "the release's tests do not behave as tests/needs_labs.txt says (above)"
}

if [[ -z $only ]]; then
  echo "== labs-check: the reference tree"
  grade --failed "$work/reference.failed" --json "$work/reference.json" > "$work/reference.log" 2>&1 ||
    problem "the reference's grade did not finish (log: $work/reference.log)"
  [[ ! -s $work/reference.failed ]] || problem "the reference tree failed: $(xargs < "$work/reference.failed")"
fi

for wrong in "$repo"/labs/wrong/*/; do
  name=$(basename "$wrong")
  [[ -z $only || $only == "$name" ]] && check_wrong_solution "$name"
done

if [[ -z $only ]]; then
  echo "== labs-check: the student release"
  rm -rf "$work/release"
  "$repo/scripts/make-student-release" "$work/release" > "$work/release.log" 2>&1 ||
    { cat "$work/release.log" >&2; problem "make-student-release failed"; }
  # Graded as a submission here (hidden tests included)...
  grade --json "$work/release-as-submission.json" "$work/release" > "$work/release-as-submission.log" 2>&1 ||
    problem "grading the release as a submission did not finish"
  all_not_implemented "$work/release-as-submission.json" "the release graded as a submission"
  # ...and by its own grader, in its own tree: it configures and builds only the lab targets.
  "$work/release/scripts/grade" --work "$work/release-grade" --json "$work/release-self.json" \
    > "$work/release-self.log" 2>&1 || { tail -30 "$work/release-self.log" >&2; problem "the release's own grade did not finish"; }
  all_not_implemented "$work/release-self.json" "the release grading itself"
  check_release_tests
fi

echo "== labs-check: $((problems)) problem(s), $(( $(date +%s) - started )) s"
[[ $problems == 0 ]]
