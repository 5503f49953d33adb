/**
 * The provider account watch (`core/customer/ProviderAccount.ts`) on the test clock: reads again
 * with backoff until the account answers, then every refresh; a proven account that stops
 * answering is unproven; another account invalidates the old one; each change reported once.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { PaymentProviderError } from "../../../core/customer/PaymentProvider.ts"
import { makeProviderAccountWatch, type ProviderAccountState } from "../../../core/customer/ProviderAccount.ts"

/** A provider whose account read answers from `answers` in turn (the last one repeats). */
const scripted = (answers: ReadonlyArray<string | "down" | "refused">) => {
  let calls = 0
  const read = Effect.suspend(() => {
    const answer = answers[Math.min(calls++, answers.length - 1)]!
    return answer === "down" || answer === "refused"
      ? Effect.fail(
          new PaymentProviderError({
            operation: "retrieve_account",
            reason: answer === "down" ? "unavailable" : "refused",
            code: null
          })
        )
      : Effect.succeed({ id: answer })
  })
  return { read, calls: () => calls }
}

const watch = (answers: ReadonlyArray<string | "down" | "refused">) =>
  Effect.gen(function* () {
    const provider = scripted(answers)
    const changes: Array<ProviderAccountState> = []
    const w = yield* makeProviderAccountWatch({
      read: provider.read,
      retry: { baseMillis: 1_000, capMillis: 4_000 },
      refreshMillis: 60_000,
      onChange: (state) => Effect.sync(() => void changes.push(state))
    })
    return { w, provider, changes }
  })

describe("ProviderAccount", () => {
  it.effect("unreadable at start: unproven, read again with backoff until it answers, then proven", () =>
    Effect.gen(function* () {
      const { changes, provider, w } = yield* watch(["down", "down", "down", "acct_1"])
      assert.strictEqual((yield* w.readOnce)._tag, "Unavailable")
      assert.isTrue(Option.isNone(yield* w.current))
      const fiber = yield* Effect.fork(w.run)
      // Backoff ceilings 1 s, 2 s, 4 s: within 7 s all three retries ran.
      yield* TestClock.adjust("7 seconds")
      assert.strictEqual(provider.calls(), 4)
      assert.deepStrictEqual(yield* w.current, Option.some("acct_1"))
      // One report per change of state: unavailable once, however many failed reads, then proven.
      assert.deepStrictEqual(
        changes.map((c) => c._tag),
        ["Unavailable", "Proven"]
      )
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect("proven: read again every refresh; an outage unproves it until it answers", () =>
    Effect.gen(function* () {
      const { changes, provider, w } = yield* watch(["acct_1", "down", "acct_1"])
      yield* w.readOnce
      const fiber = yield* Effect.fork(w.run)
      yield* TestClock.adjust("59 seconds")
      assert.strictEqual(provider.calls(), 1)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(provider.calls(), 2)
      assert.isTrue(Option.isNone(yield* w.current))
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* w.current, Option.some("acct_1"))
      assert.deepStrictEqual(
        changes.map((c) => c._tag),
        ["Proven", "Unavailable", "Proven"]
      )
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect("another account read: the new one is proven, naming the previous one", () =>
    Effect.gen(function* () {
      const { changes, w } = yield* watch(["acct_1", "acct_2"])
      yield* w.readOnce
      yield* w.readOnce
      assert.deepStrictEqual(yield* w.current, Option.some("acct_2"))
      assert.deepInclude(changes[1] as unknown as Record<string, unknown>, {
        _tag: "Proven",
        accountId: "acct_2",
        previousAccountId: "acct_1"
      })
    })
  )

  it.effect("a refused key is unavailable too, with its reason", () =>
    Effect.gen(function* () {
      const { w } = yield* watch(["refused"])
      assert.deepInclude((yield* w.readOnce) as unknown as Record<string, unknown>, {
        _tag: "Unavailable",
        reason: "refused"
      })
    })
  )
})
