#!/bin/sh
# test-install.sh DIST: installs DIST/tooljail-VERSION.tgz into a fresh
# project offline, with no tooljail on PATH and TOOLJAIL_BIN unset, and runs
# a jailed command through require() and import, and the npx launcher.
# Checks the tarball holds both binaries, executable, for the right machine.
set -eu
dist=$1
version=$(cat "$(dirname "$0")/../../VERSION")
tgz="$dist/tooljail-$version.tgz"
[ -f "$tgz" ] || { echo "test-npm: $tgz is missing: run make dist-npm" >&2; exit 1; }
fail() { echo "test-npm: FAIL: $*" >&2; exit 1; }

listing=$(tar -tvzf "$tgz")
for arch in x64:x86-64 arm64:aarch64; do
	dir=${arch%%:*} machine=${arch#*:}
	echo "$listing" | grep -Eq "^-rwxr-xr-x .* package/bin/linux-$dir/tooljail$" || fail "no executable bin/linux-$dir/tooljail in $tgz"
done
proj=$(mktemp -d)
trap 'rm -rf "$proj"' EXIT
tar -xzf "$tgz" -C "$proj" package/bin
file -b "$proj/package/bin/linux-x64/tooljail" | grep -q 'x86-64.*statically linked' || fail "bin/linux-x64/tooljail is not a static x86-64 binary"
file -b "$proj/package/bin/linux-arm64/tooljail" | grep -q 'aarch64.*statically linked' || fail "bin/linux-arm64/tooljail is not a static aarch64 binary"
rm -rf "$proj/package"

# A clean PATH with no tooljail on it; TOOLJAIL_BIN unset.
cleanpath=/usr/bin:/bin
for d in /usr/bin /bin; do [ ! -e "$d/tooljail" ] || fail "$d/tooljail exists: the test could not tell the package's binary from it"; done
cd "$proj"
echo '{"name":"agent","version":"1.0.0","private":true}' > package.json
env -u TOOLJAIL_BIN PATH="$cleanpath" npm install --offline --no-audit --no-fund --loglevel=error "$tgz" >/dev/null
node=$(command -v node)
out=$(env -u TOOLJAIL_BIN PATH="$cleanpath" "$node" -e '
const tj = require("tooljail");
tj.run(["id", "-u"]).then((r) => process.stdout.write(r.stdout + (tj.findBinary().includes("node_modules/tooljail/bin/linux-") ? "own" : "other:" + tj.findBinary())));')
[ "$out" = "1000
own" ] || fail "require(\"tooljail\").run([\"id\", \"-u\"]) gave $out"
cat > esm.mjs <<'JS'
import { run } from "tooljail";
const r = await run(["sh", "-c", "printf '%s' \"$(id -u)\""], { encoding: "buffer" });
process.stdout.write(Buffer.isBuffer(r.stdout) ? r.stdout : "not a Buffer");
JS
out=$(env -u TOOLJAIL_BIN PATH="$cleanpath" "$node" esm.mjs)
[ "$out" = 1000 ] || fail "import { run } from \"tooljail\" gave $out"
out=$(env -u TOOLJAIL_BIN PATH="$(dirname "$node"):$cleanpath" ./node_modules/.bin/tooljail version)
echo "$out" | grep -q "^tooljail $version (.*linux/amd64)" || fail "npx tooljail version gave $out"
set +e
env -u TOOLJAIL_BIN PATH="$(dirname "$node"):$cleanpath" ./node_modules/.bin/tooljail run -q -- sh -c 'exit 7'
code=$?
set -e
[ $code = 7 ] || fail "npx tooljail run -- sh -c 'exit 7' exited $code"
echo "test-npm: $tgz installs offline and runs jailed commands (require, import, npx)"
