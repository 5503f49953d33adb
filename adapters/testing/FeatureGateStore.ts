import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { type FeatureGate, FeatureGateStore } from "../../core/ports/FeatureGateStore.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

const T = 1_700_000_000_000

type NewGate = Omit<FeatureGate, "state" | "unlockedAt" | "unlockEventId">

/**
 * The FeatureGateStore contract (spec `direct-api-ingestion.md` "States and transitions"). One
 * store per suite; each test uses workspaces of its own.
 */
export const suite = (name: string, layer: () => Layer.Layer<FeatureGateStore, unknown>) =>
  describe(`FeatureGateStore contract (${name})`, () => {
    onOneStore(layer, (it) => {
      const gate = (workspaceId: string, overrides: Partial<NewGate> = {}): NewGate => ({
        id: uid("gate-"),
        workspaceId,
        accountId: "acct_1",
        journeyId: uid("journey-"),
        versionId: "v3",
        featureKey: "exports.csv",
        startedAt: T,
        createdAt: T + 10,
        ...overrides
      })
      const checking = (g: NewGate): FeatureGate => ({ ...g, state: "checking", unlockedAt: null, unlockEventId: null })
      const createAll = (gates: ReadonlyArray<NewGate>) =>
        Effect.flatMap(FeatureGateStore, (store) =>
          Effect.forEach(gates, (g) => Effect.map(store.create(g), (created) => assert.isTrue(created)), {
            discard: true
          })
        )
      const byId = (gates: ReadonlyArray<FeatureGate>) =>
        [...gates].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))

      it.effect("a created gate is checking, exactly as given", () =>
        Effect.gen(function* () {
          const store = yield* FeatureGateStore
          const workspaceId = uid("ws-")
          const created = gate(workspaceId)
          assert.isTrue(yield* store.create(created))
          assert.deepStrictEqual(yield* store.get(workspaceId, created.id), Option.some(checking(created)))
          assert.isTrue(Option.isNone(yield* store.get(workspaceId, uid("gate-"))))
          assert.isTrue(Option.isNone(yield* store.get(uid("ws-"), created.id)))
        })
      )

      it.effect("a second create with the same id is refused and changes nothing", () =>
        Effect.gen(function* () {
          const store = yield* FeatureGateStore
          const workspaceId = uid("ws-")
          const first = gate(workspaceId)
          assert.isTrue(yield* store.create(first))
          assert.isFalse(
            yield* store.create(gate(workspaceId, { id: first.id, accountId: "acct_2", featureKey: "other" }))
          )
          assert.deepStrictEqual(yield* store.get(workspaceId, first.id), Option.some(checking(first)))
          // The same id in another workspace is another gate.
          const elsewhere = gate(uid("ws-"), { id: first.id })
          assert.isTrue(yield* store.create(elsewhere))
          assert.deepStrictEqual(yield* store.get(elsewhere.workspaceId, first.id), Option.some(checking(elsewhere)))
        })
      )

      it.effect("checking lists only the account's gates still checking, in that workspace", () =>
        Effect.gen(function* () {
          const store = yield* FeatureGateStore
          const workspaceId = uid("ws-")
          const first = gate(workspaceId)
          const second = gate(workspaceId, { createdAt: T + 20 })
          const unlocked = gate(workspaceId)
          const otherAccount = gate(workspaceId, { accountId: "acct_2" })
          const otherWorkspace = gate(uid("ws-"))
          yield* createAll([first, second, unlocked, otherAccount, otherWorkspace])
          assert.isTrue(yield* store.unlock({ workspaceId, id: unlocked.id, at: T + 30, eventId: uid("evt-") }))
          assert.deepStrictEqual(
            byId(yield* store.checking(workspaceId, "acct_1")),
            byId([checking(first), checking(second)])
          )
          assert.deepStrictEqual(yield* store.checking(workspaceId, "acct_2"), [checking(otherAccount)])
          assert.deepStrictEqual(yield* store.checking(workspaceId, "acct_none"), [])
        })
      )

      it.effect("listByAccount lists every gate of the account, checking and unlocked, oldest first", () =>
        Effect.gen(function* () {
          const store = yield* FeatureGateStore
          const workspaceId = uid("ws-")
          const first = gate(workspaceId, { createdAt: T + 1 })
          const second = gate(workspaceId, { createdAt: T + 2 })
          const third = gate(workspaceId, { createdAt: T + 3 })
          yield* createAll([third, first, second, gate(workspaceId, { accountId: "acct_2" }), gate(uid("ws-"))])
          const eventId = uid("evt-")
          assert.isTrue(yield* store.unlock({ workspaceId, id: second.id, at: T + 50, eventId }))
          assert.deepStrictEqual(yield* store.listByAccount(workspaceId, "acct_1"), [
            checking(first),
            { ...second, state: "unlocked", unlockedAt: T + 50, unlockEventId: eventId },
            checking(third)
          ])
          assert.deepStrictEqual(yield* store.listByAccount(workspaceId, "acct_none"), [])
        })
      )

      it.effect("unlock succeeds once, records when and by which event, then reports false", () =>
        Effect.gen(function* () {
          const store = yield* FeatureGateStore
          const workspaceId = uid("ws-")
          const created = gate(workspaceId)
          yield* createAll([created])
          const eventId = uid("evt-")
          assert.isTrue(yield* store.unlock({ workspaceId, id: created.id, at: T + 500, eventId }))
          const unlocked: FeatureGate = { ...created, state: "unlocked", unlockedAt: T + 500, unlockEventId: eventId }
          assert.deepStrictEqual(yield* store.get(workspaceId, created.id), Option.some(unlocked))
          assert.isFalse(yield* store.unlock({ workspaceId, id: created.id, at: T + 900, eventId: uid("evt-") }))
          assert.deepStrictEqual(yield* store.get(workspaceId, created.id), Option.some(unlocked))
          assert.deepStrictEqual(yield* store.checking(workspaceId, created.accountId), [])
        })
      )

      it.effect("unlock of an unknown gate, or of a gate in another workspace, is false", () =>
        Effect.gen(function* () {
          const store = yield* FeatureGateStore
          const workspaceId = uid("ws-")
          const created = gate(workspaceId)
          yield* createAll([created])
          assert.isFalse(yield* store.unlock({ workspaceId, id: uid("gate-"), at: T, eventId: uid("evt-") }))
          assert.isFalse(yield* store.unlock({ workspaceId: uid("ws-"), id: created.id, at: T, eventId: uid("evt-") }))
          assert.deepStrictEqual(yield* store.get(workspaceId, created.id), Option.some(checking(created)))
        })
      )

      it.effect("10 concurrent unlocks: exactly one succeeds, and its event is the one recorded", () =>
        Effect.gen(function* () {
          const store = yield* FeatureGateStore
          const workspaceId = uid("ws-")
          const created = gate(workspaceId)
          yield* createAll([created])
          const events = Array.from({ length: 10 }, (_, i) => ({ eventId: uid(`evt-${i}-`), at: T + 100 + i }))
          const results = yield* Effect.all(
            events.map(({ at, eventId }) => store.unlock({ workspaceId, id: created.id, at, eventId })),
            { concurrency: "unbounded" }
          )
          const winners = events.filter((_, i) => results[i])
          assert.strictEqual(winners.length, 1)
          const stored = Option.getOrThrow(yield* store.get(workspaceId, created.id))
          assert.strictEqual(stored.state, "unlocked")
          assert.strictEqual(stored.unlockEventId, winners[0]!.eventId)
          assert.strictEqual(stored.unlockedAt, winners[0]!.at)
        })
      )

      it.effect("list: a workspace's gates newest first, filtered by account and state, paged by keyset", () =>
        Effect.gen(function* () {
          const store = yield* FeatureGateStore
          const workspaceId = uid("ws-")
          const gates = [
            gate(workspaceId, { id: "g-1", createdAt: T + 1, accountId: "acct_a" }),
            gate(workspaceId, { id: "g-2", createdAt: T + 3, accountId: "acct_b" }),
            gate(workspaceId, { id: "g-3", createdAt: T + 3, accountId: "acct_a" }),
            gate(workspaceId, { id: "g-4", createdAt: T + 2, accountId: "acct_b" })
          ]
          yield* createAll([...gates, gate(uid("ws-"), { createdAt: T + 9 })])
          assert.isTrue(yield* store.unlock({ workspaceId, id: "g-4", at: T + 50, eventId: "evt-1" }))
          const ids = (listed: ReadonlyArray<FeatureGate>) => listed.map((g) => g.id)
          const all = yield* store.list({ workspaceId, limit: 10 })
          assert.deepStrictEqual(ids(all), ["g-3", "g-2", "g-4", "g-1"])
          assert.deepStrictEqual(all[0], checking(gates[2]!))
          const page = yield* store.list({ workspaceId, limit: 2 })
          const after = { createdAt: page[1]!.createdAt, id: page[1]!.id }
          assert.deepStrictEqual(ids(yield* store.list({ workspaceId, limit: 10, after })), ["g-4", "g-1"])
          assert.deepStrictEqual(ids(yield* store.list({ workspaceId, limit: 10, accountId: "acct_b" })), [
            "g-2",
            "g-4"
          ])
          assert.deepStrictEqual(ids(yield* store.list({ workspaceId, limit: 10, state: "unlocked" })), ["g-4"])
          assert.deepStrictEqual(
            ids(yield* store.list({ workspaceId, limit: 10, state: "checking", accountId: "acct_b" })),
            ["g-2"]
          )
          assert.deepStrictEqual(yield* store.list({ workspaceId: uid("ws-"), limit: 10 }), [])
        })
      )
    })
  })
