/**
 * How a command ends when it does not succeed, and the exit code each way maps to: 1 when the
 * command ran and reported findings (already printed), 2 for a usage or configuration error
 * (a missing file, a file that is not JSON, a wrong option, a missing or wrong-scope key, an
 * unreachable service). The message is one line for stderr; it never holds a secret or a value
 * read from the user's data.
 */
import * as Data from "effect/Data"

/**
 * A usage or configuration error: one line on stderr, exit code 2.
 */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

/**
 * The command printed its findings (refused events, failed checks): exit code 1.
 */
export class FindingsReported extends Data.TaggedError("FindingsReported")<Record<never, never>> {}

export type CliError = UsageError | FindingsReported

export const exitCodes = { ok: 0, findings: 1, usage: 2 } as const

/**
 * A one-line form of any message: line breaks folded, length bounded.
 */
export const oneLine = (message: string): string => {
  const line = message.replace(/\s*[\r\n]+\s*/g, " ").trim()
  return line.length > 400 ? `${line.slice(0, 397)}...` : line
}
