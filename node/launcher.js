#!/usr/bin/env node
// `npx tooljail ...`: runs the package's own tooljail binary (or
// TOOLJAIL_BIN, or one on PATH) with this process's stdio, forwards the
// signals a terminal or a supervisor sends, and ends as it ended: its exit
// code, or the signal that killed it.
"use strict";
const child = require("node:child_process");
const { findBinary } = require("./lib/binary");

const bin = findBinary();
if (bin === undefined) {
  process.stderr.write("tooljail: no tooljail binary for " + process.platform + "/" + process.arch +
    " in this package, none in TOOLJAIL_BIN and none on PATH\n");
  process.exit(125);
}
const p = child.spawn(bin, process.argv.slice(2), { stdio: "inherit" });
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGWINCH"]) {
  process.on(sig, () => { if (p.exitCode === null) p.kill(sig); });
}
p.on("error", (e) => {
  process.stderr.write(`tooljail: cannot start ${bin}: ${e.message}\n`);
  process.exit(125);
});
p.on("exit", (code, signal) => {
  if (signal !== null) {
    for (const sig of ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"]) process.removeAllListeners(sig);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
