/**
 * Field schemas shared by every connector message body.
 */
import * as Schema from "effect/Schema"
import { Identifier } from "../Identifier.ts"
import { parseTimestamp } from "../Timestamp.ts"

/**
 * Decoding options every message body is decoded with: unknown fields are errors (the spec's
 * "exactly this shape" and "an acknowledgement with unknown fields ... is rejected"), and every
 * failing field is reported, not just the first.
 */
export const exactParseOptions = { onExcessProperty: "error", errors: "all" } as const

/**
 * A struct whose unknown fields are errors even when a caller decodes it with default options.
 */
export const ExactStruct = <Fields extends Schema.Struct.Fields>(fields: Fields): Schema.Struct<Fields> =>
  Schema.Struct(fields).annotations({ parseOptions: exactParseOptions })

/**
 * A string with bounded length (the spec's "bounded string").
 */
export const BoundedString = (min: number, max: number): Schema.filter<typeof Schema.String> =>
  Schema.String.pipe(Schema.minLength(min), Schema.maxLength(max))

/**
 * An RFC 3339 timestamp, kept as the exact string that was sent (bodies are echoed verbatim).
 */
export const Timestamp: Schema.filter<typeof Schema.String> = Schema.String.pipe(
  Schema.filter((s) => parseTimestamp(s) !== undefined || "an RFC 3339 timestamp such as 2026-11-22T10:15:30.000Z"),
  Schema.annotations({ identifier: "Timestamp" })
)

/**
 * `protocolVersion`: the integer `1` in every body.
 */
export const ProtocolVersion: Schema.Literal<[1]> = Schema.Literal(1)

/**
 * A nonce as accepted (docs/decisions.md, "Nonce length and retention"): 16 to 160 visible ASCII
 * characters.
 */
export const Nonce: Schema.filter<typeof Schema.String> = Schema.String.pipe(
  Schema.pattern(/^[\x21-\x7e]{16,160}$/),
  Schema.annotations({ identifier: "Nonce", description: "16 to 160 visible ASCII characters" })
)

/**
 * Lowercase hex SHA-256 (docs/decisions.md, "Hex digests"): reference hashes, projection and
 * dependency hashes.
 */
export const Sha256Hex: Schema.filter<typeof Schema.String> = Schema.String.pipe(
  Schema.pattern(/^[0-9a-f]{64}$/),
  Schema.annotations({ identifier: "Sha256Hex" })
)

/**
 * `providerIdempotencyKey`: `pva_` followed by a lowercase hex SHA-256 digest.
 */
export const ProviderIdempotencyKey: Schema.filter<typeof Schema.String> = Schema.String.pipe(
  Schema.pattern(/^pva_[0-9a-f]{64}$/),
  Schema.annotations({ identifier: "ProviderIdempotencyKey" })
)

/**
 * A bounded machine code: `errorCode`, `reasonCode`, evidence `source` and the like.
 * 1 to 64 characters of letters, digits, `_`, `.`, `:` and `-`.
 */
export const Code: Schema.filter<typeof Schema.String> = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9_.:-]{1,64}$/),
  Schema.annotations({ identifier: "Code" })
)

/**
 * The five payment modes a capability proof may list (spec `paymentCapabilities.modes`).
 */
export const PaymentMode = Schema.Literal(
  "existing_subscription_change",
  "new_subscription",
  "one_time_purchase",
  "setup_only",
  "recover_payment"
)

export type PaymentMode = typeof PaymentMode.Type

/**
 * The provider object a payment observation was read from (`intent` of the observation). Here, with
 * the modes, because the operation family table (`../OperationFamily.ts`) names it per mode and the
 * observation's schema reads that table.
 */
export const ObservedIntent: Schema.Literal<["payment", "setup", "subscription"]> = Schema.Literal(
  "payment",
  "setup",
  "subscription"
)

export type ObservedIntent = typeof ObservedIntent.Type

/**
 * A struct that admits further keys described by one index signature (an open operation family,
 * free-form evidence). Keys matching neither a field nor the index signature's key schema are still
 * errors, as in {@link ExactStruct}.
 */
export const ExtensibleStruct = <Fields extends Schema.Struct.Fields, const Index extends Schema.IndexSignature.Record>(
  fields: Fields,
  index: Index
): Schema.TypeLiteral<Fields, readonly [Index]> =>
  Schema.Struct(fields, index).annotations({ parseOptions: exactParseOptions })

/**
 * At most `max` own keys. Applied after decoding, so it counts declared fields and extra keys alike.
 */
export const maxKeys =
  (max: number) =>
  <A extends object>(a: A): true | string =>
    Object.keys(a).length <= max || `at most ${max} keys`

/**
 * A non-negative safe integer: revisions, versions, minor-unit amounts.
 */
export const NonNegativeInt: typeof Schema.NonNegativeInt = Schema.NonNegativeInt

/**
 * `accountId`: "the customer's account identifier", an opaque bounded string.
 */
export const AccountId: Schema.filter<Schema.filter<typeof Schema.String>> = Identifier(1, 256)

/**
 * `providerReference`: the customer's (or its payment provider's) reference for the executed work.
 */
export const ProviderReference: Schema.filter<typeof Schema.String> = BoundedString(1, 256)

/**
 * `action.key` and the review projection's action key.
 */
export const ActionKey: Schema.filter<typeof Schema.String> = BoundedString(1, 128)

/**
 * A display label (`safeTerms.label`, an offer's label): "display strings", bounded.
 */
export const DisplayLabel: Schema.filter<typeof Schema.String> = BoundedString(1, 200)

/**
 * A confirmation sentence shown before the action runs (`safeTerms.confirmation`).
 */
export const DisplayConfirmation: Schema.filter<typeof Schema.String> = BoundedString(1, 500)
