#!/usr/bin/env bash
# Writes the shell completions into DIR by running BIN (a tooljail that runs
# here): tooljail.bash, _tooljail (zsh), tooljail.fish. Any failure fails
# the build: a release without its completions is not made.
set -euo pipefail
bin=$1 dir=$2
rm -rf "$dir"
mkdir -p "$dir"
"$bin" completion bash >"$dir/tooljail.bash"
"$bin" completion zsh >"$dir/_tooljail"
"$bin" completion fish >"$dir/tooljail.fish"
