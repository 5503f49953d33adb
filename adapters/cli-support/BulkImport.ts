/**
 * `accord backfill` past its per-event threshold: the file goes to the service's bulk import
 * (`PUT /api/events/imports/{importId}`) instead of the ingest route, as the spec's limit rule 5
 * asks ("very large historical backfills ... use a bulk import plan, not higher concurrency").
 *
 * The file (NDJSON, or NDJSON gzip-compressed: `.gz`) is read as a stream, line by line, and sent
 * in parts of at most `partLines` lines, each gzip-compressed and saying how many lines precede it
 * (`from_line`), so no request outlasts the server's request time limit and nothing is held whole.
 * The import id is derived from the file's name, size and modification time: a rerun after a crash
 * (of this process, the server or the network) asks the service where the import stands and sends
 * only the lines after its committed ones. A part the service answers 503 or 429 is sent again
 * after its `Retry-After`, up to `partRetries` times. A progress bar on stderr follows the
 * service's committed lines, polled while each part is sent.
 */
import { createHash } from "node:crypto"
import { createReadStream, statSync } from "node:fs"
import { basename, resolve } from "node:path"
import { createInterface } from "node:readline"
import type { Readable } from "node:stream"
import { createGunzip, gzipSync } from "node:zlib"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { UsageError } from "./CliError.ts"

/**
 * Lines per request: small enough to finish well within the server's 30 s request time limit on a
 * loaded machine (measured: about 1 600 lines/s on a loaded 2-core machine).
 */
export const defaultPartLines = 5_000

/**
 * How often one part is sent again after a 503 or a 429 before the import stops (then a rerun
 * resumes it), and the longest wait between two sends: a 503 is transient by contract (a database
 * fault, or writes waiting on a backfilled month's move), and a resent part is idempotent (the
 * service skips its committed lines).
 */
export const partRetries = 8
export const longestRetryWaitMillis = 30_000

/** The wait a 503 or 429 asks for: its `Retry-After` seconds (at most 30 s), else one second. */
const retryWait = (response: Response): number => {
  const seconds = Number(response.headers.get("retry-after"))
  return Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds * 1000, longestRetryWaitMillis) : 1000
}

/** What the service answers for an import (the Direct API's snake_case). */
export interface ImportStatus {
  readonly import_id: string
  readonly state: "running" | "completed" | "failed"
  readonly lines_committed: number
  readonly accepted: number
  readonly duplicates: number
  readonly refused: number
  readonly errors: ReadonlyArray<{ readonly line: number; readonly code: string; readonly path?: string }>
  readonly failure: string | null
}

/** Whether a file is gzip-compressed, by its name. */
export const isGzip = (path: string): boolean => path.toLowerCase().endsWith(".gz")

const lineReader = (path: string): AsyncIterable<string> => {
  const file: Readable = createReadStream(path)
  return createInterface({
    input: isGzip(path) ? file.pipe(createGunzip()) : file,
    crlfDelay: Number.POSITIVE_INFINITY
  })
}

/** The lines of the file (its decompressed lines for `.gz`), counted as a stream. */
export const countLines = (path: string): Promise<number> =>
  (async () => {
    let lines = 0
    for await (const _ of lineReader(path)) lines++
    return lines
  })()

/** The import id of a file: its name and a digest of where it is, its size and its modification time. */
export const importIdOf = (path: string): string => {
  const stats = statSync(path)
  const digest = createHash("sha256")
    .update(`${resolve(path)}\u0000${stats.size}\u0000${stats.mtimeMs}`)
    .digest("hex")
    .slice(0, 16)
  const name = basename(path)
    .replace(/[^A-Za-z0-9._-]/g, "_")
    .slice(0, 100)
  return `${name}-${digest}`
}

/**
 * The progress bar: on a terminal one line, rewritten in place; elsewhere (a log, a pipe) one
 * plain line per update through `plain`.
 */
