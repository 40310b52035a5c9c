# The solution regions of the labs (DESIGN.md section 7): `// BEGIN SOLUTION labN.name` ...
# `// END SOLUTION` around one or more whole functions. Shared by scripts/make-student-release
# and scripts/grade, so that the release's stub and the grader's stub are the same text.
#   awk -v mode=stub -f solution-regions.awk FILE            every region reduced to its stub
#   awk -v mode=lines -f solution-regions.awk FILE           the solution's lines (leak scan)
#   awk -v mode=splice -v lab=N -v path=REL -v submission=FILE -f solution-regions.awk REFERENCE
#       REFERENCE with each labN region replaced by FILE's region of that name (a stub where
#       FILE lacks it: pass /dev/null for "no file"); "#line" directives keep
#       the compiler's line numbers those of the file they come from. Lists on stderr, one per
#       line, "missing NAME" for each region it had to stub; with -v missing=keep, a region
#       FILE lacks keeps REFERENCE's text instead (how scripts/labs-check.sh completes a
#       wrong solution that holds only the regions it changes).
# A stub keeps the marker lines and the signature (every line up to and including the first
# one that ends in "{") and throws rg::NotImplemented("labN.name") at the signature's indent.
# Fails on a region that is not closed, is nested, has no body or a malformed name.

function fail(msg) {
  printf "solution-regions: %s:%s: %s\n", FILENAME, FNR, msg > "/dev/stderr"
  failed = 1
  exit 1
}
function fail_submission(msg) {
  printf "solution-regions: %s:%s: %s\n", submission, submission_line, msg > "/dev/stderr"
  failed = 1
  exit 1
}
function region_name(line,    name) {
  name = line
  sub(/.*\/\/ BEGIN SOLUTION /, "", name)
  sub(/[ \t\r]+$/, "", name)
  if (name !~ /^lab[0-9]+\.[a-z0-9_]+$/) fail("region name \"" name "\" is not labN.name")
  return name
}
function is_begin(line) { return line ~ /^[ \t]*\/\/ BEGIN SOLUTION / }
function is_end(line) { return line ~ /^[ \t]*\/\/ END SOLUTION/ }
function opens_body(line) { return line ~ /\{[ \t\r]*$/ }
function stub_end() { printf "%s  throw rg::NotImplemented(\"%s\");\n%s}\n", indent, name, indent }

# A region's opening and closing, the same checks in every mode.
function begin_region() {
  if (in_region) fail("nested BEGIN SOLUTION")
  in_region = 1
  in_signature = 1
  name = region_name($0)
  indent = $0
  sub(/[^ \t].*/, "", indent)
}
function end_region() {
  if (!in_region) fail("END SOLUTION without BEGIN")
  if (in_signature) fail("region " name " has no body (no line ending in \"{\")")
  in_region = 0
}

# splice: read the submission first and remember each of its regions of this lab.
BEGIN {
  if (mode == "splice") {
    while ((status = (getline line < submission)) > 0) {
      ++submission_line
      if (is_begin(line)) {
        if (current != "") fail_submission("nested BEGIN SOLUTION")
        current = region_name(line)
        if (current !~ "^lab" lab "\\.") current = ""
        else { submitted[current] = ""; first_line[current] = submission_line + 1 }
      } else if (is_end(line)) current = ""
      else if (current != "") submitted[current] = submitted[current] line "\n"
    }
    if (status < 0) fail_submission("cannot read the file")
    if (current != "") fail_submission("region " current " is not closed")
    close(submission)
  }
}

is_begin($0) {
  begin_region()
  if (mode != "lines") print
  taken = mode == "splice" && name ~ "^lab" lab "\\." && (name in submitted)
  stubbed = mode == "stub" || (mode == "splice" && name ~ "^lab" lab "\\." && !taken && missing != "keep")
  if (taken) {
    printf "#line %d \"%s\"\n%s", first_line[name], path, submitted[name]
    in_signature = 0
  }
  if (stubbed && mode == "splice") print "missing " name > "/dev/stderr"
  next
}
is_end($0) {
  if (stubbed && !in_signature) stub_end()
  end_region()
  if (taken) printf "#line %d \"%s\"\n", FNR, path
  if (mode != "lines") print
  next
}
in_region && in_signature {
  if (opens_body($0)) in_signature = 0
  if (stubbed || (mode != "lines" && !taken)) print
  next
}
in_region {
  if (mode == "lines") {
    line = $0
    gsub(/^[ \t]+|[ \t\r]+$/, "", line)
    if (length(line) >= 12) print line
  } else if (!taken && !stubbed) print
  next
}
mode != "lines" { print }
END { if (!failed && in_region) { FNR = "end"; fail("region " name " is not closed") } }
