/**
 * The provider idempotency key (spec "Execution request body", DESIGN D3).
 *
 * `pva_` + lowercase hex SHA-256 of `customer-action-idempotency-v1\n{workspaceId}\n{actionRequestId}`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Crypto, type CryptoService } from "../ports/Crypto.ts"

/**
 * @since 0.1.0
 */
export const deriveProviderIdempotencyKey = (
  workspaceId: string,
  actionRequestId: string
): Effect.Effect<string, never, Crypto> =>
  Effect.flatMap(Crypto, (crypto) => deriveProviderIdempotencyKeyWith(crypto, workspaceId, actionRequestId))

/**
 * {@link deriveProviderIdempotencyKey} with the given `Crypto`, for a caller that holds it.
 *
 * @since 0.1.0
 */
export const deriveProviderIdempotencyKeyWith = (crypto: CryptoService, workspaceId: string, actionRequestId: string): Effect.Effect<string> =>
  Effect.map(crypto.sha256Hex(idempotencyKeyInput(workspaceId, actionRequestId)), (digest) => "pva_" + digest)

/**
 * The same with a synchronous SHA-256 (`Crypto.unsafeSha256HexSync`), for a hot path.
 *
 * @since 0.1.0
 */
export const deriveProviderIdempotencyKeySync = (sha256HexSync: (data: string) => string, workspaceId: string, actionRequestId: string): string =>
  "pva_" + sha256HexSync(idempotencyKeyInput(workspaceId, actionRequestId))

const idempotencyKeyInput = (workspaceId: string, actionRequestId: string) => `customer-action-idempotency-v1\n${workspaceId}\n${actionRequestId}`

/**
 * The idempotency header, the body's `providerIdempotencyKey` and the key derived locally from the
 * body's workspace and action request are not all equal.
 *
 * @since 0.1.0
 */
export class IdempotencyKeyMismatch extends Schema.TaggedError<IdempotencyKeyMismatch>()("IdempotencyKeyMismatch", {
  mismatch: Schema.Literal("missing_header", "header_differs_from_body", "body_differs_from_derived")
}) {
  override get message(): string {
    return `idempotency key check failed: ${this.mismatch.replaceAll("_", " ")}`
  }
}

/**
 * "The idempotency header, body `providerIdempotencyKey` and the locally derived key must be equal."
 *
 * @since 0.1.0
 */
export const checkIdempotencyKey = (options: {
  readonly header: string | undefined
  readonly body: { readonly workspaceId: string; readonly actionRequestId: string; readonly providerIdempotencyKey: string }
}): Effect.Effect<string, IdempotencyKeyMismatch, Crypto> => Effect.flatMap(Crypto, (crypto) => checkIdempotencyKeyWith(crypto, options))

/**
 * {@link checkIdempotencyKey} with the given `Crypto` service, for a caller that holds it (the
 * customer kit's claim): providing it per call copies the fiber's whole context each time.
 *
 * @since 0.1.0
 */
export const checkIdempotencyKeyWith = (crypto: CryptoService, options: {
  readonly header: string | undefined
  readonly body: { readonly workspaceId: string; readonly actionRequestId: string; readonly providerIdempotencyKey: string }
}): Effect.Effect<string, IdempotencyKeyMismatch> => {
  const sha256HexSync = crypto.unsafeSha256HexSync
  if (sha256HexSync === undefined) return checkIdempotencyKeyAsync(crypto, options)
  return Effect.suspend(() => {
    const checked = checkIdempotencyKeySync(sha256HexSync, options)
    return typeof checked === "string" ? Effect.succeed(checked) : Effect.fail(checked)
  })
}

/**
 * {@link checkIdempotencyKeyWith} with a synchronous SHA-256: the key, or the mismatch (the same checks in the same order).
 *
 * @since 0.1.0
 */
export const checkIdempotencyKeySync = (sha256HexSync: (data: string) => string, options: {
  readonly header: string | undefined
  readonly body: { readonly workspaceId: string; readonly actionRequestId: string; readonly providerIdempotencyKey: string }
}): string | IdempotencyKeyMismatch => {
  const { body, header } = options
  if (header === undefined) return new IdempotencyKeyMismatch({ mismatch: "missing_header" })
  if (header !== body.providerIdempotencyKey) return new IdempotencyKeyMismatch({ mismatch: "header_differs_from_body" })
  const derived = deriveProviderIdempotencyKeySync(sha256HexSync, body.workspaceId, body.actionRequestId)
  if (derived !== body.providerIdempotencyKey) return new IdempotencyKeyMismatch({ mismatch: "body_differs_from_derived" })
  return derived
}

const checkIdempotencyKeyAsync = (crypto: CryptoService, options: {
  readonly header: string | undefined
  readonly body: { readonly workspaceId: string; readonly actionRequestId: string; readonly providerIdempotencyKey: string }
}): Effect.Effect<string, IdempotencyKeyMismatch> =>
  Effect.gen(function*() {
    const { body, header } = options
    if (header === undefined) return yield* new IdempotencyKeyMismatch({ mismatch: "missing_header" })
    if (header !== body.providerIdempotencyKey) {
      return yield* new IdempotencyKeyMismatch({ mismatch: "header_differs_from_body" })
    }
    const derived = yield* deriveProviderIdempotencyKeyWith(crypto, body.workspaceId, body.actionRequestId)
    if (derived !== body.providerIdempotencyKey) {
      return yield* new IdempotencyKeyMismatch({ mismatch: "body_differs_from_derived" })
    }
    return derived
  })
