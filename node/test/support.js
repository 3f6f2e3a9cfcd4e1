// Shared by the tests: the tooljail binary, a scratch workdir, a real server.
"use strict";
const child = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const BINARY = process.env.TOOLJAIL_BIN;
const ROOT = process.geteuid() === 0;

/** A private workdir (cwd moves there: the jail refuses / and homes) and a
 * config dir outside it; XDG_RUNTIME_DIR there so no default socket is found. */
function scratch() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tooljail-node-"));
  const config = fs.mkdtempSync(path.join(os.tmpdir(), "tooljail-node-config-"));
  let profile;
  if (!ROOT) {
    // cgroup v1 hosts cannot delegate the caps to a user.
    profile = path.join(config, "unprivileged.toml");
    fs.writeFileSync(profile, 'extends = "default"\nallow_degraded = ["cgroup"]\n');
  }
  const old = { cwd: process.cwd(), xdg: process.env.XDG_RUNTIME_DIR, server: process.env.TOOLJAIL_SERVER };
  process.env.XDG_RUNTIME_DIR = dir;
  delete process.env.TOOLJAIL_SERVER;
  process.chdir(dir);
  return {
    dir, config, profile, kw: profile ? { profile } : {},
    close() {
      process.chdir(old.cwd);
      if (old.xdg === undefined) delete process.env.XDG_RUNTIME_DIR; else process.env.XDG_RUNTIME_DIR = old.xdg;
      if (old.server !== undefined) process.env.TOOLJAIL_SERVER = old.server;
      fs.rmSync(dir, { recursive: true, force: true });
      fs.rmSync(config, { recursive: true, force: true });
    },
  };
}

/** `tooljail serve --socket DIR/sock`, started and stopped by a test. */
async function server(directory, ...args) {
  const dir = fs.mkdtempSync(path.join(directory, "srv-"));
  const socket = path.join(dir, "sock");
  const log = fs.openSync(path.join(dir, "log"), "w+");
  const proc = child.spawn(BINARY, ["serve", "--socket", socket, ...args], { stdio: ["ignore", log, log] });
  let exited = false;
  proc.on("exit", () => { exited = true; });
  const deadline = Date.now() + 15000;
  while (!fs.existsSync(socket)) {
    if (exited || Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`tooljail serve did not listen on ${socket}: ${fs.readFileSync(path.join(dir, "log"), "utf8")}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    socket,
    async stop() {
      if (!exited) {
        const done = new Promise((r) => proc.on("exit", r));
        proc.kill("SIGTERM");
        await done;
      }
      fs.closeSync(log);
    },
  };
}

/** Host pids whose command line contains marker (a run's leftovers). */
function pidsWith(marker) {
  const out = [];
  for (const p of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(p) || Number(p) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${p}/cmdline`, "utf8").includes(marker)) out.push(Number(p));
    } catch { /* gone */ }
  }
  return out;
}

module.exports = { BINARY, ROOT, scratch, server, pidsWith };
