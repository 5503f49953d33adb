/**
 * Completion intake under concurrent deliveries for one action, over real HTTP on loopback against
 * PostgreSQL (`DATABASE_URL`; skipped with one line without it): the real server on a schema of its
 * own, an action the connector accepted, then 16 signed completions for that one action at once.
 *
 * What is pinned: every delivery is answered, with its own status (a redelivery of the recorded
 * completion is a 200 `duplicate`, whichever arrived first; a different completion for the action
 * is recorded or refused with a problem, never left unanswered), exactly one recording per
 * completion id in the action's history, and no delivery holding a transaction open on the
 * database while the server works on something else (a session `idle in transaction`): a
 * transaction held across the host's turns makes every other delivery for the action wait on its
 * row with a pooled connection, which under load starves the pool and stalls the route.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Redacted from "effect/Redacted"
import pg from "pg"
import { formatTimestamp } from "../../../../core/protocol/Timestamp.ts"
import { secrets, signedCompletion, startPeer } from "../../../core/connector/dispatch/support.ts"
import { acceptedAction, actionStatus, bootService, connect } from "../../../e2e/support.ts"
import { type Reply, request } from "../../../support/http.ts"
import { databaseUrl, freshSchemaUrl, warnIfSkipped } from "../../../support/postgres.ts"

warnIfSkipped("completion intake under concurrent deliveries")

const concurrent = 16
const applicationName = `accord-completion-concurrency-${process.pid}`

describe.skipIf(databaseUrl === undefined)("completion intake, concurrent deliveries for one action (postgres)", () => {
  it.live(
    "16 deliveries at once are each answered, recorded once per completion id, and never hold a transaction idle",
    () =>
      Effect.gen(function* () {
        const schemaUrl = new URL(Redacted.value(yield* freshSchemaUrl(databaseUrl!)))
        schemaUrl.searchParams.set("application_name", applicationName)
        const peer = yield* Effect.acquireRelease(
          Effect.promise(() => startPeer()),
          (peer) => Effect.promise(() => peer.close())
        )
        const service = yield* bootService({ env: { DATABASE_URL: schemaUrl.toString() } })
        yield* connect(service, peer.url, secrets)
        const workspaceId = service.ws.split("/").at(-1)
        const completedAt = formatTimestamp(Date.now())
        const deliver = (
          action: { readonly id: string; readonly providerIdempotencyKey: string },
          completionId: string
        ) =>
          Effect.flatMap(
            signedCompletion({
              type: "service.customer_action.completion",
              protocolVersion: 1,
              workspaceId,
              actionRequestId: action.id,
              providerIdempotencyKey: action.providerIdempotencyKey,
              providerReference: "ref_concurrent",
              completionId,
              completedAt,
              outcome: "succeeded",
              evidence: { entitlement: "trial_extended", reasonCode: "extended", source: "authenticated_completion" }
            }),
            (signed) =>
              request(`${service.base}/api/funnels/v1/runtime/actions/customer-complete`, { method: "POST", ...signed })
          )

        // A second session watches the server's sessions while the deliveries run.
        const watcher = yield* Effect.acquireRelease(
          Effect.promise(async () => {
            const client = new pg.Client({ connectionString: databaseUrl! })
            await client.connect()
            return client
          }),
          (client) => Effect.promise(() => client.end())
        )
        const idleInTransaction: Array<string> = []
        const watch = Effect.forever(
          Effect.zipRight(
            Effect.promise(() =>
              watcher
                .query(
                  "SELECT query FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle in transaction'",
                  [applicationName]
                )
                .then((result) => {
                  for (const row of result.rows) idleInTransaction.push(String(row.query).replace(/\s+/g, " ").trim())
                })
            ),
            Effect.sleep("5 millis")
          )
        )
        const watching = yield* Effect.fork(watch)
        const atOnce = (send: (i: number) => Effect.Effect<Reply>) =>
          Effect.all(
            Array.from({ length: concurrent }, (_, i) => send(i)),
            { concurrency: "unbounded" }
          )

        // Redeliveries: one completion id and body, each with a fresh nonce and signature.
        const redelivered = yield* acceptedAction(service, "acct_concurrent")
        const redeliveries = yield* atOnce(() => deliver(redelivered, `cmp_${redelivered.id}`))
        // Different completions for one action, each its own id.
        const contended = yield* acceptedAction(service, "acct_concurrent")
        const distinct = yield* atOnce((i) => deliver(contended, `cmp_${contended.id}_${i}`))
        yield* Fiber.interrupt(watching)

        for (const reply of redeliveries) assert.strictEqual(reply.status, 200, reply.text)
        assert.deepStrictEqual(redeliveries.map((r) => r.json.status as string).sort(), [
          ...Array.from({ length: concurrent - 1 }, () => "duplicate"),
          "recorded"
        ])
        const recorded: Array<string> = []
        for (const reply of distinct) {
          if (reply.status === 200) {
            assert.strictEqual(reply.json.status, "recorded", reply.text)
            recorded.push(reply.json.completionId as string)
          } else {
            // A refusal is a problem document the sender can act on (deliver again), never a 5xx.
            assert.strictEqual(reply.status, 409, reply.text)
            assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
            assert.strictEqual(reply.json.code, "concurrent_change", reply.text)
          }
        }
        assert.isAtLeast(recorded.length, 1)

        // Each action's history holds one completion entry per recorded completion id.
        const history = (id: string) =>
          Effect.map(actionStatus(service, id), (status) =>
            (
              status.history as ReadonlyArray<{
                readonly trigger: string
                readonly detail: { readonly completionId: string }
              }>
            )
              .filter((h) => h.trigger === "completion")
              .map((h) => h.detail.completionId)
          )
        assert.deepStrictEqual(yield* history(redelivered.id), [`cmp_${redelivered.id}`])
        assert.deepStrictEqual((yield* history(contended.id)).sort(), recorded.sort())
        assert.deepStrictEqual(idleInTransaction, [])
      }).pipe(Effect.scoped),
    60_000
  )
})
