/**
 * `accord/node-crypto`: the `Crypto` port on `node:crypto` (fast synchronous HMAC and hashing; Bun
 * and Deno implement `node:crypto` too).
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * from "../adapters/crypto/NodeCrypto.ts"
