/**
 * Revalidation before every delivery (before the first send and before every retry the spec's list
 * is checked; any failure fails closed: the action is `blocked` with a stable reason code, nothing
 * is sent, and the reason shows in `GET /action-requests/{id}`; an action that was already
 * delivered, `unknown_outcome`, is reconciled, never silently dropped), on memory, PGlite and
 * PostgreSQL.
 *
 * An action is taken, then something changes before the dispatcher runs: (a) the catalog is
 * republished, (b) the authorizing admin key is revoked, (c) a second action over the frequency
 * limit was taken concurrently, (d) the decision's validUntil passes, (e) the account's status
 * changes. The dispatcher sends nothing for it (the transport records every action it is asked to
 * send), the action ends `blocked` with the reason in its history, and the admin route shows it
 * over HTTP. A retry of an `unknown_outcome` action is revalidated too, and kept.
 *
 * One store per variant; each test has a workspace and connection of its own and counts only what
 * was sent for its own actions. Time is a clock the test sets (sleeping uses the real one).
 */
import { createServer } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { assert, describe, layer } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import * as MemoryReadiness from "../../../adapters/memory/Readiness.ts"
import type { CatalogDocument } from "../../../core/protocol/messages/Catalog.ts"
import { type ActionIntake, type Authority, dispatchOutboxKind } from "../../../core/connector/Action.ts"
import { makeDispatcher } from "../../../core/connector/Dispatcher.ts"
import { intake } from "../../../core/connector/Intake.ts"
import { Revalidation } from "../../../core/connector/Revalidation.ts"
import { AccountProfileStore } from "../../../core/ports/AccountProfileStore.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import { ConnectorTransport, TransportFailure } from "../../../core/ports/ConnectorTransport.ts"
import { Outbox } from "../../../core/ports/Outbox.ts"
import type { Cipher } from "../../../core/protocol/Cipher.ts"
import { formatTimestamp } from "../../../core/protocol/Timestamp.ts"
import * as Server from "../../../runtimes/Server.ts"
import { publishCatalog } from "../../support/catalog.ts"
import { fixtureActionIds, fixtureCatalog, intakeInput } from "../../support/deliveries.ts"
import { configFrom, request } from "../../support/http.ts"
import { type StoredServices, storageVariants, uid } from "../../support/storage.ts"
import { connect, secrets } from "./dispatch/support.ts"

type Json = Record<string, any>

const t0 = Date.UTC(2026, 10, 22, 10, 0, 0)
const trialId = fixtureActionIds["extend_trial"]!

/** A clock the test sets; sleeping still uses the real one. */
const manualClock = () => {
  const base = Clock.make()
  const state = { now: t0 }
  const clock: Clock.Clock = {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => state.now,
    unsafeCurrentTimeNanos: () => BigInt(state.now) * 1_000_000n,
    currentTimeMillis: Effect.sync(() => state.now),
    currentTimeNanos: Effect.sync(() => BigInt(state.now) * 1_000_000n),
    sleep: base.sleep
  }
  return { clock, state }
}

/**
 * The customer side: records the action of every request it is sent; answers none (a connection
 * failure: not delivered), or ambiguously (maybe delivered) for the actions in `ambiguous`.
 */
const peer = { sent: [] as Array<string>, ambiguous: new Set<string>() }
const sentFor = (actionRequestId: string) => peer.sent.filter((id) => id === actionRequestId).length
const transport = Layer.succeed(ConnectorTransport, {
  post: (outgoing) =>
    Effect.suspend(() => {
      const { actionRequestId } = JSON.parse(new TextDecoder().decode(outgoing.body)) as {
        readonly actionRequestId: string
      }
      peer.sent.push(actionRequestId)
      const maybeDelivered = peer.ambiguous.has(actionRequestId)
      return Effect.fail(new TransportFailure({ reason: maybeDelivered ? "reset" : "connect", maybeDelivered }))
    })
})

/** A workspace of its own with an active connection and the fixture catalog (version 1). */
const freshWorkspace = Effect.suspend(() => {
  const as = { workspaceId: uid(), connectionId: uid(), secrets }
  return Effect.as(connect("http://127.0.0.1:1/connector", as), as.workspaceId)
})

