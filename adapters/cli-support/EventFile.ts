/**
 * Reading the files the CLI takes: one JSON value, or JSON Lines (one value per non-empty line).
 * An event file holds one event, a JSON array of events, or JSON Lines. Errors say which file and
 * which line is wrong, never what it holds.
 */
import { readFile } from "node:fs/promises"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { parseJsonText } from "../../core/protocol/Json.ts"
import { UsageError } from "./CliError.ts"

/**
 * One entry of an event file: the parsed value and, for JSON Lines, its line number (1-based).
 */
export interface Entry {
  readonly value: unknown
  readonly line?: number
}

const errorCode = (error: unknown): string =>
  typeof error === "object" && error !== null && "code" in error
    ? String((error as { code: unknown }).code)
    : "unreadable"

/**
 * The text of a file, or a one-line `UsageError` (missing, a directory, unreadable).
 */
export const readText = (path: string): Effect.Effect<string, UsageError> =>
  Effect.tryPromise({
    try: () => readFile(path, "utf8"),
    catch: (error) => {
      const code = errorCode(error)
      return new UsageError({
        message:
          code === "ENOENT"
            ? `${path}: no such file`
            : code === "EISDIR"
              ? `${path}: is a directory, not a file`
              : `${path}: cannot read the file (${code})`
      })
    }
  })

/**
 * Parses a file's text as one JSON value, else as JSON Lines.
 */
export const parseEntries = (path: string, text: string): Either.Either<ReadonlyArray<Entry>, UsageError> => {
  const whole = parseJsonText(text.replace(/^\uFEFF/, ""))
  if (Either.isRight(whole)) {
    return Either.right(Array.isArray(whole.right) ? whole.right.map((value) => ({ value })) : [{ value: whole.right }])
  }
  const entries: Array<Entry> = []
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim()
    if (line === "") continue
    const parsed = parseJsonText(line)
    if (Either.isLeft(parsed)) {
      return Either.left(
        new UsageError({
          message:
            entries.length === 0 && i === lines.findIndex((l) => l.trim() !== "")
              ? `${path}: not JSON or JSON Lines (${parsed.left.reason === "syntax" ? "syntax error" : parsed.left.reason})`
              : `${path}: line ${i + 1} is not JSON (${parsed.left.reason === "syntax" ? "syntax error" : parsed.left.reason})`
        })
      )
    }
    entries.push({ value: parsed.right, line: i + 1 })
  }
  if (entries.length === 0) return Either.left(new UsageError({ message: `${path}: the file is empty` }))
  return Either.right(entries)
}

/**
 * Reads and parses an event file.
 */
export const readEntries = (path: string): Effect.Effect<ReadonlyArray<Entry>, UsageError> =>
  Effect.flatMap(readText(path), (text) => parseEntries(path, text))

/**
 * Reads a file that must hold exactly one JSON value.
 */
export const readJson = (path: string): Effect.Effect<unknown, UsageError> =>
  Effect.flatMap(readText(path), (text) => {
    const parsed = parseJsonText(text.replace(/^\uFEFF/, ""))
    return Either.isRight(parsed)
      ? Effect.succeed(parsed.right)
      : Effect.fail(
          new UsageError({
            message: `${path}: not JSON (${parsed.left.reason === "syntax" ? "syntax error" : parsed.left.reason})`
          })
        )
  })
