// The package's declared types and version cannot drift from the real
// thing: every field of a real report (and of its nested objects) is
// declared in src/report.ts, and package.json's version is the repo's VERSION.
"use strict";
const { it } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const support = require("./support");
const tooljail = require("..");

/** interface name → {field → type text}, from the TypeScript source. */
function interfaces(src) {
  const out = {};
  for (const m of src.matchAll(/export interface (\w+) \{([\s\S]*?)\n\}/g)) {
    const fields = {};
    for (const f of m[2].matchAll(/^  (\w+)\??: ([^;]+);/gm)) fields[f[1]] = f[2];
    out[m[1]] = fields;
  }
  return out;
}

/** Where a value of the report has a field its declared type lacks. */
function undeclared(value, type, types, at, out) {
  const name = type.replace(/\[\]$/, "").replace(/ \| null$/, "");
  const decl = types[name];
  if (decl === undefined || value === null || typeof value !== "object") return out;
  for (const v of Array.isArray(value) ? value : [value]) {
    if (type.endsWith("[]") !== Array.isArray(value)) out.push(`${at}: declared ${type}`);
    for (const [k, sub] of Object.entries(v)) {
      if (!(k in decl)) out.push(`${at}.${k}`);
      else undeclared(sub, decl[k], types, `${at}.${k}`, out);
    }
  }
  return out;
}

it("declares every field of a real report", { skip: support.BINARY ? false : "set TOOLJAIL_BIN" }, async () => {
  const s = support.scratch();
  try {
    const types = interfaces(fs.readFileSync(path.join(__dirname, "..", "src", "report.ts"), "utf8"));
    assert.ok(types.Report && types.Stream && types.Enforcement, "src/report.ts has the report's interfaces");
    // A run that fills the optional parts: a denied call, a dropped variable.
    const r = await tooljail.run(["sh", "-c", "echo out; unshare -U true; exit 0"],
      { ...s.kw, env: { ...process.env, GITHUB_TOKEN: "x" } });
    assert.ok(r.report.violations.length > 0 && r.report.env_dropped.length > 0, JSON.stringify(r.report));
    assert.deepEqual(undeclared(r.report, "Report", types, "report", []), []);
  } finally {
    s.close();
  }
});

const TSC = path.join(__dirname, "..", "node_modules", "typescript", "bin", "tsc");
it("types what the calls resolve with (test/typecheck.ts compiles)", { skip: fs.existsSync(TSC) ? false : "no typescript: npm ci (make node does)" }, () => {
  const tsc = TSC;
  const r = require("node:child_process").spawnSync(process.execPath, [tsc, "--noEmit", "--strict", "--types", "node",
    "--module", "commonjs", "--moduleResolution", "node", "--target", "ES2022", path.join(__dirname, "typecheck.ts")], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

it("has the repository's version", () => {
  const version = fs.readFileSync(path.join(__dirname, "..", "..", "VERSION"), "utf8").trim();
  assert.equal(require("../package.json").version, version);
});
