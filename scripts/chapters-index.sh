#!/usr/bin/env bash
# Rewrites chapters/README.md, the chapters' index: for every chapter folder chapters/NN_*/ it
# runs the chapter's program (full mode; --quick with the flag) and writes one row: the claim,
# the folder, what the chapter shows (its README's title) and the verdict line it printed here.
# Folders are found when the script runs, so a new chapter gets its row the first time.
# It builds nothing: build the chapters first (cmake --build build --target chapter_NN_topic).
# tests/chapters/test_index.cpp checks that every folder has a row, and every chapter's --quick
# test run that its verdict agrees with its row (but for the chapters whose rule compares timings:
# tests/chapters/chapter_index.h).
# Usage: scripts/chapters-index.sh [--quick] [--build DIR] [--only NN[,NN...]]
#   --only 09,10  reruns those chapters and keeps the other rows as they are
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
mode=full
only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) mode=quick ;;
    --build) build=$(cd "$2" && pwd); shift ;;
    --only) only=",$2,"; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "chapters-index.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

index="$root/chapters/README.md"
cd "$root"  # the chapters write their pictures under runs/ by default

# What the chapter shows: its README's title between the dash and "(claim ...)", else the first
# sentence of the claim in main.cpp's opening comment.
subject() {
  local folder=$1 title
  if [[ -f "chapters/$folder/README.md" ]]; then
    title=$(head -1 "chapters/$folder/README.md" | sed -e 's/^# Chapter [0-9]* — //' -e 's/ *(claim C[0-9]*)$//')
  else
    title=$(sed -n '/^\/\//!q; s|^// *||p' "chapters/$folder/main.cpp" | tr '\n' ' ' |
            sed -e 's/^Chapter [0-9]* — claim C[0-9]*: *//' -e 's/\([.!?]"\{0,1\}\) .*/\1/')
  fi
  printf '%s' "$title"
}

# A table cell: pipes escaped, so the verdict's "|x|" does not split the row.
cell() { printf '%s' "$1" | sed 's/|/\\|/g'; }

# The row already in the index for `folder` (for --only), or nothing.
old_row() { [[ -f "$index" ]] && grep -F "| [$1](" "$index" || true; }

# Runs one chapter; prints its row.
run_chapter() {
  local folder=$1 number=${1%%_*} binary="$build/bin/chapter_$1" output status start seconds last
  local claim="C$number" result
  if [[ ! -x "$binary" ]]; then
    result="not built: \`cmake --build build --target chapter_$folder\`"
    seconds="-"
  else
    start=$(date +%s)
    local flags=()
    [[ $mode == quick ]] && flags=(--quick)
    set +e
    output=$("$binary" "${flags[@]}" 2>&1)
    status=$?
    set -e
    seconds="$(( $(date +%s) - start )) s"
    last=$(printf '%s\n' "$output" | sed '/^[[:space:]]*$/d' | tail -1)
    if [[ $status -eq 0 && $last == "verdict $claim: "* ]]; then
      result="\`$(cell "$last")\`"
    else
      result="no verdict (exit code $status): $(cell "$last")"
    fi
  fi
  printf '| %s | [%s](%s/) | %s | %s | %s, %s |\n' "$claim" "$folder" "$folder" "$(cell "$(subject "$folder")")" \
    "$result" "$mode" "$seconds"
}

rows=()
for dir in chapters/[0-9][0-9]_*/; do
  folder=$(basename "$dir")
  number=${folder%%_*}
  if [[ -n $only && $only != *",$number,"* ]] && [[ -n $(old_row "$folder") ]]; then
    rows+=("$(old_row "$folder")")
    continue
  fi
  echo "chapters-index.sh: running $folder ($mode)..." >&2
  rows+=("$(run_chapter "$folder")")
done

{
  cat <<'EOF'
# The chapters: each claim of the lecture, reproduced on this machine

Each chapter is one program that reproduces one claim of the lecture (`lecture/claims.md`,
C01–C15) on real runs and ends with a computed verdict line; its folder's README states the rule
that decides it, the commands and the output in full. This index lists every chapter folder with
the verdict line its full-mode run printed on this machine.

It is written by `scripts/chapters-index.sh` (runs every `chapters/NN_*/` program; `--quick` for
the short runs, `--only 09,10` to rerun some and keep the other rows). `ctest -R chapters.index`
checks that every folder is listed, and each chapter's `--quick` test run that its verdict
(confirmed / not reproduced) agrees with the row here — except for C09, C10, C12 and C15, whose
rules compare timings that a shared machine moves between runs (their tests check that the
verdict follows from the figures printed).

| claim | folder | what it shows | result on this machine | mode, time |
|---|---|---|---|---|
EOF
  printf '%s\n' "${rows[@]}"
  cat <<EOF

Last written $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores (load average $(cut -d' ' -f1-3 /proc/loadavg) at the end;
the timing chapters print theirs beside their figures).
EOF
} > "$index.tmp"
mv "$index.tmp" "$index"
echo "chapters-index.sh: wrote $index" >&2
