/**
 * Memory for pure functions of names: senders repeat the same few event and property names on
 * every request, so the ingestion rules remember their verdicts on them instead of re-deriving them.
 */

/**
 * `f` with its results remembered for up to `max` keys (all of them forgotten when full, so memory
 * stays bounded whatever keys arrive). `keep` decides which results may be remembered: a name that
 * is itself data (an e-mail address) must not stay in memory.
 */
export const remembering = <A>(
  f: (key: string) => A,
  options?: { readonly max?: number; readonly keep?: (key: string, result: A) => boolean }
): ((key: string) => A) => {
  const max = options?.max ?? 4096
  const keep = options?.keep
  const known = new Map<string, A>()
  return (key) => {
    const found = known.get(key)
    if (found !== undefined || known.has(key)) return found as A
    const result = f(key)
    if (keep === undefined || keep(key, result)) {
      if (known.size >= max) known.clear()
      known.set(key, result)
    }
    return result
  }
}
