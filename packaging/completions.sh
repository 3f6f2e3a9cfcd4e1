#!/usr/bin/env bash
# Writes the shell completions into DIR by running BIN (a tooljail that runs
# here): tooljail.bash, _tooljail (zsh), tooljail.fish.
# Until `tooljail completion` exists it writes none and says so; once the man
# pages are in docs/man (the same change brings both), a missing or failing
# subcommand fails the build.
set -euo pipefail
bin=$1 dir=$2
rm -rf "$dir"
mkdir -p "$dir"
if ! "$bin" completion bash >"$dir/tooljail.bash" 2>"$dir/.err"; then
  if [ ! -e docs/man/tooljail.1 ] && grep -q 'unknown command' "$dir/.err"; then
    echo "dist: this tooljail has no 'completion' subcommand yet: the archives carry no shell completions" >&2
    rm -f "$dir"/*.bash "$dir/.err"
    exit 0
  fi
  echo "dist: $bin completion bash failed:" >&2
  cat "$dir/.err" >&2
  exit 1
fi
"$bin" completion zsh >"$dir/_tooljail"
"$bin" completion fish >"$dir/tooljail.fish"
rm -f "$dir/.err"
