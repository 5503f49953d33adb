/**
 * `accord/protocol`: the signed message protocol both sides speak (spec "Authentication": "Every
 * request and response in this contract is signed"): signing, verification, timestamps, nonces,
 * idempotency keys, digests, the stored-secret cipher and the message schemas, one namespace per
 * module.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * as Signing from "../core/protocol/Signing.ts"
export * as Verification from "../core/protocol/Verification.ts"
export * as Timestamp from "../core/protocol/Timestamp.ts"
export * as Idempotency from "../core/protocol/Idempotency.ts"
export * as Digest from "../core/protocol/Digest.ts"
export * as Cipher from "../core/protocol/Cipher.ts"
export * as Json from "../core/protocol/Json.ts"
export * as Uuid from "../core/protocol/Uuid.ts"
export * as Backoff from "../core/protocol/Backoff.ts"
export * as NotFound from "../core/protocol/NotFound.ts"
export * as OperationFamily from "../core/protocol/OperationFamily.ts"

export * as Acknowledgement from "../core/protocol/messages/Acknowledgement.ts"
export * as Approval from "../core/protocol/messages/Approval.ts"
export * as CatalogDocument from "../core/protocol/messages/Catalog.ts"
export * as Common from "../core/protocol/messages/Common.ts"
export * as Completion from "../core/protocol/messages/Completion.ts"
export * as Continuation from "../core/protocol/messages/Continuation.ts"
export * as Execution from "../core/protocol/messages/Execution.ts"
export * as Handshake from "../core/protocol/messages/Handshake.ts"
export * as Message from "../core/protocol/messages/Message.ts"
export * as Reconciliation from "../core/protocol/messages/Reconciliation.ts"
