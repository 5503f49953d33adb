/**
 * The payment continuation (spec "Payment continuation object"): what the embedded runtime needs to
 * mount the provider's payment element for an accepted Payment action.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { parseTimestamp } from "../Timestamp.ts"
import { BoundedString, ExactStruct, Timestamp } from "./Common.ts"

/**
 * "At most one hour after the service receives the acknowledgement."
 */
export const continuationWindowMillis = 3_600_000

/**
 * `expiresAt`: "in the future and at most one hour after the service receives the acknowledgement".
 * Receipt is the moment of decoding, read from Effect's `Clock` (so `TestClock` controls it); the
 * check therefore needs the Effect form of decoding (`Schema.decodeUnknown`).
 */
export const ContinuationExpiresAt: Schema.filterEffect<typeof Timestamp, never> = Timestamp.pipe(
  Schema.filterEffect((expiresAt) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      // `Timestamp` has already accepted the string, so it parses.
      const at = parseTimestamp(expiresAt)!
      if (at <= now) return "a time in the future"
      if (at > now + continuationWindowMillis) return "at most one hour from now"
      return true
    })
  )
)

/**
 * `intent`: "`payment` (client secret of a payment intent) or `setup` (client secret of a setup
 * intent)".
 */
export const ContinuationIntent: Schema.Literal<["payment", "setup"]> = Schema.Literal("payment", "setup")

/**
 * The payment continuation object. `allowRedirects` "must be `never`"; `connectedAccountId` is "a
 * string, or `null` for platform-owned intents".
 */
export const PaymentContinuation = ExactStruct({
  kind: Schema.Literal("provider_payment_element"),
  intent: ContinuationIntent,
  clientSecret: BoundedString(1, 512),
  publishableKey: BoundedString(1, 256),
  connectedAccountId: Schema.NullOr(BoundedString(1, 256)),
  expiresAt: ContinuationExpiresAt,
  allowRedirects: Schema.Literal("never")
}).annotations({ identifier: "PaymentContinuation" })

/** {@inheritDoc PaymentContinuation:var} */
export interface PaymentContinuation extends Schema.Schema.Type<typeof PaymentContinuation> {}