/** Publishes the fixture catalog changed by `change` as the next version; its publishedVersionId. */
const publishChanged = (workspaceId: string, change: (document: Json) => void) => {
  const document = JSON.parse(JSON.stringify(fixtureCatalog)) as Json
  document.publishedVersionId = uid()
  change(document)
  return publishCatalog(workspaceId, document as CatalogDocument)
}

const boundTo = (input: ActionIntake, publishedVersionId: string): ActionIntake => ({
  ...input,
  binding: { ...input.binding, publishedVersionId }
})

const take = (workspaceId: string, input: ActionIntake, options: { readonly authorizedBy?: Authority } = {}) =>
  Effect.map(intake(workspaceId, input, options), (answer) => answer.actionRequestId)

const runDispatcherOnce = Effect.flatMap(makeDispatcher({ owner: uid() }), (dispatcher) => dispatcher.runOnce)

const stateOf = (id: string) =>
  Effect.map(
    Effect.flatMap(ActionLedger, (l) => l.get(id)),
    (r) => Option.getOrThrow(r).state
  )
const lastEntry = (id: string) =>
  Effect.map(
    Effect.flatMap(ActionLedger, (l) => l.history(id)),
    (h) => h.at(-1)!
  )

/**
 * `GET /action-requests/{id}` over real HTTP: the server (`Server.start`) on this test's storage,
 * bootstrapped for the action's workspace with a fresh admin key, stopped after the one read.
 */
const showOverHttp = (workspaceId: string, actionRequestId: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const storage = yield* Effect.context<StoredServices | Cipher>()
      const adminKey = `test-admin-${uid()}`
      const config = yield* configFrom({
        ACCORD_DATA_DIR: "memory://",
        ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
        ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey,
        ACCORD_ALLOW_INSECURE_ENDPOINTS: "1"
      })
      const address = yield* Server.start(
        config,
        NodeHttpServer.layerServer(createServer, { port: 0, host: "127.0.0.1" }),
        Layer.merge(Layer.succeedContext(storage), MemoryReadiness.layerMemory)
      )
      if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
      const reply = yield* request(
        `http://127.0.0.1:${address.port}/api/admin/v1/workspaces/${workspaceId}/action-requests/${actionRequestId}`,
        {
          headers: { authorization: `Bearer ${adminKey}` }
        }
      )
      assert.strictEqual(reply.status, 200, reply.text)
      return reply.json as Json
    }).pipe(Effect.orDie)
  )

/** The action was sent nothing, ends `blocked` for `reason`, terminally, and the admin route shows it. */
const assertBlocked = (workspaceId: string, actionRequestId: string, reason: string) =>
  Effect.gen(function* () {
    assert.strictEqual(sentFor(actionRequestId), 0, "nothing is sent")
    assert.strictEqual(yield* stateOf(actionRequestId), "blocked")
    const last = yield* lastEntry(actionRequestId)
    assert.deepStrictEqual([last.trigger, last.fromState, last.toState], ["blocked", "dispatching", "blocked"])
    assert.deepStrictEqual(last.detail, { attempt: 1, reason })
    // Terminal: the dispatch item is done, nothing will deliver it later.
    const item = Option.getOrThrow(
      yield* Effect.flatMap(Outbox, (o) => o.findByKey(dispatchOutboxKind, actionRequestId))
    )
    assert.isNotNull(item.completedAt)
    const shown = yield* showOverHttp(workspaceId, actionRequestId)
    assert.strictEqual(shown.state, "blocked")
    const entry = shown.history.at(-1)
    assert.strictEqual(entry.toState, "blocked")
    assert.include(JSON.stringify(entry), reason)
  })

