/**
 * The bulk import client (`accord backfill` past its threshold) against a real HTTP server that
 * misbehaves on purpose: a part answered 503 or 429 is sent again after the answer's
 * `Retry-After`, from the same line, and the import completes; a service that keeps answering 503
 * stops it with the service's code after `partRetries` resends.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { gunzipSync } from "node:zlib"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import { partRetries, run } from "../../../adapters/cli-support/BulkImport.ts"
import { tempFiles } from "../../runtimes/cli/cli.ts"

interface Put {
  readonly fromLine: string | null
  readonly lines: number
}

/** A service whose `answer` decides each PUT's status; it records what it was sent. */
const service = (answer: (put: number) => number) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly puts: Array<Put>; readonly close: () => void }>((resume) => {
      const puts: Array<Put> = []
      const server = createServer((request: IncomingMessage, response: ServerResponse) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          if (request.method === "GET") {
            response.writeHead(404).end()
            return
          }
          const query = new URL(request.url!, "http://localhost").searchParams
          const lines = gunzipSync(Buffer.concat(chunks))
            .toString()
            .split("\n")
            .filter((l) => l !== "").length
          puts.push({ fromLine: query.get("from_line"), lines })
          const status = answer(puts.length)
          if (status !== 202) {
            response
              .writeHead(status, { "content-type": "application/problem+json", "retry-after": "0" })
              .end(
                JSON.stringify({ code: status === 503 ? "storage_unavailable" : "rate_limited", detail: "try again" })
              )
            return
          }
          response.writeHead(202, { "content-type": "application/json" }).end(
            JSON.stringify({
              import_id: "x",
              state: query.get("last") === "true" ? "completed" : "running",
              lines_committed: Number(query.get("from_line")) + lines,
              accepted: Number(query.get("from_line")) + lines,
              duplicates: 0,
              refused: 0,
              errors: [],
              failure: null
            })
          )
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resume(
          Effect.succeed({
            url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
            puts,
            close: () => server.close()
          })
        )
      )
    }),
    (s) => Effect.sync(s.close)
  )

const file = () => {
  const dir = tempFiles({
    "events.ndjson": Array.from({ length: 5 }, (_, i) => JSON.stringify({ event_id: `e${i}` })).join("\n") + "\n"
  })
  return join(dir, "events.ndjson")
}

const importWith = (url: string) =>
  run({ path: file(), serviceUrl: url, apiKey: Redacted.make("key"), partLines: 2, progress: () => {} })

describe("bulk import client", () => {
  it.scopedLive("a part answered 503, then 429, is sent again from the same line and the import completes", () =>
    Effect.gen(function* () {
      const { puts, url } = yield* service((put) => (put === 2 ? 503 : put === 3 ? 429 : 202))
      const done = yield* importWith(url)
      assert.strictEqual(done.state, "completed")
      assert.strictEqual(done.lines_committed, 5)
      assert.deepStrictEqual(
        puts.map((p) => [p.fromLine, p.lines]),
        [
          ["0", 2],
          ["2", 2],
          ["2", 2],
          ["2", 2],
          ["4", 1]
        ]
      )
    })
  )

  it.scopedLive("a service that keeps answering 503 stops the import with its code, to be resumed by a rerun", () =>
    Effect.gen(function* () {
      const { puts, url } = yield* service(() => 503)
      const stopped = yield* Effect.either(importWith(url))
      assert.isTrue(Either.isLeft(stopped))
      if (Either.isLeft(stopped)) assert.match(stopped.left.message, /503 storage_unavailable.*rerun the same command/)
      assert.strictEqual(puts.length, 1 + partRetries)
    })
  )
})
