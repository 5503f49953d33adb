/**
 * `accord/protocol`: the signed message protocol both sides speak (spec "Authentication": "Every
 * request and response in this contract is signed"): signing, verification, timestamps, nonces,
 * idempotency keys, digests, the stored-secret cipher and the message schemas, one namespace per
 * module.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Signing from "../core/protocol/Signing.ts"
/** @since 0.1.0 */
export * as Verification from "../core/protocol/Verification.ts"
/** @since 0.1.0 */
export * as Timestamp from "../core/protocol/Timestamp.ts"
/** @since 0.1.0 */
export * as Idempotency from "../core/protocol/Idempotency.ts"
/** @since 0.1.0 */
export * as Digest from "../core/protocol/Digest.ts"
/** @since 0.1.0 */
export * as Cipher from "../core/protocol/Cipher.ts"
/** @since 0.1.0 */
export * as Json from "../core/protocol/Json.ts"
/** @since 0.1.0 */
export * as Uuid from "../core/protocol/Uuid.ts"
export * as Backoff from "../core/protocol/Backoff.ts"

/** @since 0.1.0 */
export * as Acknowledgement from "../core/protocol/messages/Acknowledgement.ts"
/** @since 0.1.0 */
export * as Approval from "../core/protocol/messages/Approval.ts"
/** @since 0.1.0 */
export * as Common from "../core/protocol/messages/Common.ts"
/** @since 0.1.0 */
export * as Completion from "../core/protocol/messages/Completion.ts"
/** @since 0.1.0 */
export * as Continuation from "../core/protocol/messages/Continuation.ts"
/** @since 0.1.0 */
export * as Execution from "../core/protocol/messages/Execution.ts"
/** @since 0.1.0 */
export * as Handshake from "../core/protocol/messages/Handshake.ts"
/** @since 0.1.0 */
export * as Message from "../core/protocol/messages/Message.ts"
/** @since 0.1.0 */
export * as Reconciliation from "../core/protocol/messages/Reconciliation.ts"
