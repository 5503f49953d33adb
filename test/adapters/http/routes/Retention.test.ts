/**
 * Event retention over real HTTP, on the server as composed by `Server.start` with memory storage:
 * `GET /retention` answers the server's default until the workspace sets its own with
 * `PUT /retention` (days, or null for forever); bad bodies are 400 `invalid_body` problem documents
 * that never echo the value; only admin keys may read or set it; and a sweep removes from the
 * Events view exactly the events older than the workspace's retention.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as MemoryStorage from "../../../../adapters/memory/Storage.ts"
import { dayMillis, defaultRetentionDays, sweep } from "../../../../core/ingest/Retention.ts"
import { cipherLayer, withServices } from "../../../support/storage.ts"
import { issueKey, send, type Service, startService } from "../../../core/connector/connection/support.ts"

const retention = (service: Service, key: string, method = "GET", body?: unknown) =>
  send(`${service.url}/api/admin/v1/workspaces/${service.workspaceId}/retention`, method, key, body)

const ingested = (service: Service, key: string, daysAgo: number, eventId: string) =>
  send(`${service.url}/api/events/ingest`, "POST", key, {
    event_name: "feature_used",
    account_id: "acct_1",
    timestamp: new Date(Date.now() - daysAgo * dayMillis).toISOString(),
    event_id: eventId,
    semantic_type: "usage",
    event_kind: "product_action"
  })

describe("event retention routes", () => {
  layer(withServices(MemoryStorage.layer).pipe(Layer.provideMerge(cipherLayer)), { excludeTestServices: true })(
    (it) => {
      it.scoped("GET and PUT /retention: the server's default until set; days or forever; admin keys only", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          const read = yield* retention(service, service.adminKey)
          assert.strictEqual(read.status, 200, read.text)
          assert.deepStrictEqual(read.json, { retentionDays: defaultRetentionDays, source: "server" })

          const set = yield* retention(service, service.adminKey, "PUT", { retentionDays: 30 })
          assert.strictEqual(set.status, 200, set.text)
          assert.deepStrictEqual(set.json, { retentionDays: 30, source: "workspace" })
          assert.deepStrictEqual((yield* retention(service, service.adminKey)).json, {
            retentionDays: 30,
            source: "workspace"
          })
          const forever = yield* retention(service, service.adminKey, "PUT", { retentionDays: null })
          assert.deepStrictEqual(forever.json, { retentionDays: null, source: "workspace" })

          for (const body of [
            { retentionDays: 0 },
            { retentionDays: 36_501 },
            { retentionDays: 1.5 },
            { retentionDays: "secret-looking-value" },
            {},
            { retentionDays: 30, extra: true }
          ]) {
            const refused = yield* retention(service, service.adminKey, "PUT", body)
            assert.strictEqual(refused.status, 400, refused.text)
            assert.strictEqual(refused.headers.get("content-type"), "application/problem+json")
            assert.strictEqual(refused.json.code, "invalid_body")
            assert.notInclude(refused.text, "secret-looking-value")
          }
          assert.deepStrictEqual((yield* retention(service, service.adminKey)).json, {
            retentionDays: null,
            source: "workspace"
          })

          const reader = yield* issueKey(service, "developer:read")
          assert.strictEqual((yield* retention(service, reader)).status, 403)
          assert.strictEqual((yield* retention(service, reader, "PUT", { retentionDays: 1 })).status, 403)
          assert.strictEqual((yield* retention(service, "wrong-key")).status, 401)
        })
      )

      it.scoped("a sweep removes from the Events view the events older than the workspace's retention", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          const ingest = yield* issueKey(service, "ingest")
          for (const [daysAgo, eventId] of [
            [45, "old"],
            [31, "just-expired"],
            [29, "kept"],
            [0, "today"]
          ] as const) {
            const reply = yield* ingested(service, ingest, daysAgo, eventId)
            assert.strictEqual(reply.status, 202, reply.text)
          }
          const eventIds = Effect.map(
            send(`${service.url}/api/admin/v1/workspaces/${service.workspaceId}/events`, "GET", service.adminKey),
            (reply) => (reply.json.data as ReadonlyArray<{ event_id: string }>).map((e) => e.event_id)
          )
          // The server's default (400 days) keeps all four.
          yield* sweep(defaultRetentionDays)
          assert.sameMembers(yield* eventIds, ["old", "just-expired", "kept", "today"])
          yield* retention(service, service.adminKey, "PUT", { retentionDays: 30 })
          const done = yield* sweep(defaultRetentionDays)
          assert.isAtLeast(done.deletedEvents, 2)
          assert.sameMembers(yield* eventIds, ["kept", "today"])
        })
      )
    }
  )
})
