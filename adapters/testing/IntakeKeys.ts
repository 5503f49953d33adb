import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  ActionLedger,
  type ActionRecord,
  type CreateResult,
  type IntakeKeyClaim
} from "../../core/ports/ActionLedger.ts"
import { Outbox } from "../../core/ports/Outbox.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

const T = 1_700_000_000_000
const day = 24 * 3_600_000

/**
 * The intake key contract of `ActionLedger.create` and `findIntakeKey`: a caller's idempotency key
 * is claimed in the write that creates the action, once per workspace while live; a claim older
 * than `liveSince` is ignored and replaced. One store per suite; every test uses ids of its own.
 */
export const suite = (name: string, layer: () => Layer.Layer<ActionLedger | Outbox, unknown>) =>
  describe(`ActionLedger intake keys contract (${name})`, () => {
    onOneStore(layer, (it) => {
      const action = (workspaceId: string): Omit<ActionRecord, "version" | "updatedAt"> => ({
        actionRequestId: uid("ar-"),
        workspaceId,
        accountId: "acct_42",
        connectionId: uid("conn-"),
        revision: 0,
        providerIdempotencyKey: uid("idem-"),
        state: "dispatching",
        request: { action: { key: "upgrade" } },
        acknowledgement: null,
        sealedContinuation: null,
        createdAt: T
      })
      /** Creates an action under `key` at `at` (with an outbox item naming it), live since `liveSince`. */
      const createKeyed = (options: {
        readonly workspaceId: string
        readonly key: string
        readonly bodyHash?: string
        readonly at?: number
        readonly liveSince?: number
      }) =>
        Effect.gen(function* () {
          const record = { ...action(options.workspaceId), createdAt: options.at ?? T }
          const claim: IntakeKeyClaim = {
            workspaceId: options.workspaceId,
            idempotencyKey: options.key,
            bodyHash: options.bodyHash ?? "a".repeat(64),
            actionRequestId: record.actionRequestId,
            createdAt: record.createdAt
          }
          const result: CreateResult = yield* (yield* ActionLedger).create({
            record,
            history: { at: record.createdAt, trigger: "intake", detail: {} },
            outbox: {
              id: uid("item-"),
              kind: "intake-keys",
              dedupeKey: record.actionRequestId,
              payload: { actionRequestId: record.actionRequestId },
              nextAttemptAt: record.createdAt,
              createdAt: record.createdAt
            },
            intakeKey: { claim, liveSince: options.liveSince ?? record.createdAt - day }
          })
          return { record, claim, result }
        })
      const find = (workspaceId: string, idempotencyKey: string, liveSince = T - day) =>
        Effect.flatMap(ActionLedger, (ledger) => ledger.findIntakeKey({ workspaceId, idempotencyKey, liveSince }))
      const exists = (id: string) => Effect.flatMap(ActionLedger, (ledger) => Effect.map(ledger.get(id), Option.isSome))

      it.effect("create claims the key with the action; findIntakeKey returns the claim", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          assert.isTrue(Option.isNone(yield* find(workspaceId, "key-1")))
          const { claim, record, result } = yield* createKeyed({ workspaceId, key: "key-1" })
          assert.strictEqual(result, "created")
          assert.isTrue(yield* exists(record.actionRequestId))
          assert.deepStrictEqual(yield* find(workspaceId, "key-1"), Option.some(claim))
        })
      )

      it.effect("a live claim: the second create returns it and writes nothing (no action, no outbox item)", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const first = yield* createKeyed({ workspaceId, key: "key-2" })
          const second = yield* createKeyed({ workspaceId, key: "key-2", bodyHash: "b".repeat(64), at: T + 1_000 })
          assert.deepStrictEqual(second.result, { _tag: "IntakeKeyTaken", claim: first.claim })
          assert.isFalse(yield* exists(second.record.actionRequestId))
          assert.isTrue(Option.isNone(yield* (yield* Outbox).findByKey("intake-keys", second.record.actionRequestId)))
          assert.deepStrictEqual(yield* find(workspaceId, "key-2"), Option.some(first.claim))
        })
      )

      it.effect("keys are per workspace, and case-sensitive", () =>
        Effect.gen(function* () {
          const one = uid("ws-")
          const other = uid("ws-")
          assert.strictEqual((yield* createKeyed({ workspaceId: one, key: "Key-3" })).result, "created")
          assert.strictEqual((yield* createKeyed({ workspaceId: other, key: "Key-3" })).result, "created")
          assert.strictEqual((yield* createKeyed({ workspaceId: one, key: "key-3" })).result, "created")
        })
      )

      it.effect("an expired claim is ignored by findIntakeKey and replaced by the next create", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const old = yield* createKeyed({ workspaceId, key: "key-4" })
          // Still live one millisecond before it expires…
          assert.deepStrictEqual(yield* find(workspaceId, "key-4", T), Option.some(old.claim))
          // …and gone after.
          assert.isTrue(Option.isNone(yield* find(workspaceId, "key-4", T + 1)))
          const later = T + day + 1
          const fresh = yield* createKeyed({
            workspaceId,
            key: "key-4",
            bodyHash: "c".repeat(64),
            at: later,
            liveSince: later - day
          })
          assert.strictEqual(fresh.result, "created")
          assert.deepStrictEqual(yield* find(workspaceId, "key-4", later - day), Option.some(fresh.claim))
          // The old action stays; only the key moved on.
          assert.isTrue(yield* exists(old.record.actionRequestId))
        })
      )

      it.effect("a duplicate action under a new key claims nothing", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const ledger = yield* ActionLedger
          const record = action(workspaceId)
          const history = { at: T, trigger: "intake", detail: {} }
          assert.strictEqual(yield* ledger.create({ record, history }), "created")
          const claim: IntakeKeyClaim = {
            workspaceId,
            idempotencyKey: "key-5",
            bodyHash: "a".repeat(64),
            actionRequestId: record.actionRequestId,
            createdAt: T
          }
          assert.strictEqual(
            yield* ledger.create({ record, history, intakeKey: { claim, liveSince: T - day } }),
            "duplicate"
          )
          assert.isTrue(Option.isNone(yield* find(workspaceId, "key-5")))
        })
      )

      it.effect(
        "50 concurrent creates under one key: exactly one action, every other one gets its claim",
        () =>
          Effect.gen(function* () {
            const workspaceId = uid("ws-")
            const results = yield* Effect.all(
              Array.from({ length: 50 }, () => createKeyed({ workspaceId, key: "key-6" })),
              { concurrency: "unbounded" }
            )
            const created = results.filter((r) => r.result === "created")
            assert.strictEqual(created.length, 1)
            const winner = created[0]!.claim
            for (const r of results) {
              if (r.result !== "created") assert.deepStrictEqual(r.result, { _tag: "IntakeKeyTaken", claim: winner })
            }
            const stored = yield* Effect.forEach(results, (r) => exists(r.record.actionRequestId))
            assert.strictEqual(stored.filter(Boolean).length, 1)
          }),
        { timeout: 60_000 }
      )
    })
  })
