/**
 * `PUT /api/events/imports/{importId}` and `GET /api/events/imports/{importId}`: bulk import of the
 * Direct API with an `ingest` key (the scope of the ingest route, whose rules every line goes
 * through: docs/decisions.md, "Bulk import").
 *
 * The body is newline-delimited JSON (`application/x-ndjson`), identity or `Content-Encoding:
 * gzip`, read as a stream (never held whole: `DecompressionStream` for gzip, then
 * `core/ingest/Import.ts` splits lines as chunks arrive) and bounded after decompression by
 * `ACCORD_IMPORT_MAX_BYTES`. The answer, 202 with the job, comes once every line of the body is
 * read and its outcome committed; meanwhile `GET` reads the progress committed with each batch.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import { type ImportJob, ImportJobStore } from "../../../core/ports/ImportJobStore.ts"
import type { IngestWriter } from "../../../core/ports/IngestWriter.ts"
import type { Transactor } from "../../../core/ports/Transactor.ts"
import * as Import from "../../../core/ingest/Import.ts"
import { NotFound } from "../../../core/protocol/NotFound.ts"
import { formatTimestamp } from "../../../core/protocol/Timestamp.ts"
import { jsonResponse } from "../Answer.ts"
import { authenticate, scopeProblem } from "../Auth.ts"
import { drainBytes, unreadable } from "../Body.ts"
import * as Problem from "../Problem.ts"
import * as Api from "../api/Api.ts"
import { maxEventBytes } from "./Ingest.ts"

/** What the import routes need: key authentication, the writer, the job store and a transaction. */
export type ImportsServices = ApiKeyStore | Crypto | IngestWriter | ImportJobStore | Transactor

/** The import routes' setting. */
export interface ImportRouteOptions {
  /** The largest uncompressed body of one upload (`ACCORD_IMPORT_MAX_BYTES`; default 1 GiB). */
  readonly importMaxBytes?: number
}

/** The default of `ACCORD_IMPORT_MAX_BYTES`: 1 GiB uncompressed per upload. */
export const defaultImportMaxBytes = 1024 * 1024 * 1024

const importIdPattern = /^[A-Za-z0-9._:-]{1,128}$/

const ndjsonTypes = new Set(["application/x-ndjson", "application/ndjson", "application/jsonl"])

const isNdjson = (header: string | undefined): boolean =>
  header !== undefined && ndjsonTypes.has(header.split(";")[0]!.trim().toLowerCase())

/** The job as answered (the Direct API's snake_case). */
export const importView = (job: ImportJob) => ({
  import_id: job.id,
  state: job.state,
  lines_committed: job.linesCommitted,
  bytes_committed: job.bytesCommitted,
  accepted: job.accepted,
  duplicates: job.duplicates,
  refused: job.refused,
  errors: job.errors,
  failure: job.failure,
  created_at: formatTimestamp(job.createdAt),
  updated_at: formatTimestamp(job.updatedAt)
})

/** The key (scope `ingest`) and the path's import id. */
const authorized = Effect.gen(function* () {
  const key = yield* authenticate
  const refused = scopeProblem(key, ["ingest"])
  if (refused !== undefined) return yield* Effect.fail(refused)
  const importId = (yield* HttpRouter.params)["importId"] ?? ""
  if (!importIdPattern.test(importId)) {
    return yield* Effect.fail(Problem.badRequest("invalid_path", "the import id must be 1-128 of A-Z a-z 0-9 . _ : -"))
  }
  return { key: { workspaceId: key.workspaceId, scope: key.scope }, importId }
})

const invalidQuery = (path: string, message: string) =>
  Problem.badRequest("invalid_query", "the query has invalid parameters", [{ path, message }])

/**
 * `raw` through the platform's `DecompressionStream`, chunk by chunk: what the reader has not taken
 * yet holds the writer back. A body that breaks off, or is not gzip, fails the stream (400).
 */