for (const variant of storageVariants) {
  describe.skipIf(!variant.available)(`revalidation before every delivery (${variant.name})`, () => {
    layer(Layer.mergeAll(Layer.suspend(variant.layer), NodeCrypto.layer, transport), {
      excludeTestServices: true,
      timeout: "60 seconds"
    })((it) => {
      it.effect("control: nothing changed, the action is sent", () => {
        const { clock } = manualClock()
        return Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const id = yield* take(workspaceId, intakeInput(uid("acct_")))
          yield* runDispatcherOnce
          assert.strictEqual(sentFor(id), 1)
          assert.strictEqual(yield* stateOf(id), "dispatching")
        }).pipe(Effect.withClock(clock))
      })

      it.effect("(a) the catalog was republished: blocked published_version_not_current, nothing sent", () => {
        const { clock } = manualClock()
        return Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const id = yield* take(workspaceId, intakeInput(uid("acct_")))
          yield* publishChanged(workspaceId, () => undefined)
          yield* runDispatcherOnce
          yield* assertBlocked(workspaceId, id, "published_version_not_current")
        }).pipe(Effect.withClock(clock))
      })

      it.effect("(b) the authorizing admin key was revoked: blocked authority_revoked, nothing sent", () => {
        const { clock } = manualClock()
        return Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const keys = yield* ApiKeyStore
          const keyId = uid()
          yield* keys.ensureWorkspace(workspaceId, t0)
          yield* keys.create({
            id: keyId,
            workspaceId,
            scope: "admin",
            name: null,
            secretHash: uid().replaceAll("-", ""),
            createdAt: t0,
            revokedAt: null
          })
          const id = yield* take(workspaceId, intakeInput(uid("acct_")), {
            authorizedBy: { kind: "api_key", id: keyId }
          })
          yield* keys.revoke(workspaceId, keyId, t0)
          yield* runDispatcherOnce
          yield* assertBlocked(workspaceId, id, "authority_revoked")
        }).pipe(Effect.withClock(clock))
      })

      it.effect(
        "(c) two actions over a limit of 1 taken concurrently: the earlier is sent, the later blocked frequency_exceeded",
        () => {
          const { clock } = manualClock()
          return Effect.gen(function* () {
            const workspaceId = yield* freshWorkspace
            const version = yield* publishChanged(workspaceId, (d) => {
              d.actions[0].frequency = { limit: 1, windowSeconds: 3600 }
            })
            const accountId = uid("acct_")
            // The race: both intakes pass their check before either commits (each one's check has
            // seen no earlier action), as two concurrent requests can.
            const stored = yield* Revalidation
            const checked = yield* Ref.make(0)
            const bothChecked = yield* Deferred.make<void>()
            const racing = Revalidation.of({
              check: (subject) =>
                Effect.gen(function* () {
                  yield* stored.check(subject)
                  if ((yield* Ref.updateAndGet(checked, (n) => n + 1)) === 2)
                    yield* Deferred.succeed(bothChecked, undefined)
                  yield* Deferred.await(bothChecked)
                })
            })
            const ids = yield* Effect.all(
              [
                take(workspaceId, boundTo(intakeInput(accountId), version)),
                take(workspaceId, boundTo(intakeInput(accountId), version))
              ],
              {
                concurrency: 2
              }
            ).pipe(Effect.provideService(Revalidation, racing))
            assert.strictEqual(
              yield* (yield* ActionLedger).countForFrequency({ workspaceId, accountId, actionId: trialId, since: 0 }),
              2
            )
            // Earlier: by intake time, then id (the frequency policy's order).
            const records = yield* Effect.forEach(ids, (id) =>
              Effect.map(
                Effect.flatMap(ActionLedger, (l) => l.get(id)),
                Option.getOrThrow
              )
            )
            const [earlier, later] = [...records].sort(
              (x, y) => x.createdAt - y.createdAt || (x.actionRequestId < y.actionRequestId ? -1 : 1)
            )
            peer.ambiguous.add(earlier!.actionRequestId)
            yield* runDispatcherOnce
            assert.strictEqual(sentFor(earlier!.actionRequestId), 1)
            assert.strictEqual(yield* stateOf(earlier!.actionRequestId), "unknown_outcome")
            yield* assertBlocked(workspaceId, later!.actionRequestId, "frequency_exceeded")
          }).pipe(Effect.withClock(clock))
        }
      )

      it.effect("(d) the decision's validUntil passed: blocked decision_expired, nothing sent", () => {
        const clock = manualClock()
        return Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const version = yield* publishChanged(workspaceId, (d) => {
            d.decisions[0].validUntil = formatTimestamp(t0 + 60_000)
          })
          const id = yield* take(workspaceId, boundTo(intakeInput(uid("acct_")), version))
          clock.state.now += 60_000
          yield* runDispatcherOnce
          yield* assertBlocked(workspaceId, id, "decision_expired")
        }).pipe(Effect.withClock(clock.clock))
      })

      it.effect("(e) the account's status changed: blocked account_state_not_eligible, nothing sent", () => {
        const { clock } = manualClock()
        return Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const version = yield* publishChanged(workspaceId, (d) => {
            d.decisions[0].accountStatuses = ["trialing"]
          })
          const accountId = uid("acct_")
          const profiles = yield* AccountProfileStore
          yield* profiles.applyFacts(workspaceId, accountId, [
            { name: "account_status", value: "trialing", observedAt: t0, sourceEventId: uid() }
          ])
          const id = yield* take(workspaceId, boundTo(intakeInput(accountId), version))
          yield* profiles.applyFacts(workspaceId, accountId, [
            { name: "account_status", value: "canceled", observedAt: t0 + 1, sourceEventId: uid() }
          ])
          yield* runDispatcherOnce
          yield* assertBlocked(workspaceId, id, "account_state_not_eligible")
        }).pipe(Effect.withClock(clock))
      })

      it.effect(
        "a retry after a failed connection is revalidated: the catalog changed, the second attempt blocks, nothing more sent",
        () => {
          const clock = manualClock()
          return Effect.gen(function* () {
            const workspaceId = yield* freshWorkspace
            const id = yield* take(workspaceId, intakeInput(uid("acct_")))
            // Attempt 1: the connection fails (not delivered); a retry is scheduled.
            yield* runDispatcherOnce
            assert.strictEqual(sentFor(id), 1)
            assert.strictEqual(yield* stateOf(id), "dispatching")
            yield* publishChanged(workspaceId, () => undefined)
            clock.state.now += 10 * 60_000
            yield* runDispatcherOnce
            assert.strictEqual(sentFor(id), 1, "the retry sends nothing")
            assert.strictEqual(yield* stateOf(id), "blocked")
            const last = yield* lastEntry(id)
            assert.deepStrictEqual([last.trigger, last.toState], ["blocked", "blocked"])
            assert.deepStrictEqual(last.detail, { attempt: 2, reason: "published_version_not_current" })
          }).pipe(Effect.withClock(clock.clock))
        }
      )

      it.effect(
        "a retry is revalidated: an unknown_outcome action whose catalog changed is not sent again, keeps unknown_outcome, delivery_blocked",
        () => {
          const clock = manualClock()
          return Effect.gen(function* () {
            const workspaceId = yield* freshWorkspace
            const id = yield* take(workspaceId, intakeInput(uid("acct_")))
            peer.ambiguous.add(id)
            yield* runDispatcherOnce
            assert.strictEqual(sentFor(id), 1)
            assert.strictEqual(yield* stateOf(id), "unknown_outcome")
            yield* publishChanged(workspaceId, () => undefined)
            clock.state.now += 10 * 60_000
            yield* runDispatcherOnce
            assert.strictEqual(sentFor(id), 1, "not sent again")
            assert.strictEqual(yield* stateOf(id), "unknown_outcome")
            const last = yield* lastEntry(id)
            assert.deepStrictEqual(
              [last.trigger, last.fromState, last.toState],
              ["delivery_blocked", "unknown_outcome", "unknown_outcome"]
            )
            assert.deepStrictEqual(last.detail, { attempt: 2, reason: "published_version_not_current" })
            // Done with delivery: a day later nothing is sent for it.
            clock.state.now += 24 * 3_600_000
            yield* runDispatcherOnce
            assert.strictEqual(sentFor(id), 1)
            const shown = yield* showOverHttp(workspaceId, id)
            assert.strictEqual(shown.state, "unknown_outcome")
            assert.include(JSON.stringify(shown.history.at(-1)), "published_version_not_current")
          }).pipe(Effect.withClock(clock.clock))
        }
      )
    })
  })
}
