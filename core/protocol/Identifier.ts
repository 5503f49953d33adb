/**
 * The one identifier rule: an identifier that is stored, compared and shown (an event's
 * `account_id`, `user_id` and `event_id`, the `accountId` of an execution request and of its
 * completion evidence, an admin path parameter) holds no character that makes two identifiers
 * look alike or cannot be stored: DAI "Validation" ("`account_id` is the stable id of the customer
 * account", compared byte for byte) and CAC "Request fields" (`accountId`, "an opaque bounded
 * string"). Refused: C0 and C1 control characters, bidi controls (U+061C, U+200E/U+200F,
 * U+202A–U+202E, U+2066–U+2069), zero-width characters (U+200B–U+200D, U+2060, U+FEFF) and unpaired
 * surrogates. One rule for intake and ingest, so an account accepted at intake is never refused
 * later when its events arrive.
 */
import * as Schema from "effect/Schema"
import { isStorableText } from "./Text.ts"

/** Control (C0, DEL, C1), bidi and zero-width characters; unpaired surrogates are `Text.ts`'s rule. */
const forbidden = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/

/**
 * Whether `s` holds no forbidden character (control, bidi, zero-width, unpaired surrogate).
 * Length bounds are the caller's (each field has its own).
 */
export const isSafeIdentifier = (s: string): boolean => !forbidden.test(s) && isStorableText(s)

/**
 * The fixed wording of a refused identifier; never the value.
 */
export const unsafeIdentifierMessage = "must not hold control, bidi, zero-width or unpaired surrogate characters"

/**
 * An identifier of `min` to `max` characters that {@link isSafeIdentifier} accepts.
 */
export const Identifier = (min: number, max: number): Schema.filter<Schema.filter<typeof Schema.String>> =>
  Schema.String.pipe(
    Schema.minLength(min),
    Schema.maxLength(max),
    Schema.filter((s) => isSafeIdentifier(s) || unsafeIdentifierMessage)
  )
