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
# A stub keeps the marker lines and the region's top level: each function's signature (up to
# the line that opens its body, which must end in "{") and the comments between functions;
# each body becomes a throw of rg::NotImplemented("labN.name"), at the markers' indent.
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
# "{" minus "}" on a line, leaving out string and character literals and // comments.
function net_braces(line,    opens, closes) {
  gsub(/"([^"\\]|\\.)*"/, "", line)
  gsub(/'([^'\\]|\\.)*'/, "", line)
  sub(/\/\/.*/, "", line)
  opens = gsub(/\{/, "{", line)
  closes = gsub(/\}/, "}", line)
  return opens - closes
}
function print_solution_line(line) {
  gsub(/^[ \t]+|[ \t\r]+$/, "", line)
  if (length(line) >= 12) print line
}

# A region's opening and closing, the same checks in every mode.
function begin_region() {
  if (in_region) fail("nested BEGIN SOLUTION")
  in_region = 1
  depth = 0
  bodies = 0
  name = region_name($0)
  indent = $0
  sub(/[^ \t].*/, "", indent)
}
function end_region() {
  if (!in_region) fail("END SOLUTION without BEGIN")
  if (!bodies) fail("region " name " has no body (no line ending in \"{\")")
  if (depth != 0) fail("region " name " ends inside a body")
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
  if (taken) printf "#line %d \"%s\"\n%s", first_line[name], path, submitted[name]
  if (stubbed && mode == "splice") print "missing " name > "/dev/stderr"
  next
}
is_end($0) {
  end_region()
  if (taken) printf "#line %d \"%s\"\n", FNR, path
  if (mode != "lines") print
  next
}
# Inside a region: its top level (signatures, the comments between functions) and the bodies,
# told apart by counting braces outside strings, characters and comments.
in_region {
  depth_before = depth
  depth += net_braces($0)
  if (depth < 0) fail("region " name ": a \"}\" closes more than the region opened")
  at_top = depth_before == 0
  if (at_top && depth > 0) {
    if (!opens_body($0)) fail("region " name ": a function body must open at the end of a line")
    bodies++
  }
  if (taken) next
  if (mode == "lines") {
    if (!at_top && depth > 0) print_solution_line($0)
  } else if (!stubbed || at_top) {
    print
    if (stubbed && depth > 0) printf "%s  throw rg::NotImplemented(\"%s\");\n", indent, name
  } else if (depth == 0) {
    print indent "}"
  }
  next
}
mode != "lines" { print }
END { if (!failed && in_region) { FNR = "end"; fail("region " name " is not closed") } }
