/**
 * One writer per embedded database. PGlite runs PostgreSQL inside the process that opened it and
 * writes its pages back to the data directory; a second process opening the same directory works
 * on a copy of its own, and whichever closes last overwrites the other's writes (a key the CLI
 * created while the server ran was lost that way). So whoever opens a PGlite data directory takes
 * this exclusive lock first, for as long as it has the database open.
 *
 * The lock is `proper-lockfile`'s (docs/decisions.md, "One writer per embedded database"): a
 * directory `<dataDir>.lock` made with `mkdir` (atomic on local file systems), whose mtime the holder
 * renews every `staleMillis / 2`; past `staleMillis` without renewal it is abandoned and the next
 * opener takes it over. Beside it, `<dataDir>.lock.json` names the holder (pid and host), so a
 * refusal says which process to stop, and a lock whose holder is a process of this host that no
 * longer exists (killed with SIGKILL, crashed) is taken over at once instead of after `staleMillis`.
 */
import { readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { hostname } from "node:os"
import { resolve } from "node:path"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"

// Required at run time, not imported: it is CommonJS that requires Node's built-ins, which an ESM
// bundle of the server (the container image's) cannot inline; it is a dependency of the package.
const lockfile: typeof import("proper-lockfile") = createRequire(import.meta.url)("proper-lockfile")

/**
 * The data directory is open in another process (or elsewhere in this one). The message is the
 * refusal in one line, with the fix.
 */
export class DataDirectoryLocked extends Data.TaggedError("DataDirectoryLocked")<{
  readonly dataDir: string
  readonly holderPid: number | undefined
}> {
  override get message(): string {
    const holder = this.holderPid === undefined ? "another process" : `process ${this.holderPid}`
    return (
      `the embedded database in ${this.dataDir} is open in ${holder} (a running Accord server?): ` +
      "stop that process first, or give this one another ACCORD_DATA_DIR"
    )
  }
}

/**
 * The lock could not be taken or kept for a reason other than another holder (a read-only or
 * missing parent directory); `reason` is the file system's code.
 */
export class DataDirectoryLockFailed extends Data.TaggedError("DataDirectoryLockFailed")<{
  readonly dataDir: string
  readonly reason: string
}> {
  override get message(): string {
    return `cannot lock the embedded database in ${this.dataDir} (${this.reason})`
  }
}

/** How a data directory's lock is held: when it counts as abandoned, and who hears it was lost. */
export interface LockOptions {
  /**
   * How long a lock may go unrenewed before it is taken as abandoned by a dead holder. The holder
   * renews it every half of this; a holder whose event loop is blocked longer than this can lose
   * it. At least 2 s; default 10 s.
   */
  readonly staleMillis?: number
  /**
   * Called when a held lock was taken away or removed (the holder's event loop stalled past
   * `staleMillis` and another process took over): from then on this process is no longer the
   * only writer. By default a warning is logged.
   */
  readonly onCompromised?: (error: Error) => void
}

/** The default `staleMillis`: long enough for a busy event loop, short enough to recover after a crash. */
export const defaultStaleMillis = 10_000

const lockPaths = (dataDir: string) => {
  const path = resolve(dataDir)
  return { path, lock: `${path}.lock`, holder: `${path}.lock.json` }
}

/** The data directories this process holds: its own pid in a holder file means "held" only for these. */
const heldHere = new Set<string>()

const codeOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "code" in error ? String(error.code) : "unknown error"

interface Holder {
  readonly pid: number | undefined
  readonly host: string | undefined
}

const readHolder = (holderFile: string): Holder => {
  try {
    const { host, pid } = JSON.parse(readFileSync(holderFile, "utf8")) as { pid?: unknown; host?: unknown }
    return {
      pid: typeof pid === "number" && Number.isSafeInteger(pid) && pid > 0 ? pid : undefined,
      host: typeof host === "string" ? host : undefined
    }
  } catch {
    return { pid: undefined, host: undefined }
  }
}

/**
 * Whether the named holder is certainly gone: a process of this host that no longer exists, or
 * this process's own pid left by an earlier process (a container restarted under the same pid)
 * for a directory this process does not hold. A holder on another host, or one that did not name
 * itself, is judged by the lock's mtime alone.
 */
const holderIsGone = (holder: Holder, path: string): boolean => {
  if (holder.pid === undefined || holder.host !== hostname()) return false
  if (holder.pid === process.pid) return !heldHere.has(path)
  try {
    process.kill(holder.pid, 0)
    return false
  } catch (error) {
    return codeOf(error) === "ESRCH"
  }
}

/**
 * Whether a holder whose lock directory is already gone is still running: `proper-lockfile` removes
 * its lock directories when its process receives SIGTERM or SIGINT, before that process has drained
 * and closed the database; its holder file goes only once it has. A live process of this host named
 * there still writes the directory. (A holder on another host is not judged: its file may be all
 * that is left of it after its lock went stale.)
 */
const stillClosing = (holder: Holder, path: string): boolean =>
  holder.pid !== undefined && holder.host === hostname() && !holderIsGone(holder, path)

const lockOnce = (paths: ReturnType<typeof lockPaths>, options: LockOptions) =>
  lockfile.lock(paths.path, {
    lockfilePath: paths.lock,
    realpath: false,
    stale: options.staleMillis ?? defaultStaleMillis,
    onCompromised:
      options.onCompromised ??
      ((error) =>
        Effect.runFork(
          Effect.logWarning(`the lock on the embedded database in ${paths.path} was lost: ${error.message}`)
        ))
  })

/**
 * Takes the lock on `dataDir` for the scope (released when the scope closes, after whatever was
 * opened under it has closed). Fails with `DataDirectoryLocked` while another holder keeps it.
 */
export const acquire = (
  dataDir: string,
  options: LockOptions = {}
): Effect.Effect<void, DataDirectoryLocked | DataDirectoryLockFailed, Scope.Scope> => {
  const paths = lockPaths(dataDir)
  return Effect.asVoid(
    Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const release = await lockOnce(paths, options).catch((error: unknown) => {
            if (codeOf(error) !== "ELOCKED" || !holderIsGone(readHolder(paths.holder), paths.path)) throw error
            // The holder died without releasing it: the lock is abandoned now, not only after
            // `staleMillis`. Its holder file goes first, so an opener racing this one finds no dead
            // holder to judge by and refuses. (Two openers that both read the dead holder before
            // either removed it can still both proceed: a window of one file read, left open.)
            rmSync(paths.holder, { force: true })
            rmdirSync(paths.lock)
            return lockOnce(paths, options)
          })
          if (stillClosing(readHolder(paths.holder), paths.path)) {
            await release()
            throw Object.assign(new Error("the previous holder is still closing"), { code: "ELOCKED" })
          }
          heldHere.add(paths.path)
          writeFileSync(paths.holder, JSON.stringify({ pid: process.pid, host: hostname() }))
          return release
        },
        catch: (error) =>
          codeOf(error) === "ELOCKED"
            ? new DataDirectoryLocked({ dataDir: paths.path, holderPid: readHolder(paths.holder).pid })
            : new DataDirectoryLockFailed({ dataDir: paths.path, reason: codeOf(error) })
      }),
      (release) =>
        Effect.promise(async () => {
          rmSync(paths.holder, { force: true })
          heldHere.delete(paths.path)
          // A lock already lost (compromised) has nothing left to release.
          await release().catch(() => undefined)
        })
    )
  )
}

/**
 * Who holds the lock on `dataDir` now: `Some` with the holder's pid (when it named itself) while
 * the lock is held or its holder is still closing, `None` when the directory is free (never locked,
 * released, or abandoned: past `staleMillis`, or its holder on this host is gone).
 */
export const holder = (
  dataDir: string,
  options: Pick<LockOptions, "staleMillis"> = {}
): Effect.Effect<Option.Option<{ readonly pid: number | undefined }>> => {
  const paths = lockPaths(dataDir)
  return Effect.promise(() =>
    lockfile
      .check(paths.path, {
        lockfilePath: paths.lock,
        realpath: false,
        stale: options.staleMillis ?? defaultStaleMillis
      })
      .catch(() => false)
  ).pipe(
    Effect.map((locked) => {
      const named = readHolder(paths.holder)
      return (locked && !holderIsGone(named, paths.path)) || stillClosing(named, paths.path)
        ? Option.some({ pid: named.pid })
        : Option.none()
    })
  )
}
