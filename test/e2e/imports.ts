/**
 * Bulk import over real HTTP on loopback against the real server on SQL storage: an NDJSON upload
 * (identity or gzip) into an import job, every line through the ingest route's rules, idempotent
 * by `event_id`, its progress readable while the body is still arriving, resumable from the
 * committed line, and one answer per refusal of the request itself.
 */
import { gzipSync } from "node:zlib"
import { assert, describe, layer } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { request } from "../support/http.ts"
import { storageVariants } from "../support/storage.ts"
import { adminKey, bootService, type Service } from "./support.ts"

const ingestKey = "e2e-import-ingest-key-0123456789abcdef0123"
const ndjson = { authorization: `Bearer ${ingestKey}`, "content-type": "application/x-ndjson" }

class Imports extends Context.Tag("test/Imports")<Imports, Service>() {}

const event = (id: string, account = "acct_import") =>
  JSON.stringify({
    event_name: "checkout_completed",
    account_id: account,
    timestamp: "2025-03-01T10:00:00.000Z",
    event_id: id
  })

const lines = (...rows: ReadonlyArray<string>) => rows.map((row) => row + "\n").join("")

const put = (
  service: Service,
  id: string,
  body: string | Uint8Array,
  query = "",
  headers: Record<string, string> = ndjson
) => request(`${service.base}/api/events/imports/${id}${query}`, { method: "PUT", headers, body })

const get = (service: Service, id: string) =>
  request(`${service.base}/api/events/imports/${id}`, { headers: { authorization: `Bearer ${ingestKey}` } })

/** Events stored for `account`, through the Events view. */
const storedEvents = (service: Service, account: string) =>
  Effect.map(
    request(`${service.ws}/events?account_id=${account}&limit=200`, {
      headers: { authorization: `Bearer ${adminKey}` }
    }),
    (reply) => (reply.json.data as Array<{ event_id: string }>).map((row) => row.event_id).sort()
  )

