/**
 * The connection scheduler and revision retirement on the `TestClock`, against real storage and a
 * loopback customer peer: checks every 10 minutes of connections whose last check is older than 20
 * minutes; secrets of a replaced revision retired together once its actions have left the
 * reconciliation window; superseded revisions and orphans (a partial credential write) retired at
 * once, each with its own audit entry.
 */
import { assert, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as TestClock from "effect/TestClock"
import * as MemoryStorage from "../../../../adapters/memory/Storage.ts"
import { ActionLedger } from "../../../../core/ports/ActionLedger.ts"
import { ConnectionStore } from "../../../../core/ports/ConnectionStore.ts"
import { checkConnection } from "../../../../core/connector/ConnectionCheck.ts"
import { reconcileOutboxKind } from "../../../../core/connector/Action.ts"
import { makeDispatcher } from "../../../../core/connector/Dispatcher.ts"
import { intake } from "../../../../core/connector/Intake.ts"
import {
  checkIntervalMillis,
  type RoundSummary,
  retireRevisions,
  scheduler
} from "../../../../core/connector/ConnectionMaintenance.ts"
import { connectorSecretRef, SecretVault } from "../../../../core/ports/SecretVault.ts"
import { StorageError } from "../../../../core/ports/StorageError.ts"
import { warnIfSkipped } from "../../../support/postgres.ts"
import { cipherLayer, withServices } from "../../../support/storage.ts"
import { intakeInput } from "../dispatch/support.ts"
import { publishCatalog } from "../../../support/catalog.ts"
import {
  ackPeer,
  onEachStorage,
  outbound,
  registerCore,
  registerEndpoint,
  showConnector,
  startService
} from "./support.ts"

warnIfSkipped("connection maintenance")

const start = Date.UTC(2026, 10, 22, 10, 0, 0)
const minute = 60_000
const window = 60 * minute

const registerAt = registerCore

const revisionStates = (connectionId: string) =>
  Effect.map(
    Effect.flatMap(ConnectionStore, (store) => store.getById(connectionId)),
    (c) => Option.getOrThrow(c).revisions.map((r) => [r.revision, r.state] as const)
  )

const secretsPresent = (connectionId: string, revision: number) =>
  Effect.flatMap(SecretVault, (vault) =>
    Effect.forEach(["actionSigning", "completion"] as const, (name) =>
      Effect.map(vault.get(connectorSecretRef(connectionId, revision, name)), Option.isSome)
    )
  )

const auditOf = (connectionId: string) =>
  Effect.map(
    Effect.flatMap(ConnectionStore, (store) => store.audit(connectionId)),
    (trail) => trail.map(({ seq: _, ...entry }) => entry)
  )

/** An action bound to a revision, created now (its last activity). */
const bindAction = (workspaceId: string, connectionId: string, revision: number) =>
  Effect.gen(function* () {
    const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
    const actionRequestId = globalThis.crypto.randomUUID()
    yield* Effect.flatMap(ActionLedger, (ledger) =>
      ledger.create({
        record: {
          actionRequestId,
          workspaceId,
          accountId: "acct_1",
          connectionId,
          revision,
          providerIdempotencyKey: `pva_${actionRequestId}`,
          state: "accepted",
          request: {},
          acknowledgement: null,
          sealedContinuation: null,
          createdAt: now
        },
        history: { at: now, trigger: "test", detail: {} }
      })
    )
  })

/** A connection whose revision 0 is active, at `start` on the TestClock. */
const activeConnection = Effect.gen(function* () {
  yield* TestClock.setTime(start)
  const workspaceId = globalThis.crypto.randomUUID()
  const endpoint = yield* ackPeer()
  const { connectionId } = yield* registerAt(workspaceId, endpoint)
  yield* checkConnection(workspaceId)
  return { workspaceId, endpoint, connectionId }
})

/** Forks the scheduler; `round(connectionId)` moves the clock 10 minutes and reports that round's checks. */
const startScheduler = Effect.gen(function* () {
  const rounds = yield* Queue.unbounded<RoundSummary>()
  yield* Effect.forkScoped(scheduler({ reconciliationWindowMillis: window, onRound: (s) => Queue.offer(rounds, s) }))
  return (connectionId: string) =>
    Effect.gen(function* () {
      yield* TestClock.adjust(checkIntervalMillis)
      const summary = yield* Queue.take(rounds)
      return summary.checks.filter((c) => c.connectionId === connectionId).map((c) => [c.revision, c.state, c.outcome])
    })
})

/** The revisions of `connectionId` a retirement sweep retires now. */
const retiredNow = (connectionId: string) =>
  Effect.map(retireRevisions({ reconciliationWindowMillis: window }), (retired) =>
    retired.filter((r) => r.connectionId === connectionId)
  )

onEachStorage("connection maintenance", { live: false }, (it) => {
  it.scoped("the scheduler checks every 10 minutes the connections whose last check is older than 20 minutes", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(start)
      const workspaceId = globalThis.crypto.randomUUID()
      const { connectionId } = yield* registerAt(workspaceId, yield* ackPeer())
      const round = (yield* startScheduler)(connectionId)
      assert.deepStrictEqual(yield* round, [[0, "active", "succeeded"]]) // +10: never checked
      assert.deepStrictEqual(yield* round, []) // +20: checked 10 minutes ago
      assert.deepStrictEqual(yield* round, []) // +30: exactly 20 minutes ago is not older
      assert.deepStrictEqual(yield* round, [[0, "active", "succeeded"]]) // +40
      const lastCheck = Option.getOrThrow(
        yield* Effect.flatMap(ConnectionStore, (s) => s.getById(connectionId))
      ).lastCheck
      assert.strictEqual(lastCheck?.at, start + 40 * minute)
    }).pipe(Effect.provide(outbound))
  )

  it.scoped("a due connection has both its active and its pending revision checked", () =>
    Effect.gen(function* () {
      const { connectionId, endpoint, workspaceId } = yield* activeConnection
      yield* registerAt(workspaceId, endpoint)
      const round = (yield* startScheduler)(connectionId)
      // +10 and +20: the check made at 0 is not older than 20 minutes; +30: it is.
      const checked = [yield* round, yield* round, yield* round]
      assert.deepStrictEqual(checked, [
        [],
        [],
        [
          [0, "active", "succeeded"],
          [1, "active", "succeeded"]
        ]
      ])
      assert.deepStrictEqual(yield* revisionStates(connectionId), [
        [1, "active"],
        [0, "replaced"]
      ])
    }).pipe(Effect.provide(outbound))
  )

  it.scoped("a superseded revision's secrets are retired at once, together, with an audit entry", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(start)
      const workspaceId = globalThis.crypto.randomUUID()
      const { connectionId } = yield* registerAt(workspaceId, yield* ackPeer())
      yield* TestClock.adjust(minute)
      yield* registerAt(workspaceId, yield* ackPeer())
      assert.deepStrictEqual(yield* retiredNow(connectionId), [{ connectionId, revision: 0, orphan: false }])
      assert.deepStrictEqual(yield* revisionStates(connectionId), [
        [1, "pending"],
        [0, "retired"]
      ])
      assert.deepStrictEqual(yield* secretsPresent(connectionId, 0), [false, false])
      assert.deepStrictEqual(yield* secretsPresent(connectionId, 1), [true, true])
      const trail = yield* auditOf(connectionId)
      assert.deepStrictEqual(trail.at(-1), {
        at: start + minute,
        revision: 0,
        event: "retired",
        detail: { reason: "superseded_before_activation", retiredSecrets: ["actionSigning", "completion"] }
      })
    }).pipe(Effect.provide(outbound))
  )

  it.scoped("a replaced revision keeps its secrets until its last action left the reconciliation window", () =>
    Effect.gen(function* () {
      const { connectionId, endpoint, workspaceId } = yield* activeConnection
      yield* TestClock.adjust(5 * minute)
      yield* bindAction(workspaceId, connectionId, 0) // last activity on 0 at +5
      yield* registerAt(workspaceId, endpoint)
      yield* TestClock.adjust(5 * minute)
      yield* checkConnection(workspaceId) // 1 active at +10: 0 replaced
      yield* TestClock.adjust(20 * minute)
      yield* bindAction(workspaceId, connectionId, 0) // a later completion on 0 at +30
      const retire = retiredNow(connectionId)
      yield* TestClock.adjust(59 * minute) // +89: the window since +30 has not passed
      assert.deepStrictEqual(yield* retire, [])
      assert.deepStrictEqual(yield* secretsPresent(connectionId, 0), [true, true])
      yield* TestClock.adjust(minute) // +90
      assert.deepStrictEqual(yield* retire, [{ connectionId, revision: 0, orphan: false }])
      assert.deepStrictEqual(yield* secretsPresent(connectionId, 0), [false, false])
      assert.deepStrictEqual(yield* revisionStates(connectionId), [
        [1, "active"],
        [0, "retired"]
      ])
      assert.deepStrictEqual((yield* auditOf(connectionId)).at(-1), {
        at: start + 90 * minute,
        revision: 0,
        event: "retired",
        detail: {
          reason: "reconciliation_window_elapsed",
          lastActionActivityAt: start + 30 * minute,
          reconciliationWindowMillis: window,
          retiredSecrets: ["actionSigning", "completion"]
        }
      })
      assert.deepStrictEqual(yield* retire, []) // once
    }).pipe(Effect.provide(outbound))
  )

  it.scoped("a replaced revision is kept while an action bound to it is still being delivered", () =>
    Effect.gen(function* () {
      const { connectionId, endpoint, workspaceId } = yield* activeConnection
      // An action delivered to a peer that answers no execution: unknown outcome, retried for 24 hours
      // without its record changing.
      yield* publishCatalog(workspaceId)
      const { actionRequestId } = yield* intake(workspaceId, intakeInput())
      const dispatcher = yield* makeDispatcher({ owner: "maintenance-test" })
      assert.strictEqual(yield* dispatcher.runOnce, 1)
      const ledger = yield* ActionLedger
      assert.strictEqual(Option.getOrThrow(yield* ledger.get(actionRequestId)).state, "unknown_outcome")
      yield* registerAt(workspaceId, endpoint)
      yield* checkConnection(workspaceId) // 0 replaced at start

      yield* TestClock.adjust(2 * window) // the window has passed since the action's last update
      assert.deepStrictEqual(yield* retiredNow(connectionId), [])
      assert.deepStrictEqual(yield* secretsPresent(connectionId, 0), [true, true])

      // Past the delivery deadline the dispatcher gives up (history entry, state kept); one window later
      // the secrets go.
      yield* TestClock.setTime(start + 24 * 60 * minute)
      yield* dispatcher.runOnce
      const history = yield* ledger.history(actionRequestId)
      assert.strictEqual(history.at(-1)?.trigger, "delivery_abandoned")
      assert.deepStrictEqual(yield* retiredNow(connectionId), [])
      yield* TestClock.adjust(window)
      assert.deepStrictEqual(yield* retiredNow(connectionId), [{ connectionId, revision: 0, orphan: false }])
      assert.deepStrictEqual(yield* secretsPresent(connectionId, 0), [false, false])
    }).pipe(Effect.provide(outbound))
  )

  it.scoped("a reconciliation read still queued after the reconciliation window does not keep the secrets", () =>
    Effect.gen(function* () {
      const { connectionId, endpoint, workspaceId } = yield* activeConnection
      const ledger = yield* ActionLedger
      // A Payment action whose reconciliation read was queued with its last change.
      const awaitingRead = globalThis.crypto.randomUUID()
      yield* ledger.create({
        record: {
          actionRequestId: awaitingRead,
          workspaceId,
          accountId: "acct_1",
          connectionId,
          revision: 0,
          providerIdempotencyKey: `pva_${awaitingRead}`,
          state: "pending",
          request: {},
          acknowledgement: null,
          sealedContinuation: null,
          createdAt: start
        },
        history: { at: start, trigger: "test", detail: {} },
        outbox: {
          id: globalThis.crypto.randomUUID(),
          kind: reconcileOutboxKind,
          dedupeKey: `${awaitingRead}:cmp_1`,
          payload: { actionRequestId: awaitingRead, completionId: "cmp_1" },
          nextAttemptAt: start,
          createdAt: start
        }
      })
      yield* registerAt(workspaceId, endpoint)
      yield* checkConnection(workspaceId) // 0 replaced at start
      // Within the window the read keeps the secrets, as any recent activity does.
      yield* TestClock.adjust(window / 2)
      assert.deepStrictEqual(yield* retiredNow(connectionId), [])
      // Once the window has passed since that activity, the read has outlived it: retired together.
      yield* TestClock.adjust(window)
      assert.deepStrictEqual(yield* retiredNow(connectionId), [{ connectionId, revision: 0, orphan: false }])
      assert.deepStrictEqual(yield* secretsPresent(connectionId, 0), [false, false])
    }).pipe(Effect.provide(outbound))
  )

  it.scoped("a replaced revision without actions is retired one window after it was replaced", () =>
    Effect.gen(function* () {
      const { connectionId, endpoint, workspaceId } = yield* activeConnection
      yield* registerAt(workspaceId, endpoint)
      yield* TestClock.adjust(10 * minute)
      yield* checkConnection(workspaceId) // 0 replaced at +10
      const retire = Effect.map(retiredNow(connectionId), (retired) => retired.length)
      yield* TestClock.adjust(window - 1)
      assert.strictEqual(yield* retire, 0)
      yield* TestClock.adjust(1)
      assert.strictEqual(yield* retire, 1)
    }).pipe(Effect.provide(outbound))
  )

  it.scoped("an orphan (one secret missing) is retired at once, inside the window, with its own audit evidence", () =>
    Effect.gen(function* () {
      const { connectionId, endpoint, workspaceId } = yield* activeConnection
      yield* bindAction(workspaceId, connectionId, 0)
      yield* registerAt(workspaceId, endpoint)
      yield* checkConnection(workspaceId) // 0 replaced, its action recent
      yield* Effect.flatMap(SecretVault, (vault) => vault.retire(connectorSecretRef(connectionId, 0, "completion")))
      assert.deepStrictEqual(yield* retiredNow(connectionId), [{ connectionId, revision: 0, orphan: true }])
      assert.deepStrictEqual(yield* secretsPresent(connectionId, 0), [false, false])
      assert.deepStrictEqual((yield* auditOf(connectionId)).at(-1), {
        at: start,
        revision: 0,
        event: "orphan_retired",
        detail: {
          reason: "partial_credential_write",
          missingSecrets: ["completion"],
          retiredSecrets: ["actionSigning"]
        }
      })
    }).pipe(Effect.provide(outbound))
  )

  it.scoped("a registration whose secret write fails leaves nothing: revision and secrets commit together", () =>
    Effect.gen(function* () {
      const workspaceId = globalThis.crypto.randomUUID()
      const result = yield* Effect.either(registerAt(workspaceId, "http://127.0.0.1:9/hook").pipe(failingSecondPut))
      assert.strictEqual(result._tag, "Left")
      assert.isTrue(Option.isNone(yield* Effect.flatMap(ConnectionStore, (store) => store.get(workspaceId))))
    }).pipe(Effect.provide(outbound))
  )
})