export const progressBar =
  (stream: NodeJS.WriteStream, plain: (line: string) => void) =>
  (status: ImportStatus, total: number, linesPerSecond: number): void => {
    const width = 30
    const done = total === 0 ? 1 : Math.min(1, status.lines_committed / total)
    const filled = Math.round(done * width)
    const line =
      `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${(done * 100).toFixed(1)}% ` +
      `${status.lines_committed}/${total} lines, ${Math.round(linesPerSecond)} lines/s, ` +
      `${status.accepted} accepted, ${status.duplicates} duplicate, ${status.refused} refused`
    if (stream.isTTY) stream.write(`\r${line}`)
    else plain(line)
  }

/**
 * Imports the file through the service's bulk import and answers the import as it ended.
 */
export const run = (options: {
  readonly path: string
  readonly serviceUrl: string
  readonly apiKey: Redacted.Redacted<string>
  readonly partLines?: number
  readonly progress: (status: ImportStatus, total: number, linesPerSecond: number) => void
}): Effect.Effect<ImportStatus, UsageError> =>
  Effect.tryPromise({
    try: () => importFile(options),
    catch: (error) =>
      new UsageError({
        message: `bulk import stopped: ${error instanceof Error ? error.message : String(error)}; rerun the same command to resume`
      })
  })

const importFile = async (options: {
  readonly path: string
  readonly serviceUrl: string
  readonly apiKey: Redacted.Redacted<string>
  readonly partLines?: number
  readonly progress: (status: ImportStatus, total: number, linesPerSecond: number) => void
}): Promise<ImportStatus> => {
  const importId = importIdOf(options.path)
  const url = `${options.serviceUrl.replace(/\/+$/, "")}/api/events/imports/${importId}`
  const authorization = `Bearer ${Redacted.value(options.apiKey)}`
  const read = async (): Promise<ImportStatus | undefined> => {
    const response = await fetch(url, { headers: { authorization } })
    if (response.status === 404) return undefined
    if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`)
    return (await response.json()) as ImportStatus
  }
  const total = await countLines(options.path)
  const started = Date.now()
  const before = await read()
  if (before?.state === "completed") return before
  const from = before?.lines_committed ?? 0
  const rate = (status: ImportStatus) =>
    (status.lines_committed - from) / Math.max(0.001, (Date.now() - started) / 1000)
  let last: ImportStatus | undefined = before
  const send = async (lines: ReadonlyArray<string>, fromLine: number, isLast: boolean): Promise<void> => {
    const body = gzipSync(lines.length === 0 ? "" : lines.join("\n") + "\n")
    const poll = setInterval(() => {
      read().then(
        (status) => status !== undefined && options.progress(status, total, rate(status)),
        () => {}
      )
    }, 500)
    try {
      let response: Response
      let text: string
      for (let attempt = 0; ; attempt++) {
        response = await fetch(`${url}?from_line=${fromLine}&last=${isLast}`, {
          method: "PUT",
          headers: { authorization, "content-type": "application/x-ndjson", "content-encoding": "gzip" },
          body
        })
        text = await response.text()
        if ((response.status !== 503 && response.status !== 429) || attempt >= partRetries) break
        await new Promise((resolve) => setTimeout(resolve, retryWait(response)))
      }
      if (response.status !== 202) {
        const problem = (() => {
          try {
            return JSON.parse(text) as { readonly code?: string; readonly detail?: string }
          } catch {
            return {}
          }
        })()
        throw new Error(`the service answered ${response.status} ${problem.code ?? ""}: ${problem.detail ?? ""}`)
      }
      const answer = JSON.parse(text) as ImportStatus
      last = answer
      options.progress(answer, total, rate(answer))
    } finally {
      clearInterval(poll)
    }
  }
  const partLines = options.partLines ?? defaultPartLines
  let part: Array<string> = []
  let line = 0
  let partStart = from
  for await (const text of lineReader(options.path)) {
    line++
    if (line <= from) continue
    part.push(text)
    if (part.length >= partLines && line < total) {
      await send(part, partStart, false)
      partStart = line
      part = []
    }
  }
  await send(part, partStart, true)
  return last!
}
