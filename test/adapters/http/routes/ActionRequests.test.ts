/**
 * `POST /action-requests` with an `Idempotency-Key` over real HTTP (the server as composed by
 * `Server.start`, memory storage): a retry answers the first answer again, another body under the
 * key is 409 `idempotency_key_reused`, a malformed key 400 `invalid_idempotency_key`, and without
 * the header every call is a new action.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as MemoryStorage from "../../../../adapters/memory/Storage.ts"
import type { Reply } from "../../../support/http.ts"
import { request } from "../../../support/http.ts"
import { intakeInput } from "../../../support/deliveries.ts"
import { cipherLayer, withServices } from "../../../support/storage.ts"
import { type Service, startService } from "../../../core/connector/connection/support.ts"
import { connect } from "../../../core/connector/dispatch/support.ts"

/** A served workspace with an active connection revision (set on the store: no handshake needed here). */
const activeService = Effect.gen(function* () {
  const service = yield* startService()
  yield* connect("https://customer.example/accord", {
    workspaceId: service.workspaceId,
    connectionId: globalThis.crypto.randomUUID(),
    secrets: { actionSigning: Redacted.make("as_" + "5".repeat(40)), completion: Redacted.make("cs_" + "6".repeat(40)) }
  })
  return service
})

const post = (service: Service, body: unknown, idempotencyKey?: string): Effect.Effect<Reply> =>
  request(`${service.url}/api/admin/v1/workspaces/${service.workspaceId}/action-requests`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${service.adminKey}`,
      "content-type": "application/json",
      ...(idempotencyKey === undefined ? {} : { "idempotency-key": idempotencyKey })
    },
    body: JSON.stringify(body)
  })

const assertProblem = (reply: Reply, status: number, code: string) => {
  assert.strictEqual(reply.status, status)
  assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
  assert.strictEqual(reply.json.code, code)
}

describe("POST /action-requests with an Idempotency-Key", () => {
  layer(withServices(MemoryStorage.layer).pipe(Layer.provideMerge(cipherLayer)), { excludeTestServices: true })(
    (it) => {
      it.scoped("the same key and body: the first 202 body again, with Idempotent-Replayed: true", () =>
        Effect.gen(function* () {
          const service = yield* activeService
          const first = yield* post(service, intakeInput(), "order-1")
          assert.strictEqual(first.status, 202)
          assert.isNull(first.headers.get("idempotent-replayed"))
          assert.deepStrictEqual(Object.keys(first.json).sort(), ["actionRequestId", "state"])
          // The same intake with its members in another order.
          const { accountId, action, actor, binding } = intakeInput()
          const again = yield* post(service, { binding, actor, action, accountId }, "order-1")
          assert.strictEqual(again.status, 202)
          assert.strictEqual(again.headers.get("idempotent-replayed"), "true")
          assert.deepStrictEqual(again.json, first.json)
          const shown = yield* request(
            `${service.url}/api/admin/v1/workspaces/${service.workspaceId}/action-requests/${first.json.actionRequestId}`,
            { headers: { authorization: `Bearer ${service.adminKey}` } }
          )
          assert.strictEqual(shown.status, 200)
        })
      )

      it.scoped("the same key with another body: 409 idempotency_key_reused, no body echoed", () =>
        Effect.gen(function* () {
          const service = yield* activeService
          assert.strictEqual((yield* post(service, intakeInput(), "order-2")).status, 202)
          const reused = yield* post(service, intakeInput("acct_distinctive_9"), "order-2")
          assertProblem(reused, 409, "idempotency_key_reused")
          assert.notInclude(reused.text, "acct_distinctive_9")
          assert.notInclude(reused.text, "acct_42")
        })
      )

      it.scoped("a malformed key: 400 invalid_idempotency_key, and nothing is claimed under it", () =>
        Effect.gen(function* () {
          const service = yield* activeService
          for (const key of ["x".repeat(256), "a b", "a\tb", "clé"]) {
            assertProblem(yield* post(service, intakeInput(), key), 400, "invalid_idempotency_key")
          }
          assert.strictEqual((yield* post(service, intakeInput(), "x".repeat(255))).status, 202)
        })
      )

      it.scoped("without the header, each call is a new action, as before", () =>
        Effect.gen(function* () {
          const service = yield* activeService
          const a = yield* post(service, intakeInput())
          const b = yield* post(service, intakeInput())
          assert.deepStrictEqual([a.status, b.status], [202, 202])
          assert.notStrictEqual(a.json.actionRequestId, b.json.actionRequestId)
          assert.isNull(b.headers.get("idempotent-replayed"))
        })
      )

      it.scoped("20 concurrent requests under one key: one action, every answer carries its id", () =>
        Effect.gen(function* () {
          const service = yield* activeService
          const replies = yield* Effect.all(
            Array.from({ length: 20 }, () => post(service, intakeInput(), "order-3")),
            {
              concurrency: "unbounded"
            }
          )
          assert.deepStrictEqual([...new Set(replies.map((r) => r.status))], [202])
          assert.strictEqual(new Set(replies.map((r) => r.json.actionRequestId)).size, 1)
          assert.strictEqual(replies.filter((r) => r.headers.get("idempotent-replayed") === null).length, 1)
        })
      )
    }
  )
})
