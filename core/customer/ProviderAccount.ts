/**
 * The payment provider account behind the host's credentials, watched for as long as the kit runs
 * (spec "Payment capability evidence lifecycle", "Installation checks" 1): the account the payment
 * capability proof names, and whether Payment executions can be performed at all.
 *
 * - **Until it answers.** A read that fails (the provider unreachable, the key refused) leaves the
 *   account unproven and is tried again with backoff (`retry`, attempt by attempt, capped), never
 *   given up: a provider outage at start costs payments for the outage, not until a restart.
 * - **Periodically after.** Once proven, the account is read again every `refreshMillis`, so a key
 *   moved to another account, or revoked, is noticed without a restart.
 * - **What it gates.** While no account is proven the handshake carries no capability proof (a
 *   generic acknowledgement enables no Payment modes) and a Payment execution answers 503 and claims
 *   nothing, so the service retries it (`Payments.ts`). A proven account that stops answering is
 *   unproven again until it answers. A read that names another account than the proven one
 *   invalidates the proof of the old one ("Change of either connection (connector or provider):
 *   the proof is invalidated"): from then on the handshake names the new account only.
 *
 * Every change of state is reported once through `onChange` (the host's log: what is degraded and
 * that it retries), never with a key or a message from the provider.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { type Backoff, randomBackoffDelay } from "../protocol/Backoff.ts"
import type { PaymentProviderError } from "./PaymentProvider.ts"

/**
 * Where the account stands: never read yet, proven (the account's id), or unavailable (the last
 * read failed, with its reason and code; `accountId` the account proven before, if any).
 */
export type ProviderAccountState =
  | { readonly _tag: "Unread" }
  | { readonly _tag: "Proven"; readonly accountId: string; readonly previousAccountId: string | null }
  | {
      readonly _tag: "Unavailable"
      readonly reason: PaymentProviderError["reason"]
      readonly code: string | null
      readonly attempts: number
      readonly retryInMillis: number
    }

/** How the kit proves its provider account: the read, and the retry and refresh timing. */
export interface ProviderAccountSettings {
  /** One read of the account behind the credentials (Stripe: `GET /v1/account`). */
  readonly read: Effect.Effect<{ readonly id: string }, PaymentProviderError>
  /** Delays between failed reads (default 1 s doubling to 60 s). */
  readonly retry?: Backoff
  /** How often a proven account is read again (default 5 minutes). */
  readonly refreshMillis?: number
  /** Told each change of state: proven, another account, unavailable (once per outage). */
  readonly onChange?: (state: ProviderAccountState) => Effect.Effect<void>
}

/** The provider account as last proven, kept fresh in the background. */
export interface ProviderAccountWatch {
  /** The proven account now; `None` while unread or unavailable. */
  readonly current: Effect.Effect<Option.Option<string>>
  readonly state: Effect.Effect<ProviderAccountState>
  /** One read now, its result recorded (the watch's first read; tests). */
  readonly readOnce: Effect.Effect<ProviderAccountState>
  /** The watch: reads with backoff until the account answers, then every `refreshMillis`; never ends. */
  readonly run: Effect.Effect<never>
}

/** Retry timing of an unavailable provider account read: from 1 s, doubling up to 60 s. */
export const defaultAccountRetry: Backoff = { baseMillis: 1_000, capMillis: 60_000 }
/** How often a proven provider account is read again: every 5 minutes. */
export const defaultAccountRefreshMillis = 5 * 60_000

/**
 * Builds the watch; nothing is read until `readOnce` or `run`.
 */
export const makeProviderAccountWatch = (settings: ProviderAccountSettings): Effect.Effect<ProviderAccountWatch> =>
  Effect.gen(function* () {
    const retry = settings.retry ?? defaultAccountRetry
    const refreshMillis = settings.refreshMillis ?? defaultAccountRefreshMillis
    const stateRef = yield* Ref.make<ProviderAccountState>({ _tag: "Unread" })
    const failures = yield* Ref.make(0)
    const lastProven = yield* Ref.make<string | null>(null)

    const report = (next: ProviderAccountState, changed: boolean) =>
      changed && settings.onChange !== undefined ? settings.onChange(next) : Effect.void

    const readOnce: Effect.Effect<ProviderAccountState> = Effect.gen(function* () {
      const before = yield* Ref.get(stateRef)
      const read = yield* Effect.either(settings.read)
      if (read._tag === "Right" && read.right.id !== "") {
        yield* Ref.set(failures, 0)
        const previous = yield* Ref.get(lastProven)
        const next: ProviderAccountState = {
          _tag: "Proven",
          accountId: read.right.id,
          previousAccountId: previous !== null && previous !== read.right.id ? previous : null
        }
        yield* Ref.set(lastProven, read.right.id)
        yield* Ref.set(stateRef, next)
        yield* report(next, before._tag !== "Proven" || before.accountId !== read.right.id)
        return next
      }
      const attempts = yield* Ref.updateAndGet(failures, (n) => n + 1)
      const retryInMillis = yield* randomBackoffDelay(retry, attempts - 1)
      const next: ProviderAccountState =
        read._tag === "Left"
          ? { _tag: "Unavailable", reason: read.left.reason, code: read.left.code, attempts, retryInMillis }
          : { _tag: "Unavailable", reason: "refused", code: "no_account_id", attempts, retryInMillis }
      yield* Ref.set(stateRef, next)
      yield* report(next, before._tag !== "Unavailable")
      return next
    })

    const delayAfter = (state: ProviderAccountState) =>
      state._tag === "Unavailable" ? state.retryInMillis : state._tag === "Proven" ? refreshMillis : 0
    // A first read already made (at start) is not repeated at once: the watch waits its delay first.
    const run: Effect.Effect<never> = Effect.flatMap(Ref.get(stateRef), (initial) =>
      Effect.iterate(initial, {
        while: () => true,
        body: (state) => Effect.zipRight(Effect.sleep(delayAfter(state)), readOnce)
      })
    ).pipe(Effect.zipRight(Effect.never))

    return {
      current: Effect.map(Ref.get(stateRef), (state) =>
        state._tag === "Proven" ? Option.some(state.accountId) : Option.none()
      ),
      state: Ref.get(stateRef),
      readOnce,
      run
    }
  })
