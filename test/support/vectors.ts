/**
 * The shared conformance vectors, computed by an independent implementation, read from the in-repo
 * copy `test/fixtures/conformance/vectors.json` (`scripts/check-vectors.mjs` keeps it equal to the
 * shared file).
 */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import type { Purpose, SecretName } from "../../core/protocol/Signing.ts"

export interface SignatureVector {
  readonly name: string
  readonly secret: SecretName
  readonly purpose: Purpose
  readonly timestamp: string
  readonly nonce: string
  readonly rawBody: string
  readonly signature: string
}

export interface RejectVector extends Omit<SignatureVector, "name"> {
  readonly why: string
}

export interface Vectors {
  readonly secrets: { readonly actionSigning: string; readonly completion: string }
  readonly idempotencyKeys: ReadonlyArray<{ workspaceId: string; actionRequestId: string; key: string }>
  readonly connectedAccountReferenceHashes: ReadonlyArray<{
    accountId: string
    jsonSerialization: string
    hash: string
  }>
  readonly signatures: ReadonlyArray<SignatureVector>
  readonly mustReject: ReadonlyArray<RejectVector>
}

export const vectorsPath = fileURLToPath(new URL("../fixtures/conformance/vectors.json", import.meta.url))

export const vectors: Vectors = JSON.parse(readFileSync(vectorsPath, "utf8"))