const gunzip = (raw: Stream.Stream<Uint8Array, Problem.Problem>): Stream.Stream<Uint8Array, Problem.Problem> =>
  Stream.unwrapScoped(
    Effect.gen(function* () {
      const gzip = new DecompressionStream("gzip")
      const writer = gzip.writable.getWriter()
      let failure: Problem.Problem | undefined
      yield* Effect.forkScoped(
        Stream.runForEach(raw, (chunk) =>
          Effect.tryPromise({ try: () => writer.write(chunk), catch: () => unreadable })
        ).pipe(
          Effect.matchEffect({
            onFailure: (problem) =>
              Effect.promise(() => {
                failure = problem
                return writer.abort().catch(() => undefined)
              }),
            onSuccess: () => Effect.promise(() => writer.close().catch(() => undefined))
          })
        )
      )
      return Stream.fromReadableStream(
        () => gzip.readable as ReadableStream<Uint8Array>,
        () => failure ?? unreadable
      )
    })
  )

/**
 * The request body as uncompressed chunks, at most `maxBytes` of them (413 past it), without
 * holding it whole.
 */
const uncompressedBody = (
  request: HttpServerRequest.HttpServerRequest,
  gzip: boolean,
  maxBytes: number
): Stream.Stream<Uint8Array, Problem.Problem> => {
  const raw = Stream.mapError(request.stream, () => unreadable)
  const plain = gzip ? gunzip(raw) : raw
  // Past the limit the rest is read and dropped, up to `drainBytes` more, so the 413 reaches the
  // client instead of a reset connection (as `Body.readBytes` does).
  // The bytes up to the limit are passed on however the chunks fall, so what the job commits
  // before the 413 never depends on where the transport cut the body.
  let received = 0
  const limited = Stream.filter(
    Stream.mapEffect(plain, (chunk) => {
      const before = received
      received += chunk.length
      if (received <= maxBytes) return Effect.succeed(chunk)
      if (before < maxBytes) return Effect.succeed(chunk.subarray(0, maxBytes - before))
      if (received > maxBytes + drainBytes) return Effect.fail(Problem.contentTooLarge(maxBytes))
      return Effect.succeed(empty)
    }),
    (chunk) => chunk.length > 0
  )
  return Stream.concat(
    limited,
    Stream.suspend(() => (received > maxBytes ? Stream.fail(Problem.contentTooLarge(maxBytes)) : Stream.empty))
  )
}

const empty = new Uint8Array(0)

const putImport = (options: ImportRouteOptions) =>
  Effect.gen(function* () {
    const { importId, key } = yield* authorized
    const request = yield* HttpServerRequest.HttpServerRequest
    if (!isNdjson(request.headers["content-type"])) {
      return yield* Effect.fail(Problem.unsupportedMediaType("application/x-ndjson"))
    }
    const encoding = (request.headers["content-encoding"] ?? "identity").trim().toLowerCase()
    if (encoding !== "identity" && encoding !== "gzip") {
      return yield* Effect.fail(Problem.unsupportedMediaType("application/x-ndjson, gzip or identity encoded"))
    }
    const params = new URL(request.originalUrl, "http://localhost").searchParams
    const fromText = params.get("from_line")
    const fromLine = fromText === null ? 0 : /^\d{1,15}$/.test(fromText) ? Number(fromText) : undefined
    if (fromLine === undefined) return yield* Effect.fail(invalidQuery("from_line", "must be a whole number"))
    const lastText = params.get("last")
    if (lastText !== null && lastText !== "true" && lastText !== "false") {
      return yield* Effect.fail(invalidQuery("last", "must be true or false"))
    }
    const importer = yield* Import.make
    const job = yield* importer.run(
      key,
      importId,
      uncompressedBody(request, encoding === "gzip", options.importMaxBytes ?? defaultImportMaxBytes),
      { maxLineBytes: maxEventBytes, fromLine, last: lastText !== "false" }
    )
    return jsonResponse(importView(job), 202)
  })

const getImport = Effect.gen(function* () {
  const { importId, key } = yield* authorized
  const job = yield* (yield* ImportJobStore).find(key.workspaceId, importId)
  if (Option.isNone(job)) return yield* new NotFound({ resource: "import" })
  return jsonResponse(importView(job.value))
})

/**
 * The import routes, bound to the declaration (`api/ImportsApi.ts`). Raw: the body is a stream
 * the handler reads itself, and the key is checked by the ingest route's authenticator.
 */
export const group = (options: ImportRouteOptions) =>
  HttpApiBuilder.group(Api.api, "imports", (handlers) =>
    handlers.handleRaw("putImport", () => putImport(options)).handleRaw("getImport", () => getImport)
  )
