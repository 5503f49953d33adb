/**
 * The log line of a storage fault that reached a caller (a 503 `storage_unavailable`): one WARN
 * line per distinct fault (kind, driver code and message) per `interval`, with the driver's code
 * and message and how many more of the same were met since its last line, never a stack trace.
 * During an outage every request meets the same fault; one line every few seconds says what it is
 * without flooding the log. (Every fault is also counted, by kind, in
 * `accord_storage_faults_total`.)
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { faultOf, type StorageError } from "../../core/ports/StorageError.ts"

/** How long the same fault stays quiet after its line. */
export const interval = 10_000

/** The most distinct faults remembered; past it the oldest is forgotten (and may log again). */
const remembered = 256

interface Seen {
  at: number
  more: number
}

const seen = new Map<string, Seen>()

/**
 * Logs the fault at WARN unless the same one was logged less than `interval` ago (then counts it
 * for the next line).
 */
export const warn = (error: StorageError): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const fault = faultOf(error)
    const key = `${fault}\u0000${error.code ?? ""}\u0000${error.message}`
    const last = seen.get(key)
    if (last !== undefined && now - last.at < interval) {
      last.more++
      return Effect.void
    }
    const more = last?.more ?? 0
    seen.delete(key)
    seen.set(key, { at: now, more: 0 })
    if (seen.size > remembered) seen.delete(seen.keys().next().value!)
    return Effect.logWarning(
      `storage unavailable: ${fault}${error.code === undefined ? "" : ` ${error.code}`}: ${error.message}`
    ).pipe(
      Effect.annotateLogs({
        operation: error.operation,
        cause: fault,
        ...(error.code === undefined ? {} : { code: error.code }),
        ...(more === 0 ? {} : { repeated: String(more) })
      })
    )
  })
