/**
 * Intake idempotency for callers: the key format and body hash of
 * `core/connector/IntakeKey.ts`, and `intake` under an idempotency key on every storage variant —
 * replay, reuse with another body, nothing stored by a refused intake, 24-hour retention, and 50
 * concurrent intakes under one key creating one action.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import { type ActionIntake, dispatchOutboxKind } from "../../../core/connector/Action.ts"
import { intake } from "../../../core/connector/Intake.ts"
import { intakeKeyRetentionMillis, isIntakeKey, prepareIntakeKey } from "../../../core/connector/IntakeKey.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { intakeInput } from "../../support/deliveries.ts"
import { storageVariants } from "../../support/storage.ts"
import { connect, paymentIntakeInput } from "./dispatch/support.ts"

describe("isIntakeKey", () => {
  it("accepts 1 to 255 visible ASCII characters", () => {
    for (const key of ["a", "x".repeat(255), "order-42:retry/1", "!~", "4a7d1ed4-14f5-4e4b-9a36-8a6a2f0e7f3c"]) {
      assert.isTrue(isIntakeKey(key), key)
    }
  })
  it("refuses empty, too long, spaces, control and non-ASCII characters", () => {
    for (const key of ["", "x".repeat(256), "a b", " a", "a\t", "a\n", "a\u007f", "clé", "a\u0000"]) {
      assert.isFalse(isIntakeKey(key), JSON.stringify(key))
    }
  })
})

describe("prepareIntakeKey", () => {
  /** The same intake with every object's members in reverse order. */
  const reversed = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(reversed)
      : value !== null && typeof value === "object"
        ? Object.fromEntries(
            Object.entries(value)
              .reverse()
              .map(([k, v]) => [k, reversed(v)])
          )
        : value

  it.effect("hashes the canonical JSON: member order does not matter, content does", () =>
    Effect.gen(function* () {
      const input = intakeInput()
      const a = yield* prepareIntakeKey("k", input)
      const b = yield* prepareIntakeKey("k", reversed(input) as ActionIntake)
      assert.strictEqual(a.bodyHash, b.bodyHash)
      assert.match(a.bodyHash, /^[0-9a-f]{64}$/)
      assert.notStrictEqual((yield* prepareIntakeKey("k", intakeInput("acct_other"))).bodyHash, a.bodyHash)
    }).pipe(Effect.provide(NodeCrypto.layer))
  )

  it.effect("a malformed key is InvalidIdempotencyKey", () =>
    Effect.gen(function* () {
      const result = yield* Effect.either(prepareIntakeKey("a b", intakeInput()))
      assert.isTrue(Either.isLeft(result) && result.left._tag === "InvalidIdempotencyKey")
    }).pipe(Effect.provide(NodeCrypto.layer))
  )
})

