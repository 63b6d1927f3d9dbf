#!/usr/bin/env bash
# The man pages built from docs/mwcc.md and docs/mwrun.md: each has its title block and
# the usual sections, and man(1) renders every option of the tool's --help from it.
# usage: check_man_pages.sh MAN1_DIR BIN_DIR
set -euo pipefail
dir=$1
bin=$2
fail() { echo "FAIL: $*"; exit 1; }
for tool in mwcc mwrun; do
  page=$dir/$tool.1
  [ -f "$page" ] || fail "$page was not built"
  upper=$(echo "$tool" | tr a-z A-Z)
  head -3 "$page" | grep -q "^\.TH $upper 1 " || fail "$page has no .TH $upper 1 title"
  for section in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" "SEE ALSO"; do
    grep -q "^\.SH $section\$" "$page" || fail "$page has no section $section"
  done
  if command -v man > /dev/null; then
    text=$(MANWIDTH=100 man -l "$page" 2> /dev/null | sed 's/‐/-/g')
    for opt in $("$bin/$tool" --help | grep -oE '^ +--?[a-z][a-z:-]*'); do
      grep -qF -- "$opt" <<< "$text" || fail "man $tool does not show $opt"
    done
  fi
  echo "ok $page"
done