/** The vault's second `put` (the completion secret) fails, as if the process died between the two. */
const failingSecondPut = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(SecretVault, (vault) => {
    let puts = 0
    return Effect.provideService(effect, SecretVault, {
      ...vault,
      put: (ref, secret, now) =>
        ++puts === 2
          ? Effect.fail(new StorageError({ operation: "secret.put", message: "interrupted" }))
          : vault.put(ref, secret, now)
    })
  })

// Memory storage cannot join a transaction: the same failure leaves a revision without secrets, an
// orphan, which can never pass a check and is retired once a new registration supersedes it.
// The server-level scheduler test runs here too: moving the TestClock 10 minutes wakes the server's
// dispatcher every virtual 250 ms, which on SQL storage costs thousands of queries.
layer(withServices(MemoryStorage.layer).pipe(Layer.provideMerge(cipherLayer), Layer.merge(outbound)))(
  "connection maintenance (memory)",
  (it) => {
    it.scoped(
      "the server runs the scheduler: a registered endpoint is checked within 10 minutes",
      () =>
        Effect.gen(function* () {
          yield* TestClock.setTime(start)
          const service = yield* startService()
          yield* registerEndpoint(service, yield* ackPeer())
          yield* TestClock.adjust(checkIntervalMillis)
          // The round runs in the server's own fiber; wait (in real time) until it has recorded the check.
          let view = (yield* showConnector(service)).json
          for (let attempt = 0; attempt < 200 && view.lastCheck === null; attempt++) {
            yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 25)))
            view = (yield* showConnector(service)).json
          }
          assert.deepStrictEqual([view.activeRevision, view.lastCheck?.outcome], [0, "succeeded"])
        }),
      120_000
    )

    it.scoped("without transactions an interrupted registration leaves an orphan that the sweep retires", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(start)
        const workspaceId = globalThis.crypto.randomUUID()
        const endpoint = yield* ackPeer()
        assert.strictEqual(
          (yield* Effect.either(registerAt(workspaceId, endpoint).pipe(failingSecondPut)))._tag,
          "Left"
        )
        const connection = Option.getOrThrow(yield* Effect.flatMap(ConnectionStore, (store) => store.get(workspaceId)))
        const { connectionId } = connection
        assert.deepStrictEqual(yield* secretsPresent(connectionId, 0), [true, false])
        const failed = yield* checkConnection(workspaceId)
        assert.deepStrictEqual([failed.revision, failed.state, failed.problem], [0, "pending", "secrets_missing"])
        assert.deepStrictEqual(yield* retireRevisions({ reconciliationWindowMillis: window }), []) // pending: kept

        yield* registerAt(workspaceId, endpoint) // 1 supersedes the orphan
        const retired = yield* retireRevisions({ reconciliationWindowMillis: window })
        assert.deepStrictEqual(retired, [{ connectionId, revision: 0, orphan: true }])
        assert.deepStrictEqual(yield* secretsPresent(connectionId, 0), [false, false])
        assert.deepStrictEqual(
          (yield* auditOf(connectionId)).map((e) => [e.revision, e.event]),
          [
            [1, "registered"],
            [0, "orphan_retired"]
          ]
        )
        assert.strictEqual((yield* checkConnection(workspaceId)).state, "active")
      })
    )
  }
)
