#!/bin/sh
# pack.sh DIST: the npm package tooljail-VERSION.tgz in DIST, carrying both
# static release binaries (DIST/bin/linux-{amd64,arm64}/tooljail, from
# `make dist-bin`) as bin/linux-x64/tooljail and bin/linux-arm64/tooljail,
# the names Node's process.arch gives. One package for both: it installs
# offline from this one file, with no postinstall download and no registry.
set -eu
dist=$1
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
npm run build --silent
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp package.json README.md launcher.js "$stage/"
cp ../LICENSE "$stage/"
cp -R lib "$stage/lib"
for pair in amd64:x64 arm64:arm64; do
	goarch=${pair%%:*} nodearch=${pair#*:}
	src="$dist/bin/linux-$goarch/tooljail"
	[ -x "$src" ] || { echo "pack.sh: $src is missing: run make dist-bin" >&2; exit 1; }
	mkdir -p "$stage/bin/linux-$nodearch"
	cp "$src" "$stage/bin/linux-$nodearch/tooljail"
	chmod 0755 "$stage/bin/linux-$nodearch/tooljail"
done
# npm pack writes every entry with a fixed time and mode bits from the
# files: same inputs, same bytes (make dist-check builds twice and compares).
find "$stage" -type d -exec chmod 0755 {} + 
find "$stage" -type f ! -path "$stage/bin/*" ! -name launcher.js -exec chmod 0644 {} +
chmod 0755 "$stage/launcher.js"
(cd "$stage" && npm pack --silent --pack-destination "$dist" >/dev/null)
echo "dist: $(cd "$dist" && ls tooljail-*.tgz)"
