#!/usr/bin/env bash
# Compiles every C++ block of the documentation (```cpp fences in README.md and docs/*.md)
# against the built library, and runs the ones that are whole programs, so the usage the docs
# show cannot drift from the API. A compiler error points at the Markdown line (#line).
#
# How a block is compiled is said by an HTML comment right before its fence (blank lines may
# separate them; rendered Markdown does not show it):
#   (no marker)                    statements, compiled inside a function body that has argc and
#                                  argv; <strider/strider.h> and `using namespace strider` come
#                                  first, and the block's leading #include / using lines go to
#                                  file scope
#   <!-- snippet: body -->         the same, said explicitly
#   <!-- snippet: top -->          file-scope code as written (its own includes); with a main()
#                                  it is run and must exit 0 (without one it is only linked)
#   <!-- snippet: continue -->     appended to the previous block, in the same scope: one
#                                  example told in pieces
#   <!-- snippet: skip WHY -->     not compiled; WHY is required (an API still to come, pseudo-code)
# After body, top or continue, the rest of the marker is C++ that the prose implies but the block
# does not show (what its variables are); it goes right before the block:
#   <!-- snippet: body models::GPTConfig cfg; Tensor x, y; -->
#
# usage: scripts/check-doc-snippets.sh [--build DIR] [--prefix INSTALLED] [--cxx CXX] [-j N] [FILE.md...]
#   --build DIR    a configured and built strider tree (default: build); installed into
#                  DIR/_doc_snippets/prefix unless --prefix names an installation already made
#   --cxx CXX      compiler (default: $CXX or g++); flags come from the installed strider.pc
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
prefix=""
cxx=${CXX:-g++}
jobs=2
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --prefix) prefix=$2; shift 2 ;;
    --cxx) cxx=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    -*) echo "check-doc-snippets: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
