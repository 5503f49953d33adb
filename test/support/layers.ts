/**
 * The two `Crypto` layers every crypto-dependent test runs against.
 */
import type * as Layer from "effect/Layer"
import * as NodeCrypto from "../../adapters/crypto/NodeCrypto.ts"
import * as WebCrypto from "../../adapters/crypto/WebCrypto.ts"
import type { Crypto } from "../../core/ports/Crypto.ts"

export const cryptoLayers: ReadonlyArray<readonly [string, Layer.Layer<Crypto>]> = [
  ["WebCrypto", WebCrypto.layer],
  ["node:crypto", NodeCrypto.layer]
]
