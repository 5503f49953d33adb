/**
 * The customer endpoint's request, responses and authentication (spec "Authentication";
 * docs/decisions.md "Raw body bytes"): a request is verified over the raw bytes with every configured
 * pair (or the one a handshake names), "and only then is the body decoded with its schema"; answers
 * are signed with the pair that verified the request. Errors become JSON responses that name a code,
 * never received values.
 */
import * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import type * as Schema from "effect/Schema"
import type { StorageError } from "../../ports/StorageError.ts"
import type { NonceClaim } from "../../ports/NonceStore.ts"
import { encodeBody, type Purpose, type Signer, type SigningKeys } from "../../protocol/Signing.ts"
import {
  decodeBodyNow,
  decodeBodyThen,
  type HeaderSource,
  snakeCaseTag,
  type VerificationError,
  type VerifiedHeaders,
  type Verifier
} from "../../protocol/Verification.ts"
import type { MalformedBody } from "../../protocol/Json.ts"
import type { RevisionKeys } from "../Keyring.ts"

export interface CustomerRequest {
  readonly headers: HeaderSource
  /** The raw body bytes as received: the signature covers exactly these. */
  readonly body: Uint8Array
}

/**
 * A request with its body's strict parse (`parseJsonBytes` of the same bytes), taken once by the
 * handler before it knows the purpose; verification still comes first, and only then is the parse
 * used (or its refusal answered).
 */
export interface ParsedRequest extends CustomerRequest {
  readonly parsed?: Either.Either<unknown, MalformedBody>
}

export interface CustomerResponse {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: Uint8Array
}

const jsonHeaders = { "content-type": "application/json" } as const

/**
 * An unsigned JSON error answer.
 */
export const errorResponse = (status: number, body: Record<string, unknown>): CustomerResponse => ({
  status,
  headers: { ...jsonHeaders },
  body: encodeBody(body)
})

/**
 * The answer to a request that failed verification or decoding, or hit a storage failure.
 */
export const verificationResponse = (error: VerificationError | StorageError): CustomerResponse => {
  switch (error._tag) {
    case "InvalidShape":
      return errorResponse(400, { error: "invalid_body", issues: error.issues })
    case "MalformedBody":
      return errorResponse(400, { error: error.reason === "syntax" ? "malformed_body" : error.reason })
    case "StorageError":
      return errorResponse(503, { error: "storage_unavailable" })
    default:
      return errorResponse(401, { error: snakeCaseTag(error._tag) })
  }
}

/**
 * The endpoint's verification and signing, bound to its keyring and nonce space.
 */
export interface EndpointExchange {
  /** Verifies with every configured pair (or only `only`), then decodes; names the pair that verified. */
  readonly verifyAndDecode: <A, I>(
    schema: Schema.Schema<A, I, never>,
    purpose: Purpose,
    input: ParsedRequest,
    only?: RevisionKeys
  ) => Effect.Effect<
    { readonly headers: VerifiedHeaders; readonly body: A; readonly entry: RevisionKeys },
    VerificationError | StorageError
  >
  /**
   * Like `verifyAndDecode` with every configured pair, without recording the nonce: the claim to
   * record is returned (see `Verifier.verifyAnyUnclaimed`), for the statement that acts on the message.
   */
  readonly verifyAndDecodeUnclaimed: <A, I>(
    schema: Schema.Schema<A, I, never>,
    purpose: Purpose,
    input: ParsedRequest
  ) => Effect.Effect<
    { readonly headers: VerifiedHeaders; readonly body: A; readonly entry: RevisionKeys; readonly nonce: NonceClaim },
    VerificationError
  >
  /** A signed JSON answer. */
  readonly signed: (
    keys: SigningKeys,
    status: number,
    purpose: Purpose,
    body: unknown
  ) => Effect.Effect<CustomerResponse>
}

export const makeEndpointExchange = (options: {
  readonly verifier: Verifier
  readonly signer: Signer
  readonly keyring: ReadonlyArray<RevisionKeys>
  readonly nonceScope: string
}): EndpointExchange => {
  const { keyring, nonceScope, signer, verifier } = options
  const candidates = keyring.map((entry) => entry.keys)

  const verifyAndDecode = <A, I>(
    schema: Schema.Schema<A, I, never>,
    purpose: Purpose,
    input: ParsedRequest,
    only?: RevisionKeys
  ) =>
    Effect.gen(function* () {
      const entries = only === undefined ? keyring : [only]
      const { headers, keyIndex } = yield* verifier.verifyAny({
        purpose,
        keys: only === undefined ? candidates : [only.keys],
        headers: input.headers,
        body: input.body,
        nonceScope
      })
      const body = yield* decodeBodyNow(schema, input.body, input.parsed)
      return { headers, body, entry: entries[keyIndex]! }
    })

  // The hot path of every execution request: no generator, and the decode's success taken as it is.
  const verifyAndDecodeUnclaimed = <A, I>(schema: Schema.Schema<A, I, never>, purpose: Purpose, input: ParsedRequest) =>
    Effect.flatMap(
      verifier.verifyAnyUnclaimed({ purpose, keys: candidates, headers: input.headers, body: input.body, nonceScope }),
      ({ headers, keyIndex, nonce }) =>
        decodeBodyThen(schema, input.body, input.parsed, (body) => ({
          headers,
          body,
          entry: keyring[keyIndex]!,
          nonce
        }))
    )

  const signed = (
    keys: SigningKeys,
    status: number,
    purpose: Purpose,
    body: unknown
  ): Effect.Effect<CustomerResponse> => {
    const bytes = encodeBody(body)
    return Effect.map(
      signer.sign({ purpose, keys, body: bytes }),
      (headers): CustomerResponse => ({ status, headers: { ...headers }, body: bytes })
    )
  }

  return { verifyAndDecode, verifyAndDecodeUnclaimed, signed }
}
