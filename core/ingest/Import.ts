/**
 * Bulk import of the Direct API (spec `direct-api-ingestion.md` "Limits" 5: "very large historical
 * backfills or very many rows per run use a bulk import plan, not higher concurrency"): one upload
 * of newline-delimited JSON, one event per line, read as a stream and written in batches.
 *
 * Every line goes through the ingest route's own rules: the strict JSON parse
 * (`Json.parseJsonBytes`), `Ingest.prepareEvent` (screening, the event contract, relevance,
 * normalization) and `Accept.submissionOf`; a batch is written by the one `IngestWriter`, so an
 * `event_id` already stored is a duplicate, never a second row. A refused line is counted and
 * listed (its number and code, never its content) and the import goes on.
 *
 * Resumable: each batch's events and the job's progress (`ImportJobStore.advance`: lines and bytes
 * committed, counts, the first refused lines) are one transaction. After a crash or a broken
 * upload the client sends the same file again under the same import id; the lines already
 * committed are read and skipped, and the import goes on from the first line whose outcome is not
 * stored. A client may also send the file in parts, each saying how many lines precede it
 * (`fromLine`), and after a crash send only the lines past the job's committed ones: each body is
 * short enough for the server's request time limit. Two uploads of one job at once cannot both
 * count a batch: the second's `advance` finds the line moved, its batch rolls back, and it fails
 * with {@link ImportOffsetConflict}.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { Crypto, CryptoSync } from "../ports/Crypto.ts"
import { type ImportJob, ImportJobStore, type ImportLineError, maxLineErrors } from "../ports/ImportJobStore.ts"
import { IngestWriter, type Submission } from "../ports/IngestWriter.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { Transactor } from "../ports/Transactor.ts"
import { parseJsonBytes } from "../protocol/Json.ts"
import { timeOrderedUuidSync, timeOrderedUuidWith } from "../protocol/Uuid.ts"
import { type IngestKey, submissionOf } from "./Accept.ts"
import { type PreparedEvent, prepareEvent } from "./Ingest.ts"
import { Suppressions } from "./Suppression.ts"

/**
 * The upload does not continue the job where it stands: it starts past the job's committed lines
 * (lines would be missing), or another upload of the same job moved them first. `linesCommitted`
 * is where the job stands: send the file again from that line.
 */
export class ImportOffsetConflict extends Schema.TaggedError<ImportOffsetConflict>()("ImportOffsetConflict", {
  linesCommitted: Schema.Number
}) {
  /** The problem-details `code`. */
  get code(): "import_offset_conflict" {
    return "import_offset_conflict"
  }
  override get message(): string {
    return `the import has ${this.linesCommitted} lines committed; send the file again from line ${this.linesCommitted + 1} (from_line=${this.linesCommitted})`
  }
}

/** How an import reads its upload. */
export interface ImportOptions {
  /** Lines per transaction (default {@link defaultBatchLines}). */
  readonly batchLines?: number
  /** The longest line (one event): longer lines are refused `content_too_large` unread. */
  readonly maxLineBytes: number
  /**
   * How many lines of the file precede this body (default 0: the body is the file from its start).
   * At most the job's committed lines; lines of the body the job already committed are skipped.
   */
  readonly fromLine?: number
  /** Whether the body ends the file (default true): the job is then `completed`. */
  readonly last?: boolean
}

/**
 * Lines per transaction. Large enough that a commit's fixed cost (and, on a durable database, its
 * fsync) is shared by many events; small enough that a crash loses little work and progress moves
 * visibly.
 */
export const defaultBatchLines = 2000

/** Runs one upload into its job and answers the job as committed at the end. */
export interface Importer {
  /**
   * Reads `body` (NDJSON bytes) into the job `importId` of `key`'s workspace; a completed job is
   * answered as it is, its body unread.
   */
  readonly run: <E>(
    key: IngestKey,
    importId: string,
    body: Stream.Stream<Uint8Array, E>,
    options: ImportOptions
  ) => Effect.Effect<ImportJob, E | StorageError | ImportOffsetConflict>
}

const newline = 0x0a

/** Whether a line holds only JSON whitespace (skipped, not refused). */
const isBlank = (line: Uint8Array): boolean => {
  for (let i = 0; i < line.length; i++) {
    const byte = line[i]!
    if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d && byte !== newline) return false
  }
  return true
}

