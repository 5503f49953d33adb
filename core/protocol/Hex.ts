/**
 * Lowercase hex, the only text encoding the protocol uses for digests and signatures
 * (docs/decisions.md, "Signing input" and "Hex digests").
 */

const alphabet = "0123456789abcdef"
const byteToHex: ReadonlyArray<string> = Array.from({ length: 256 }, (_, i) => alphabet[i >> 4]! + alphabet[i & 15]!)

export const toHex = (bytes: Uint8Array): string => {
  let out = ""
  for (let i = 0; i < bytes.length; i++) out += byteToHex[bytes[i]!]!
  return out
}

/**
 * Whether `a` equals `b` from its character `bFrom` on (a MAC against a header's MAC after its
 * `v1=`, without slicing it), compared in time that depends only on the lengths: the one
 * constant-time comparison of MACs.
 */
export const constantTimeEqual = (a: string, b: string, bFrom = 0): boolean => {
  if (a.length !== b.length - bFrom) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i + bFrom)
  return diff === 0
}
