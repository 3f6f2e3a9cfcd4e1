// tooljail for Node: run an agent's commands in a tooljail jail.
export { run, DEFAULT_MAX_BUFFER } from "./run";
export type { RunOptions, Result } from "./run";
export { spawn } from "./spawn";
export type { SpawnOptions, JailedChildProcess } from "./spawn";
export { AbortError, CalledProcessError, ExecError, JailError, MaxBufferError, TimeoutExpired } from "./errors";
export type { Output } from "./errors";
export type { JailOptions } from "./call";
export { findBinary } from "./binary";
export type * from "./report";
export { ChangeSet, ChangesConflict, changeSet } from "./changes";
export type { ApplyResult, ChangesMode, Where } from "./changes";
export { Session, listSessions } from "./session";
export type { SessionOptions, SessionRunOptions, SessionSpawnOptions } from "./session";