const concat = (parts: ReadonlyArray<Uint8Array>, length: number): Uint8Array => {
  if (parts.length === 1) return parts[0]!
  const joined = new Uint8Array(length)
  let offset = 0
  for (const part of parts) {
    joined.set(part, offset)
    offset += part.length
  }
  return joined
}

/**
 * The importer on the services in hand.
 */
export const make: Effect.Effect<Importer, never, Crypto | IngestWriter | ImportJobStore | Transactor | Suppressions> =
  Effect.gen(function* () {
    const { isSuppressed } = yield* Suppressions
    const crypto = yield* Crypto
    const writer = yield* IngestWriter
    const jobs = yield* ImportJobStore
    const transactor = yield* Transactor
    const cryptoSync = Option.getOrUndefined(yield* Effect.serviceOption(CryptoSync))
    const uuidAt = cryptoSync === undefined ? undefined : timeOrderedUuidSync(cryptoSync)
    const rowId = (now: number): Effect.Effect<string> =>
      uuidAt === undefined ? timeOrderedUuidWith(crypto, now) : Effect.succeed(uuidAt(now))
    const hashSync = cryptoSync?.sha256Hex

    const run = <E>(
      key: IngestKey,
      importId: string,
      body: Stream.Stream<Uint8Array, E>,
      options: ImportOptions
    ): Effect.Effect<ImportJob, E | StorageError | ImportOffsetConflict> =>
      Effect.gen(function* () {
        const { workspaceId } = key
        const job = yield* jobs.open(workspaceId, importId, yield* Clock.currentTimeMillis)
        if (job.state === "completed") return job
        const linesPerBatch = options.batchLines ?? defaultBatchLines
        const skip = job.linesCommitted
        const fromLine = options.fromLine ?? 0
        if (fromLine > skip) return yield* new ImportOffsetConflict({ linesCommitted: skip })
        let line = fromLine
        let bytes = job.bytesCommitted
        let lineBytes = 0
        let committedLine = skip
        let listed = job.errors.length
        // The batch being gathered: prepared events, refused lines, and how far it reaches.
        let prepared: Array<PreparedEvent> = []
        let preparedLines: Array<number> = []
        let refusedLines: Array<ImportLineError> = []
        let refusedCount = 0
        // The line being read across chunks.
        let parts: Array<Uint8Array> = []
        let partLength = 0
        let oversized = false

        const refuse = (error: ImportLineError) => {
          refusedCount++
          if (listed < maxLineErrors) {
            refusedLines.push(error)
            listed++
          }
        }

        const commit = Effect.suspend(() => {
          if (line === committedLine) return Effect.void
          const batch = prepared
          const batchLines = preparedLines
          const refusedInBatch = refusedLines
          const refusedBefore = refusedCount
          const batchFrom = committedLine
          const toLine = line
          const toBytes = bytes
          prepared = []
          preparedLines = []
          refusedLines = []
          refusedCount = 0
          return Effect.gen(function* () {
            const submissions: Array<Submission> = []
            for (const event of batch) {
              const hash =
                hashSync === undefined
                  ? yield* crypto.sha256Hex(event.payloadHashInput)
                  : hashSync(event.payloadHashInput)
              submissions.push(submissionOf(key, event, hash))
            }
            const now = yield* Clock.currentTimeMillis
            yield* transactor.withTransaction(
              Effect.gen(function* () {
                const results = yield* writer.write(submissions, { bulk: true })
                let accepted = 0
                let duplicates = 0
                let refused = refusedBefore
                const errors = [...refusedInBatch]
                results.forEach((result, i) => {
                  if (result._tag === "Stored") accepted++
                  else if (result._tag === "Duplicate") duplicates++
                  else {
                    refused++
                    if (listed < maxLineErrors) {
                      listed++
                      errors.push(
                        result._tag === "Conflict"
                          ? { line: batchLines[i]!, code: "event_id_conflict", path: "event_id" }
                          : { line: batchLines[i]!, code: "unit_changed", path: result.issue.path }
                      )
                    }
                  }
                })
                errors.sort((a, b) => a.line - b.line)
                const moved = yield* jobs.advance({
                  workspaceId,
                  id: importId,
                  fromLine: batchFrom,
                  toLine,
                  bytesCommitted: toBytes,
                  accepted,
                  duplicates,
                  refused,
                  errors,
                  now
                })
                if (!moved) {
                  const current = yield* jobs.find(workspaceId, importId)
                  return yield* new ImportOffsetConflict({
                    linesCommitted: Option.match(current, { onNone: () => 0, onSome: (job) => job.linesCommitted })
                  })
                }
              })
            )
            committedLine = toLine
          })
        })

        const onLine = (bytesOfLine: Uint8Array, tooLong: boolean): Effect.Effect<void> =>
          Effect.suspend(() => {
            line++
            if (line <= skip || (!tooLong && isBlank(bytesOfLine))) return Effect.void
            if (tooLong) {
              refuse({ line, code: "content_too_large" })
              return Effect.void
            }
            const raw = parseJsonBytes(bytesOfLine)
            if (Either.isLeft(raw)) {
              const reason = raw.left.reason
              refuse({ line, code: reason === "syntax" ? "malformed_json" : reason })
              return Effect.void
            }
            const lineNumber = line
            return Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.map(rowId(now), (id) => {
                const event = prepareEvent(raw.right, { id, workspaceId, now })
                if (Either.isRight(event)) {
                  // An erased subject's events are never stored again: the line is counted, not written.
                  const { accountId } = event.right.stored
                  if (isSuppressed(workspaceId, accountId, event.right.event.user_id)) {
                    refuse({ line: lineNumber, code: "suppressed" })
                    return
                  }
                  prepared.push(event.right)
                  preparedLines.push(lineNumber)
                  return
                }
                const rejection = event.left
                const path =
                  rejection._tag === "InvalidEvent" || rejection._tag === "UnsafeEvent"
                    ? rejection.issues[0]?.path
                    : undefined
                refuse(
                  path === undefined
                    ? { line: lineNumber, code: rejection.code }
                    : { line: lineNumber, code: rejection.code, path }
                )
              })
            )
          })

        const lineEnded = (): Effect.Effect<void, StorageError | ImportOffsetConflict> => {
          const bytesOfLine = concat(parts, partLength)
          const tooLong = oversized
          // Bytes are counted from the job's first line on: lines this upload skips are not new.
          if (line >= skip) bytes += lineBytes
          lineBytes = 0
          parts = []
          partLength = 0
          oversized = false
          return Effect.zipRight(
            onLine(bytesOfLine, tooLong),
            Effect.suspend(() => (line - committedLine >= linesPerBatch ? commit : Effect.void))
          )
        }

        const onChunk = (chunk: Uint8Array): Effect.Effect<void, StorageError | ImportOffsetConflict> =>
          Effect.gen(function* () {
            let start = 0
            while (start < chunk.length) {
              const end = chunk.indexOf(newline, start)
              const stop = end === -1 ? chunk.length : end
              if (!oversized) {
                if (partLength + (stop - start) > options.maxLineBytes) {
                  oversized = true
                  parts = []
                } else if (stop > start) {
                  parts.push(chunk.subarray(start, stop))
                }
              }
              partLength += stop - start
              if (end === -1) {
                lineBytes += stop - start
                return
              }
              lineBytes += stop - start + 1
              yield* lineEnded()
              start = end + 1
            }
          })

        yield* Stream.runForEach(body, onChunk).pipe(
          Effect.zipRight(Effect.suspend(() => (partLength > 0 || oversized ? lineEnded() : Effect.void))),
          Effect.zipRight(commit),
          Effect.tapError((error) =>
            // What was committed stays; the job says why it stopped, and a re-upload resumes it. A
            // job another upload is running is that upload's to finish.
            error instanceof ImportOffsetConflict
              ? Effect.void
              : Effect.flatMap(Clock.currentTimeMillis, (now) =>
                  jobs
                    .finish(workspaceId, importId, { state: "failed", failure: failureCode(error) }, now)
                    .pipe(Effect.ignore)
                )
          )
        )
        if (options.last ?? true) {
          yield* jobs.finish(workspaceId, importId, { state: "completed" }, yield* Clock.currentTimeMillis)
        }
        const finished = yield* jobs.find(workspaceId, importId)
        return Option.getOrElse(finished, () => job)
      })
    return { run }
  })

/** A stopped job's reason: the error's own `code` when it has one, else `upload_failed`. */
const failureCode = (error: unknown): string =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : typeof error === "object" && error !== null && "_tag" in error && error._tag === "StorageError"
      ? "storage_unavailable"
      : "upload_failed"