/** One storage variant's cases; each runs from a test file of its own. */
export const suite = (name: "pglite" | "postgres") => {
  const variant = storageVariants.find((candidate) => candidate.name === name)!
  describe.skipIf(!variant.available)(`bulk import on ${name}`, () => {
    const server = Layer.scoped(
      Imports,
      bootService({
        storage: variant,
        env: { ACCORD_BOOTSTRAP_INGEST_KEY: ingestKey, ACCORD_IMPORT_MAX_BYTES: "300000" }
      })
    )
    // The server reads the live clock: the events' timestamps are checked against it.
    layer(server, { timeout: 120_000, excludeTestServices: true })((it) => {
      it.effect("counts accepted, duplicate and refused lines, with line numbers and codes", () =>
        Effect.gen(function* () {
          const service = yield* Imports
          const body = lines(
            event("imp-a:1", "acct_counts"),
            event("imp-a:2", "acct_counts"),
            event("imp-a:1", "acct_counts"),
            "",
            "{not json",
            JSON.stringify({
              event_name: "checkout_completed",
              account_id: "acct_counts",
              timestamp: "2025-03-01T10:00:00.000Z",
              event_id: "imp-a:3",
              properties: { password: "hunter2" }
            }),
            JSON.stringify({
              event_name: "page_viewed",
              account_id: "acct_counts",
              timestamp: "2025-03-01T10:00:00.000Z"
            })
          )
          const reply = yield* put(service, "counts", body)
          assert.strictEqual(reply.status, 202, reply.text)
          assert.strictEqual(reply.json.state, "completed")
          assert.strictEqual(reply.json.lines_committed, 7)
          assert.strictEqual(reply.json.bytes_committed, new TextEncoder().encode(body).length)
          assert.strictEqual(reply.json.accepted, 2)
          assert.strictEqual(reply.json.duplicates, 1)
          assert.strictEqual(reply.json.refused, 3)
          assert.deepStrictEqual(
            reply.json.errors.map((error: { line: number; code: string }) => [error.line, error.code]),
            [
              [5, "malformed_json"],
              [6, "unsafe_property"],
              [7, "not_revenue_relevant"]
            ]
          )
          assert.notInclude(reply.text, "hunter2")
          assert.deepStrictEqual(yield* storedEvents(service, "acct_counts"), ["imp-a:1", "imp-a:2"])
          assert.deepStrictEqual((yield* get(service, "counts")).json, reply.json)
        })
      )

      it.effect("takes a gzip body (Content-Encoding: gzip)", () =>
        Effect.gen(function* () {
          const service = yield* Imports
          const body = gzipSync(lines(event("imp-g:1", "acct_gzip"), event("imp-g:2", "acct_gzip")))
          const reply = yield* put(service, "gzipped", body, "", { ...ndjson, "content-encoding": "gzip" })
          assert.strictEqual(reply.status, 202, reply.text)
          assert.strictEqual(reply.json.accepted, 2)
          assert.deepStrictEqual(yield* storedEvents(service, "acct_gzip"), ["imp-g:1", "imp-g:2"])
        })
      )

      it.effect("a body that is not gzip though it says so is refused 400 and the import fails", () =>
        Effect.gen(function* () {
          const service = yield* Imports
          const reply = yield* put(service, "not-gzip", lines(event("imp-n:1")), "", {
            ...ndjson,
            "content-encoding": "gzip"
          })
          assert.strictEqual(reply.status, 400, reply.text)
          assert.strictEqual(reply.json.code, "unreadable_body")
          assert.strictEqual((yield* get(service, "not-gzip")).json.state, "failed")
        })
      )

      it.effect("resumes: the file sent again skips the committed lines and stores nothing twice", () =>
        Effect.gen(function* () {
          const service = yield* Imports
          const all = Array.from({ length: 6 }, (_, i) => event(`imp-r:${i}`, "acct_resume"))
          const first = yield* put(service, "resumed", lines(...all.slice(0, 3)), "?last=false")
          assert.strictEqual(first.status, 202, first.text)
          assert.strictEqual(first.json.state, "running")
          assert.strictEqual(first.json.lines_committed, 3)
          const again = yield* put(service, "resumed", lines(...all))
          assert.strictEqual(again.status, 202, again.text)
          assert.strictEqual(again.json.state, "completed")
          assert.strictEqual(again.json.lines_committed, 6)
          assert.strictEqual(again.json.accepted, 6)
          assert.strictEqual(again.json.duplicates, 0)
          assert.deepStrictEqual(
            yield* storedEvents(service, "acct_resume"),
            all.map((_, i) => `imp-r:${i}`)
          )
        })
      )

      it.effect("a part past the committed lines is refused 409 with where the import stands", () =>
        Effect.gen(function* () {
          const service = yield* Imports
          yield* put(service, "gap", lines(event("imp-x:1")), "?last=false")
          const reply = yield* put(service, "gap", lines(event("imp-x:3")), "?from_line=2")
          assert.strictEqual(reply.status, 409, reply.text)
          assert.strictEqual(reply.json.code, "import_offset_conflict")
          assert.match(reply.json.detail, /from_line=1/)
        })
      )

      it.effect(
        "progress is readable while the body is still arriving",
        () =>
          Effect.gen(function* () {
            const service = yield* Imports
            const first = lines(...Array.from({ length: 2100 }, (_, i) => event(`imp-p:${i}`, "acct_progress")))
            let release: () => void = () => {}
            const held = new Promise<void>((resolve) => (release = resolve))
            const body = new ReadableStream<Uint8Array>({
              async start(controller) {
                controller.enqueue(new TextEncoder().encode(first))
                await held
                controller.enqueue(new TextEncoder().encode(lines(event("imp-p:last", "acct_progress"))))
                controller.close()
              }
            })
            const upload = fetch(`${service.base}/api/events/imports/progress`, {
              method: "PUT",
              headers: ndjson,
              body,
              duplex: "half"
            } as RequestInit).then(async (response) => ({
              status: response.status,
              json: (await response.json()) as any
            }))
            let seen = 0
            for (let i = 0; i < 600 && seen < 2000; i++) {
              const reply = yield* get(service, "progress")
              if (reply.status === 200) seen = reply.json.lines_committed
              if (seen < 2000) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
            }
            assert.strictEqual(seen, 2000, "the first batch is committed and readable before the body ends")
            assert.strictEqual((yield* get(service, "progress")).json.state, "running")
            release()
            const done = yield* Effect.promise(() => upload)
            assert.strictEqual(done.status, 202)
            assert.strictEqual(done.json.lines_committed, 2101)
            assert.strictEqual(done.json.accepted, 2101)
          }),
        120_000
      )

      it.effect("over ACCORD_IMPORT_MAX_BYTES: 413, the committed lines stay", () =>
        Effect.gen(function* () {
          const service = yield* Imports
          const body = lines(...Array.from({ length: 3000 }, (_, i) => event(`imp-big:${i}`, "acct_big")))
          const reply = yield* put(service, "too-big", body)
          assert.strictEqual(reply.status, 413, reply.text)
          assert.strictEqual(reply.json.code, "content_too_large")
          const job = (yield* get(service, "too-big")).json
          assert.strictEqual(job.state, "failed")
          assert.strictEqual(job.failure, "content_too_large")
          assert.strictEqual(job.lines_committed, 2000, JSON.stringify(job))
          assert.strictEqual(job.accepted, 2000)
        })
      )

      it.effect("a key without the ingest scope: 403", () =>
        Effect.gen(function* () {
          const service = yield* Imports
          const reply = yield* put(service, "scope", lines(event("imp-s:1")), "", {
            ...ndjson,
            authorization: `Bearer ${adminKey}`
          })
          assert.strictEqual(reply.status, 403)
          assert.strictEqual(reply.json.code, "forbidden")
        })
      )

      it.effect("no key: 401", () =>
        Effect.gen(function* () {
          const service = yield* Imports
          const reply = yield* put(service, "nokey", lines(event("imp-k:1")), "", {
            "content-type": "application/x-ndjson"
          })
          assert.strictEqual(reply.status, 401)
        })
      )

      it.effect("a body that is not NDJSON: 415", () =>
        Effect.gen(function* () {
          const service = yield* Imports
          const reply = yield* put(service, "json", "[]", "", { ...ndjson, "content-type": "application/json" })
          assert.strictEqual(reply.status, 415)
        })
      )

      it.effect("an import id outside the allowed characters: 400", () =>
        Effect.gen(function* () {
          const service = yield* Imports
          const reply = yield* put(service, "bad%20id", lines(event("imp-i:1")))
          assert.strictEqual(reply.status, 400)
          assert.strictEqual(reply.json.code, "invalid_path")
        })
      )

      it.effect("an unknown import: 404", () =>
        Effect.gen(function* () {
          const service = yield* Imports
          const reply = yield* get(service, "never-sent")
          assert.strictEqual(reply.status, 404)
          assert.strictEqual(reply.json.code, "not_found")
        })
      )
    })
  })
}
