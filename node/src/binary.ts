// Where the tooljail binary is: this package's own first (the npm package
// carries a static one per platform), then TOOLJAIL_BIN, then PATH: the same
// order as the Python client's.

import * as fs from "node:fs";
import * as path from "node:path";

/** The directory name of this platform's binary in the package, or undefined. */
export function platformDir(platform: string, arch: string): string | undefined {
  if (platform !== "linux") return undefined;
  if (arch === "x64" || arch === "arm64") return `linux-${arch}`;
  return undefined;
}

function executable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** The package's own binary (bin/linux-x64/tooljail or bin/linux-arm64/tooljail
 * beside lib/), when this install carries one. */
export function packageBinary(): string | undefined {
  const dir = platformDir(process.platform, process.arch);
  if (dir === undefined) return undefined;
  const p = path.join(__dirname, "..", "bin", dir, "tooljail");
  return executable(p) ? p : undefined;
}

/** The package's binary, then TOOLJAIL_BIN, then tooljail on PATH. */
export function findBinary(environ: NodeJS.ProcessEnv = process.env): string | undefined {
  const own = packageBinary();
  if (own !== undefined) return own;
  if (environ.TOOLJAIL_BIN) return environ.TOOLJAIL_BIN;
  for (const dir of (environ.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, "tooljail");
    if (executable(p)) return p;
  }
  return undefined;
}
