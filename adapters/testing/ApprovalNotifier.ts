/**
 * The contract every `ApprovalNotifier` satisfies: a notice is accepted; `collect` never answers a
 * token for an approval it was not notified of, nor another approval's token. A notifier that holds
 * tokens for pickup (the server's default, `TokenPickup`) answers the notified token exactly once,
 * to one of any number of concurrent collectors; one that delivers tokens elsewhere (mail, an in-app
 * inbox) answers `None` always.
 */
import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { type ApprovalNotice, ApprovalNotifier } from "../../core/ports/ApprovalNotifier.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

/** How the notifier under test delivers tokens, which decides the checks the suite runs. */
export interface ApprovalNotifierSuiteOptions {
  /** Whether the notifier keeps tokens for `collect` (pickup), or delivers them elsewhere. */
  readonly holdsTokens: boolean
}

const notice = (approvalId: string, token: string): ApprovalNotice => ({
  workspaceId: uid("ws-"),
  accountId: "acct_42",
  approvalId,
  requesterRole: "member",
  expiresAt: 86_400_000,
  approvalToken: Redacted.make(token)
})

const tokenOf = (collected: Option.Option<Redacted.Redacted<string>>): string | undefined =>
  Option.match(collected, { onNone: () => undefined, onSome: Redacted.value })

/** The `ApprovalNotifier` contract against `layer()`, one notifier for the whole suite. */
export const suite = (
  name: string,
  layer: () => Layer.Layer<ApprovalNotifier, unknown>,
  options: ApprovalNotifierSuiteOptions
): void => {
  describe(`ApprovalNotifier contract (${name})`, () => {
    onOneStore(layer, (it) => {
      it.effect("an approval never notified: collect answers None", () =>
        Effect.gen(function* () {
          const notifier = yield* ApprovalNotifier
          assert.isTrue(Option.isNone(yield* notifier.collect(uid("apr-"))))
        })
      )

      it.effect(
        options.holdsTokens
          ? "the notified token is collected once, then None"
          : "a notice is accepted; collect answers None (the token went elsewhere)",
        () =>
          Effect.gen(function* () {
            const notifier = yield* ApprovalNotifier
            const approvalId = uid("apr-")
            const token = uid("tok-")
            yield* notifier.notify(notice(approvalId, token))
            assert.strictEqual(tokenOf(yield* notifier.collect(approvalId)), options.holdsTokens ? token : undefined)
            assert.isTrue(Option.isNone(yield* notifier.collect(approvalId)))
          })
      )

      it.effect("each approval's token is its own", () =>
        Effect.gen(function* () {
          const notifier = yield* ApprovalNotifier
          const [a, b] = [uid("apr-"), uid("apr-")]
          const [tokenA, tokenB] = [uid("tok-"), uid("tok-")]
          yield* notifier.notify(notice(a, tokenA))
          yield* notifier.notify(notice(b, tokenB))
          assert.strictEqual(tokenOf(yield* notifier.collect(b)), options.holdsTokens ? tokenB : undefined)
          assert.strictEqual(tokenOf(yield* notifier.collect(a)), options.holdsTokens ? tokenA : undefined)
        })
      )

      it.effect("concurrent collects: at most one collector gets the token", () =>
        Effect.gen(function* () {
          const notifier = yield* ApprovalNotifier
          const approvalId = uid("apr-")
          const token = uid("tok-")
          yield* notifier.notify(notice(approvalId, token))
          const collected = yield* Effect.all(
            Array.from({ length: 8 }, () => notifier.collect(approvalId)),
            { concurrency: "unbounded" }
          )
          const tokens = collected.map(tokenOf).filter((value) => value !== undefined)
          assert.deepStrictEqual(tokens, options.holdsTokens ? [token] : [])
        })
      )
    })
  })
}
