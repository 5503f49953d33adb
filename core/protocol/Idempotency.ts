/**
 * The provider idempotency key (spec "Execution request body"; lowercase hex SHA-256 over UTF-8,
 * docs/decisions.md "Hex digests").
 *
 * `pva_` + lowercase hex SHA-256 of `customer-action-idempotency-v1\n{workspaceId}\n{actionRequestId}`.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Crypto, type CryptoService, CryptoSync, type CryptoSyncService } from "../ports/Crypto.ts"

/**
 * The action's provider idempotency key: `pva_` and the hex SHA-256 of the workspace and action
 * request ids.
 */
export const deriveProviderIdempotencyKey = (
  workspaceId: string,
  actionRequestId: string
): Effect.Effect<string, never, Crypto> =>
  Effect.flatMap(Crypto, (crypto) => deriveProviderIdempotencyKeyWith(crypto, workspaceId, actionRequestId))

/**
 * {@link deriveProviderIdempotencyKey} with the given `Crypto`, for a caller that holds it.
 */
export const deriveProviderIdempotencyKeyWith = (
  crypto: CryptoService,
  workspaceId: string,
  actionRequestId: string
): Effect.Effect<string> =>
  Effect.map(crypto.sha256Hex(idempotencyKeyInput(workspaceId, actionRequestId)), (digest) => "pva_" + digest)

/**
 * The same with a synchronous SHA-256 (`CryptoSync.sha256Hex`), for a hot path.
 */
export const deriveProviderIdempotencyKeySync = (
  sha256HexSync: (data: string) => string,
  workspaceId: string,
  actionRequestId: string
): string => "pva_" + sha256HexSync(idempotencyKeyInput(workspaceId, actionRequestId))

const idempotencyKeyInput = (workspaceId: string, actionRequestId: string) =>
  `customer-action-idempotency-v1\n${workspaceId}\n${actionRequestId}`

/**
 * The idempotency header, the body's `providerIdempotencyKey` and the key derived locally from the
 * body's workspace and action request are not all equal.
 */
export class IdempotencyKeyMismatch extends Schema.TaggedError<IdempotencyKeyMismatch>()("IdempotencyKeyMismatch", {
  mismatch: Schema.Literal("missing_header", "header_differs_from_body", "body_differs_from_derived")
}) {
  override get message(): string {
    return `idempotency key check failed: ${this.mismatch.replaceAll("_", " ")}`
  }
}

/**
 * What the customer-side key check compares: the idempotency header and the body's bindings.
 */
export interface IdempotencyKeyCheck {
  readonly header: string | undefined
  readonly body: {
    readonly workspaceId: string
    readonly actionRequestId: string
    readonly providerIdempotencyKey: string
  }
}

/**
 * "The idempotency header, body `providerIdempotencyKey` and the locally derived key must be equal."
 */
export const checkIdempotencyKey = (
  options: IdempotencyKeyCheck
): Effect.Effect<string, IdempotencyKeyMismatch, Crypto> =>
  Effect.flatMap(Crypto, (crypto) =>
    Effect.flatMap(Effect.serviceOption(CryptoSync), (sync) =>
      checkIdempotencyKeyWith(crypto, Option.getOrUndefined(sync), options)
    )
  )

/** The header against the body, checked before anything is hashed. */
const headerMismatch = ({ body, header }: IdempotencyKeyCheck): IdempotencyKeyMismatch | undefined =>
  header === undefined
    ? new IdempotencyKeyMismatch({ mismatch: "missing_header" })
    : header !== body.providerIdempotencyKey
      ? new IdempotencyKeyMismatch({ mismatch: "header_differs_from_body" })
      : undefined

/** The derived key against the body: the key, or the mismatch. */
const derivedAgainst = (derived: string, { body }: IdempotencyKeyCheck): string | IdempotencyKeyMismatch =>
  derived === body.providerIdempotencyKey
    ? derived
    : new IdempotencyKeyMismatch({ mismatch: "body_differs_from_derived" })

const toEffect = (checked: string | IdempotencyKeyMismatch): Effect.Effect<string, IdempotencyKeyMismatch> =>
  typeof checked === "string" ? Effect.succeed(checked) : Effect.fail(checked)

/**
 * {@link checkIdempotencyKey} with the given `Crypto` service, for a caller that holds it (the
 * customer kit's claim): providing it per call copies the fiber's whole context each time. With a
 * synchronous SHA-256 it is {@link checkIdempotencyKeySync} in one step.
 */
export const checkIdempotencyKeyWith = (
  crypto: CryptoService,
  sync: CryptoSyncService | undefined,
  options: IdempotencyKeyCheck
): Effect.Effect<string, IdempotencyKeyMismatch> => {
  if (sync !== undefined) return Effect.suspend(() => toEffect(checkIdempotencyKeySync(sync.sha256Hex, options)))
  return Effect.suspend(() => {
    const mismatch = headerMismatch(options)
    if (mismatch !== undefined) return Effect.fail(mismatch)
    return Effect.flatMap(
      deriveProviderIdempotencyKeyWith(crypto, options.body.workspaceId, options.body.actionRequestId),
      (derived) => toEffect(derivedAgainst(derived, options))
    )
  })
}

/**
 * {@link checkIdempotencyKeyWith} with a synchronous SHA-256: the key, or the mismatch (the same checks in the same order).
 */
export const checkIdempotencyKeySync = (
  sha256HexSync: (data: string) => string,
  options: IdempotencyKeyCheck
): string | IdempotencyKeyMismatch =>
  headerMismatch(options) ??
  derivedAgainst(
    deriveProviderIdempotencyKeySync(sha256HexSync, options.body.workspaceId, options.body.actionRequestId),
    options
  )