for (const storage of storageVariants) {
  describe.skipIf(!storage.available)(`intake with an idempotency key (${storage.name})`, () => {
    layer(Layer.merge(storage.layer(), NodeCrypto.layer), { timeout: "60 seconds" })((it) => {
      /** A workspace of its own with an active connection revision. */
      const freshWorkspace = Effect.gen(function* () {
        const as = {
          workspaceId: globalThis.crypto.randomUUID(),
          connectionId: globalThis.crypto.randomUUID(),
          secrets: {
            actionSigning: Redacted.make("as_" + "1".repeat(40)),
            completion: Redacted.make("cs_" + "2".repeat(40))
          }
        }
        yield* connect("https://customer.example/accord", as)
        return as.workspaceId
      })
      const tagOf = <A, E extends { readonly _tag: string }>(result: Either.Either<A, E>) =>
        Either.match(result, { onLeft: (e) => e._tag, onRight: () => "succeeded" })
      const claimOf = (workspaceId: string, idempotencyKey: string) =>
        Effect.flatMap(ActionLedger, (l) => l.findIntakeKey({ workspaceId, idempotencyKey, liveSince: 0 }))

      it.effect("the same key with the same body answers the original action; member order does not matter", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const first = yield* intake(workspaceId, intakeInput(), { idempotencyKey: "order-1" })
          assert.deepStrictEqual(first, {
            actionRequestId: first.actionRequestId,
            state: "dispatching",
            replayed: false
          })
          const { accountId, action, actor, binding } = intakeInput()
          const again = yield* intake(workspaceId, { binding, actor, action, accountId }, { idempotencyKey: "order-1" })
          assert.deepStrictEqual(again, {
            actionRequestId: first.actionRequestId,
            state: "dispatching",
            replayed: true
          })
          // Without a key, or with another key, each intake is a new action.
          const other = yield* intake(workspaceId, intakeInput(), { idempotencyKey: "order-2" })
          const unkeyed = yield* intake(workspaceId, intakeInput())
          assert.strictEqual(new Set([first.actionRequestId, other.actionRequestId, unkeyed.actionRequestId]).size, 3)
          assert.isFalse(unkeyed.replayed)
        })
      )

      it.effect("the same key with another body is IdempotencyKeyReused, and the claim is unchanged", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const first = yield* intake(workspaceId, intakeInput(), { idempotencyKey: "order-3" })
          const claim = yield* claimOf(workspaceId, "order-3")
          const reused = yield* Effect.either(
            intake(workspaceId, intakeInput("acct_other"), { idempotencyKey: "order-3" })
          )
          assert.strictEqual(tagOf(reused), "IdempotencyKeyReused")
          assert.deepStrictEqual(yield* claimOf(workspaceId, "order-3"), claim)
          assert.strictEqual(Option.getOrThrow(claim).actionRequestId, first.actionRequestId)
        })
      )

      it.effect("a malformed key is InvalidIdempotencyKey and nothing is stored", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          for (const key of ["", "a b", "x".repeat(256), "clé"]) {
            assert.strictEqual(
              tagOf(yield* Effect.either(intake(workspaceId, intakeInput(), { idempotencyKey: key }))),
              "InvalidIdempotencyKey"
            )
            assert.isTrue(Option.isNone(yield* claimOf(workspaceId, key)))
          }
        })
      )

      it.effect("a refused intake stores nothing under the key: a retry after fixing it succeeds", () =>
        Effect.gen(function* () {
          // connector_not_active, then the connection is activated.
          const as = {
            workspaceId: globalThis.crypto.randomUUID(),
            connectionId: globalThis.crypto.randomUUID(),
            secrets: {
              actionSigning: Redacted.make("as_" + "3".repeat(40)),
              completion: Redacted.make("cs_" + "4".repeat(40))
            }
          }
          const inactive = yield* Effect.either(intake(as.workspaceId, intakeInput(), { idempotencyKey: "order-4" }))
          assert.strictEqual(tagOf(inactive), "ConnectorNotActive")
          assert.isTrue(Option.isNone(yield* claimOf(as.workspaceId, "order-4")))
          yield* connect("https://customer.example/accord", as)
          const retried = yield* intake(as.workspaceId, intakeInput(), { idempotencyKey: "order-4" })
          assert.isFalse(retried.replayed)
          // payment_mode_not_enabled, then the caller sends another action under the same key.
          const workspaceId = yield* freshWorkspace
          const refused = yield* Effect.either(intake(workspaceId, paymentIntakeInput(), { idempotencyKey: "order-5" }))
          assert.strictEqual(tagOf(refused), "PaymentModeNotEnabled")
          assert.isTrue(Option.isNone(yield* claimOf(workspaceId, "order-5")))
          assert.isFalse((yield* intake(workspaceId, intakeInput(), { idempotencyKey: "order-5" })).replayed)
          // A payment snapshot that does not fit its action.
          const { payment: _payment, ...mismatched } = paymentIntakeInput() as ActionIntake & {
            readonly payment?: unknown
          }
          const mismatch = yield* Effect.either(intake(workspaceId, mismatched, { idempotencyKey: "order-6" }))
          assert.strictEqual(tagOf(mismatch), "PaymentSnapshotMismatch")
          assert.isTrue(Option.isNone(yield* claimOf(workspaceId, "order-6")))
        })
      )

      it.effect("a key is kept 24 hours: replayed just before, a new action just after", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const first = yield* intake(workspaceId, intakeInput(), { idempotencyKey: "order-7" })
          yield* TestClock.adjust(intakeKeyRetentionMillis)
          assert.deepStrictEqual(yield* intake(workspaceId, intakeInput(), { idempotencyKey: "order-7" }), {
            ...first,
            replayed: true
          })
          yield* TestClock.adjust(1)
          const later = yield* intake(workspaceId, intakeInput("acct_other"), { idempotencyKey: "order-7" })
          assert.isFalse(later.replayed)
          assert.notStrictEqual(later.actionRequestId, first.actionRequestId)
        })
      )

      it.effect(
        "50 concurrent intakes under one key create one action; every answer carries its id",
        () =>
          Effect.gen(function* () {
            const workspaceId = yield* freshWorkspace
            const answers = yield* Effect.all(
              Array.from({ length: 50 }, () => intake(workspaceId, intakeInput(), { idempotencyKey: "order-8" })),
              { concurrency: "unbounded" }
            )
            const ids = new Set(answers.map((a) => a.actionRequestId))
            assert.strictEqual(ids.size, 1)
            assert.strictEqual(answers.filter((a) => !a.replayed).length, 1)
            // Exactly one action of this workspace has dispatch work.
            const leased = yield* Effect.flatMap(ActionLedger, (l) =>
              l.leaseWithActions({
                owner: "probe",
                now: 4_102_444_800_000,
                leaseMillis: 1,
                limit: 10_000,
                kinds: [dispatchOutboxKind]
              })
            )
            const ours = leased.filter((l) => Option.isSome(l.action) && l.action.value.workspaceId === workspaceId)
            assert.deepStrictEqual(
              ours.map((l) => Option.getOrThrow(l.action).actionRequestId),
              [...ids]
            )
          }),
        { timeout: 60_000 }
      )
    })
  })
}