if [ ${#files[@]} -eq 0 ]; then
  files=(README.md docs/*.md)
fi

work="$build/_doc_snippets"
rm -rf "$work/units"
mkdir -p "$work/units"
if [ -z "$prefix" ]; then
  [ -f "$build/build.ninja" ] || [ -f "$build/Makefile" ] || {
    echo "check-doc-snippets: $build is not a configured build; build strider first (README, Quick start)" >&2
    exit 2
  }
  prefix="$PWD/$work/prefix"
  rm -rf "$prefix"
  cmake --install "$build" --prefix "$prefix" > /dev/null
fi
pcfile=$(find "$prefix" -name strider.pc | head -n 1)
[ -n "$pcfile" ] || { echo "check-doc-snippets: no strider.pc under $prefix" >&2; exit 2; }
flags=$(PKG_CONFIG_PATH="$(dirname "$pcfile")" pkg-config --cflags --libs strider)

# Splits the Markdown files into units: one .cpp per unit (with #line directives back to the
# Markdown) and a line in units.tsv: id, kind (body|top), where, whether it is a program, or
# "skip" and the reason. A malformed marker is reported as kind "error".
awk -v out="$work/units" '
function flush() {
  if (unit == "") return
  f = out "/" unit ".cpp"
  if (ukind == "body") {
    print "#include <strider/strider.h>" > f
    print "using namespace strider;" > f
    printf "%s", head > f
    print "[[maybe_unused]] void doc_snippet([[maybe_unused]] int argc, [[maybe_unused]] char** argv) {" > f
    printf "%s", body > f
    print "}" > f
    print "int main() { return 0; }" > f
    program = 0
  } else {
    printf "%s%s", head, body > f
    program = (body ~ /(^|[^A-Za-z0-9_])main[ \t]*\(/)
    if (!program) print "int main() { return 0; }" > f   # linked all the same: every call must resolve
  }
  close(f)
  printf "%s\t%s\t%s\t%d\n", unit, ukind, uwhere, program > (out "/units.tsv")
  unit = ""
}
function add(kind, where, line, given, code,    n, i, lines, hoisting, placed) {
  placed = ""
  if (given != "") placed = placed sprintf("#line %d \"%s\"\n%s\n", marker_line, FILENAME, given)
  placed = placed sprintf("#line %d \"%s\"\n", line, FILENAME)
  if (kind == "body") {
    # Leading #include and using lines go to file scope, the rest stays in order.
    n = split(code, lines, "\n")
    hoisting = 1
    for (i = 1; i < n; i++) {
      if (hoisting && lines[i] ~ /^[ \t]*(#include|using namespace|$)/) {
        head = head sprintf("#line %d \"%s\"\n%s\n", line + i - 1, FILENAME, lines[i])
        continue
      }
      if (hoisting) { hoisting = 0; placed = placed sprintf("#line %d \"%s\"\n", line + i - 1, FILENAME) }
      placed = placed lines[i] "\n"
    }
    body = body placed
  } else {
    body = body placed code
  }
}
FNR == 1 { flush(); pending = ""; pending_rest = ""; in_block = 0; base = FILENAME; gsub(/[^A-Za-z0-9]/, "_", base) }
!in_block && /^[ \t]*<!-- snippet:/ {
  m = $0
  sub(/^[ \t]*<!-- snippet:[ \t]*/, "", m)
  if (m !~ /-->[ \t]*$/) { printf "%s_%d\terror\t%s:%d\tthe marker must end on its line with -->\n", base, FNR, FILENAME, FNR > (out "/units.tsv"); next }
  sub(/[ \t]*-->[ \t]*$/, "", m)
  pending = m; sub(/[ \t].*$/, "", pending)
  pending_rest = m; sub(/^[^ \t]*[ \t]*/, "", pending_rest)
  marker_line = FNR
  next
}
!in_block && /^[ \t]*```[ \t]*(cpp|c\+\+|cxx)[ \t]*$/ {
  in_block = 1; block_line = FNR + 1; code = ""
  kind = (pending == "") ? "body" : pending
  rest = pending_rest
  pending = ""; pending_rest = ""
  next
}
in_block && /^[ \t]*```[ \t]*$/ {
  in_block = 0
  where = FILENAME ":" (block_line - 1)
  if (kind == "skip") {
    if (rest == "") printf "%s_%d\terror\t%s\tskip needs a reason: <!-- snippet: skip WHY -->\n", base, FNR, where > (out "/units.tsv")
    else printf "%s_%d\tskip\t%s\t%s\n", base, FNR, where, rest > (out "/units.tsv")
  } else if (kind == "continue") {
    if (unit == "") printf "%s_%d\terror\t%s\tcontinue follows no compiled block in this file\n", base, FNR, where > (out "/units.tsv")
    else add(ukind, where, block_line, rest, code)
  } else if (kind == "body" || kind == "top") {
    flush()
    unit = base "_" (block_line - 1); ukind = kind; uwhere = where; head = ""; body = ""
    add(kind, where, block_line, rest, code)
  } else {
    printf "%s_%d\terror\t%s\tunknown snippet kind \"%s\" (body, top, continue, skip)\n", base, FNR, where, kind > (out "/units.tsv")
  }
  next
}
in_block { code = code $0 "\n"; next }
!in_block && pending != "" && /[^ \t]/ {
  printf "%s_%d\terror\t%s:%d\tthe snippet marker is not followed by a ```cpp block\n", base, FNR, FILENAME, marker_line > (out "/units.tsv")
  pending = ""; pending_rest = ""
}
END { flush() }
' "${files[@]}"
touch "$work/units/units.tsv"

# Fragments show values they do not use, so unused variables are not errors; everything else is.
cxxflags=(-std=c++20 -O0 -Wall -Wextra -Werror -Wno-unused-variable -Wno-unused-but-set-variable)
check_unit() {  # id kind where program
  local id=$1 kind=$2 where=$3 program=$4 src="$work/units/$1.cpp" exe="$work/units/$1"
  local log="$work/units/$1.log"
  # shellcheck disable=SC2086
  if ! $cxx "${cxxflags[@]}" "$src" -o "$exe" $flags > "$log" 2>&1; then
    echo "FAIL $where ($kind): does not compile"; sed 's/^/    /' "$log" | head -n 40
    return 1
  fi
  if [ "$program" = 1 ]; then
    if ! (cd "$work/units" && timeout 600 "./$id") > "$log.run" 2>&1; then
      echo "FAIL $where (program): exits non-zero"; sed 's/^/    /' "$log.run" | tail -n 20
      return 1
    fi
    echo "ok   $where (compiled and ran)"
  else
    echo "ok   $where (compiled)"
  fi
}
export -f check_unit
export work cxx flags
export cxxflags_str="${cxxflags[*]}"

status=0
compiled=0
skipped=0
while IFS=$'\t' read -r id kind where extra; do
  case "$kind" in
    skip) echo "skip $where: $extra"; skipped=$((skipped + 1)) ;;
    error) echo "FAIL $where: $extra"; status=1 ;;
    *) compiled=$((compiled + 1)) ;;
  esac
done < "$work/units/units.tsv"

# Compile (and run) in parallel; each unit prints its own verdict.
if ! awk -F'\t' '$2 == "body" || $2 == "top"' "$work/units/units.tsv" |
    xargs -d '\n' -P "$jobs" -I{} bash -c '
      IFS=$'"'"'\t'"'"' read -r id kind where program <<< "$1"
      read -r -a cxxflags <<< "$cxxflags_str"
      check_unit "$id" "$kind" "$where" "$program"' _ {}; then
  status=1
fi
echo "doc snippets: $compiled compiled, $skipped skipped with a reason ($cxx)"
[ $status -eq 0 ] || echo "doc snippets: FAILED (markers: scripts/check-doc-snippets.sh --help)"
exit $status
