#!/bin/bash
# Man pages from the built tool's own --help (help2man): strata.1 and one strata-CMD.1 per command
# that `strata --help` lists, so a build without a module has no page for its commands. Written
# gzip'd (strata.1.gz), as Debian policy wants them installed; man reads them as they are.
# usage: make_man_pages.sh STRATA VERSION OUTDIR
set -euo pipefail
strata=$1 version=$2 out=$3
mkdir -p "$out"
wrappers=$(mktemp -d)
trap 'rm -rf "$wrappers"' EXIT
commands=$("$strata" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on = 0}')
[[ -n $commands ]] || { echo "make_man_pages.sh: no commands in '$strata --help'" >&2; exit 1; }
common=(--no-info --no-discard-stderr --version-string="$version" --source="Strata $version"
        --section=1 --manual="Strata manual")
help2man "${common[@]}" --name="record, inspect, export and analyze across-stack traces of ML workloads" \
  --output="$out/strata.1" "$strata"
for command in $commands; do
  # A wrapper named strata-CMD: help2man names the page after the program it runs.
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$strata" "$command" >"$wrappers/strata-$command"
  chmod +x "$wrappers/strata-$command"
  summary=$("$strata" --help | awk -v c="$command" '$1 == c {$1 = ""; sub(/^ +/, ""); print; exit}')
  help2man "${common[@]}" --name="$summary" --output="$out/strata-$command.1" "$wrappers/strata-$command"
done
rm -f "$out"/*.1.gz
gzip -9n "$out"/*.1  # -n: no name or time stamp, so a rebuild gives the same bytes
