// The server-identity check. The Python client asks the kernel who holds the
// socket (SO_PEERCRED) and refuses a server whose uid is neither the
// caller's nor root's. Node has no SO_PEERCRED without a native addon, so
// this client checks who could have bound the socket instead, before it
// connects: the socket (its real path) must be owned by the caller or root,
// and every directory from / down to it owned by the caller or root and
// writable by nobody else (a sticky directory such as /tmp may be, as no
// other user can remove or rename an entry in it they do not own). Then
// only the caller or root could have put a socket there, so only they can
// be listening on it. What it cannot tell apart: a socket the caller or
// root bound and then handed to another process (node/README.md, SECURITY.md).

import * as fs from "node:fs";
import * as path from "node:path";

export interface StatLike {
  uid: number;
  mode: number;
  isSocket(): boolean;
  isDirectory(): boolean;
}

/** Why a directory or socket on the way to a server is not trusted, or
 * undefined when it is. Pure: table-tested. */
export function untrusted(p: string, st: StatLike, euid: number, isSocket: boolean): string | undefined {
  const owner = st.uid === euid || st.uid === 0;
  if (isSocket) {
    if (!st.isSocket()) return `${p} is not a socket`;
    if (!owner) {
      return `the socket ${p} belongs to uid ${st.uid}, neither this user (${euid}) nor root: it is not your server`;
    }
    return undefined;
  }
  if (!st.isDirectory()) return `${p} is not a directory`;
  const sticky = (st.mode & 0o1000) !== 0;
  if (!owner) {
    return `the directory ${p} belongs to uid ${st.uid}, neither this user (${euid}) nor root: that user could have put the socket there`;
  }
  if ((st.mode & 0o022) !== 0 && !sticky) {
    return `the directory ${p} (mode ${(st.mode & 0o7777).toString(8)}) is writable by other users, who could have put the socket there`;
  }
  return undefined;
}

/** The socket's real path when the caller can trust whoever listens on it;
 * an Error saying why not (or why it cannot be reached) otherwise. */
export function trustedSocket(socket: string, euid: number): string {
  let real: string;
  try {
    real = fs.realpathSync(socket);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    // Unreachable; say first whether it lies in another user's directory.
    walk(path.resolve(socket), socket, euid, true);
    throw new Error(`cannot reach the tooljail server at ${socket}: ${err.code === "ENOENT" ? "no such file" : err.message}; ` +
      `start it with \`tooljail serve --socket ${socket}\`, or pass another socket (socket:, TOOLJAIL_SERVER)`);
  }
  walk(real, socket, euid, false);
  return real;
}

/** Checks each component of p from / down; lenient: stop quietly at the
 * first one that cannot be looked at (the caller reports its own error). */
function walk(p: string, socket: string, euid: number, lenient: boolean): void {
  const parts = p.split("/").filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const c = "/" + parts.slice(0, i).join("/");
    const isSocket = i === parts.length;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(c);
    } catch (e) {
      if (lenient) return;
      throw new Error(`cannot tell who runs the tooljail server at ${socket} (${c}: ${(e as Error).message}); refusing to send it the command`);
    }
    if (lenient && !isSocket && st.isSymbolicLink()) return;
    const why = untrusted(c, st, euid, isSocket);
    if (why !== undefined) {
      throw new Error(`${why}; refusing to send it the command to ${socket} (Node cannot ask the kernel who listens, so the socket must lie where only you or root could have bound it)`);
    }
  }
}
