/**
 * Text that cannot be stored: PostgreSQL (and PGlite) refuse U+0000 in `text` and `jsonb`, and
 * an unpaired UTF-16 surrogate (which JSON can carry as a `\ud800` escape) in `jsonb`. Such an
 * event is refused at the door, naming where, so it can never fail a write it shares with other
 * events.
 */

/** Where and why (the same shape as `Json.FieldIssue`, declared here so `Json.ts` may use this module). */
interface FieldIssue {
  readonly path: string
  readonly message: string
}

const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/**
 * Whether `text` can be stored: no U+0000 and no unpaired surrogate.
 */
export const isStorableText = (text: string): boolean => !text.includes("\u0000") && !loneSurrogate.test(text)

const message = "contains a NUL character or an unpaired UTF-16 surrogate, which cannot be stored"
const badName = "<unstorable name>"

/**
 * Every place in a parsed JSON body (names and string values, at any depth) whose text cannot be
 * stored. Walks iteratively, so no nesting depth can exhaust the stack; a name that cannot be
 * stored is shown as `<unstorable name>`, never as received.
 */
export const unstorableTextIssues = (body: unknown): ReadonlyArray<FieldIssue> =>
  allStorable(body) ? none : issuesOf(body)

const none: ReadonlyArray<FieldIssue> = []

/**
 * Whether every name and string in `body` can be stored: the usual answer, found with a stack of
 * values only (no paths are built, no pairs allocated); the paths are worked out only when some
 * text cannot be stored.
 */
const allStorable = (body: unknown): boolean => {
  const pending: Array<unknown> = [body]
  while (pending.length > 0) {
    const value = pending.pop()
    if (typeof value === "string") {
      if (!isStorableText(value)) return false
    } else if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) pending.push(value[i])
    } else if (typeof value === "object" && value !== null) {
      for (const name of Object.keys(value)) {
        if (!isStorableText(name)) return false
        pending.push((value as Readonly<Record<string, unknown>>)[name])
      }
    }
  }
  return true
}

const issuesOf = (body: unknown): ReadonlyArray<FieldIssue> => {
  const issues: Array<FieldIssue> = []
  const pending: Array<readonly [unknown, string]> = [[body, ""]]
  while (pending.length > 0) {
    const [value, path] = pending.pop()!
    if (typeof value === "string") {
      if (!isStorableText(value)) issues.push({ path, message })
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push([value[i], path === "" ? String(i) : `${path}.${i}`])
    } else if (typeof value === "object" && value !== null) {
      for (const [name, item] of Object.entries(value)) {
        const storable = isStorableText(name)
        const at = path === "" ? (storable ? name : badName) : `${path}.${storable ? name : badName}`
        if (!storable) issues.push({ path: at, message })
        pending.push([item, at])
      }
    }
  }
  return issues
}
