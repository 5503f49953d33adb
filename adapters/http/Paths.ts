/**
 * Route prefixes shared by the HTTP modules: the spec's exact paths, and the administrative routes
 * under one workspace prefix.
 */
import { isSafeIdentifier } from "../../core/protocol/Identifier.ts"
import { isStorableText } from "../../core/protocol/Text.ts"

/**
 * Prefix of the workspace administrator routes.
 */
export const adminPrefix = "/api/admin/v1/workspaces" as const

/**
 * The one workspace every admin route sits under; its routes are declared relative to it.
 */
export const adminWorkspacePath = `${adminPrefix}/:workspaceId` as const

/**
 * Why a request target (path and query, as received) is refused before any route reads it, or
 * `undefined`: every path segment, percent-decoded, must be UTF-8 and follow the one identifier rule
 * (`core/protocol/Identifier.ts`: no control, bidi, zero-width or unpaired surrogate character),
 * and every query name and value, percent-decoded, must be UTF-8 text that can be stored (no
 * U+0000). One check at the edge for every route's parameters, so no such value reaches storage
 * (where it would fail as a 503).
 */
export const targetProblem = (url: string): "invalid_path" | "invalid_query" | undefined => {
  const hash = url.indexOf("#")
  const target = hash === -1 ? url : url.slice(0, hash)
  const question = target.indexOf("?")
  const path = question === -1 ? target : target.slice(0, question)
  // Fast path: nothing encoded and nothing outside printable ASCII.
  if (printableAscii.test(target)) return undefined
  for (const segment of path.split("/")) {
    const decoded = decode(segment)
    if (decoded === undefined || !isSafeIdentifier(decoded)) return "invalid_path"
  }
  if (question !== -1) {
    for (const part of target.slice(question + 1).split(/[&;]/)) {
      for (const item of part.split("=")) {
        const decoded = decode(item.replace(/\+/g, " "))
        if (decoded === undefined || !isStorableText(decoded)) return "invalid_query"
      }
    }
  }
  return undefined
}

const printableAscii = /^[\x21-\x24\x26-\x7e]*$/

/** Percent-decoding as UTF-8; `undefined` for a malformed escape or invalid UTF-8. */
const decode = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}
