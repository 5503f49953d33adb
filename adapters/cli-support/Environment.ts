/**
 * The CLI's environment variables, read at the edge: a missing required one is a one-line
 * `UsageError` naming the variable, never its value. Keys stay `Redacted`.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { UsageError } from "./CliError.ts"

/**
 * A variable's value, `None` when unset or empty.
 */
export const optional = (name: string): Effect.Effect<Option.Option<string>> =>
  Effect.sync(() => {
    const value = process.env[name]
    return value === undefined || value.trim() === "" ? Option.none() : Option.some(value.trim())
  })

/**
 * A required variable.
 */
export const required = (name: string, why?: string): Effect.Effect<string, UsageError> =>
  Effect.flatMap(optional(name), (value) =>
    Option.isSome(value)
      ? Effect.succeed(value.value)
      : Effect.fail(new UsageError({ message: `${name} is required${why === undefined ? "" : ` (${why})`}` }))
  )

/**
 * A required secret, redacted from here on.
 */
export const secret = (name: string, why?: string): Effect.Effect<Redacted.Redacted<string>, UsageError> =>
  Effect.map(required(name, why), Redacted.make)

/**
 * `ACCORD_SERVICE_URL`: an http(s) URL.
 */
export const serviceUrl: Effect.Effect<string, UsageError> = Effect.flatMap(
  required("ACCORD_SERVICE_URL", "the service's base URL, such as https://accord.example.com"),
  (value) => {
    try {
      const url = new URL(value)
      if (url.protocol === "http:" || url.protocol === "https:")
        return Effect.succeed(url.origin + url.pathname.replace(/\/+$/, ""))
    } catch {
      // fall through
    }
    return Effect.fail(new UsageError({ message: "ACCORD_SERVICE_URL must be an http or https URL" }))
  }
)
