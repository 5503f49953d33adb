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
 * Compares two strings in time that depends only on their lengths (for MACs in hex).
 */
export const constantTimeEqual = (a: string, b: string): boolean => {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return diff === 0
}
