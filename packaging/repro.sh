#!/usr/bin/env bash
# Builds the whole dist a second time, from a copy of this checkout at
# another path (with its uncommitted changes, if any) under another umask,
# and compares every file in dist/ with the copy's, byte for byte. The Go
# build cache is shared (GOCACHE): it stores results by content, so it hides
# no difference. Run by `make dist-check`, after `make dist`.
set -euo pipefail
[ -s dist/SHA256SUMS ] || { echo "repro: no dist/SHA256SUMS: run make dist first" >&2; exit 1; }
tmp=$(mktemp -d /tmp/tooljail-repro.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
src="$tmp/another/path/tooljail"
git clone -q --shared --no-checkout . "$src"
git -C "$src" checkout -q --detach "$(git rev-parse HEAD)"
# The same tree: tracked changes, and the untracked files git does not ignore.
git diff --binary HEAD | git -C "$src" apply --binary --allow-empty
git ls-files -z -o --exclude-standard | tar --null -T - -cf - | tar -C "$src" -xf -
if ! (cd "$src" && umask 077 && make --no-print-directory dist) >"$tmp/log" 2>&1; then
  cat "$tmp/log" >&2
  echo "repro: the second make dist (in $src) failed" >&2
  exit 1
fi
a=$(cd dist && find . -type f | LC_ALL=C sort)
b=$(cd "$src/dist" && find . -type f | LC_ALL=C sort)
if [ "$a" != "$b" ]; then
  echo "repro: the two builds made different files:" >&2
  diff <(echo "$a") <(echo "$b") >&2 || true
  exit 1
fi
for f in $a; do
  if ! cmp -s "dist/$f" "$src/dist/$f"; then
    echo "repro: dist/${f#./} differs between two builds of the same tree (here and in $src); first difference: $(cmp "dist/$f" "$src/dist/$f" 2>&1 | head -1)" >&2
    exit 1
  fi
done
echo "repro: $(echo "$a" | wc -l) files of dist/ are byte for byte the same from a second build at another path"
