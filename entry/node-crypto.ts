/**
 * `accord/node-crypto`: the `Crypto` port on `node:crypto` (fast synchronous HMAC and hashing,
 * `CryptoSync`; Bun and Deno implement `node:crypto` too), and `WebCrypto`, the portable one.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * from "../adapters/crypto/NodeCrypto.ts"
export * as WebCrypto from "../adapters/crypto/WebCrypto.ts"
