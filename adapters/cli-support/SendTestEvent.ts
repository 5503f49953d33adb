/**
 * `accord send-test-event FILE`: validates one event offline with the ingest route's own rules,
 * then sends it with `SERVICE_INGEST_API_KEY` to `ACCORD_SERVICE_URL` through the SDK
 * (`adapters/sdk/DirectApiClient.ts`) and prints what the service answered and where to see it
 * (the Events view route). A refused key or an unreachable service is a configuration error.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { type IngestAccepted, type IngestEvent, make } from "../sdk/DirectApiClient.ts"
import { FindingsReported, UsageError } from "./CliError.ts"

/**
 * The Events view route for an account, as a user would open it.
 */
export const eventsViewRoute = (serviceUrl: string, workspaceId: Option.Option<string>, accountId: string): string =>
  `${serviceUrl}/api/admin/v1/workspaces/${Option.getOrElse(workspaceId, () => "<workspace-id>")}/events?account_id=${encodeURIComponent(accountId)}`

/**
 * What the service answered, as printed.
 */
export interface SendResult extends IngestAccepted {
  readonly eventsView: string
}

/**
 * Sends one (already validated) event; refusals of the key and an unreachable service are
 * `UsageError`s, the service's refusal of the event is printed and `FindingsReported`.
 */
export const send = (options: {
  readonly serviceUrl: string
  readonly apiKey: Redacted.Redacted<string>
  readonly workspaceId: Option.Option<string>
  readonly event: IngestEvent
  readonly print: (lines: ReadonlyArray<string>) => Effect.Effect<void>
}): Effect.Effect<SendResult, UsageError | FindingsReported> =>
  make({
    baseUrl: options.serviceUrl,
    apiKey: options.apiKey,
    maxAttempts: 3,
    baseDelayMillis: 200,
    maxDelayMillis: 5_000
  })
    .ingest(options.event)
    .pipe(
      Effect.map((accepted) => ({
        ...accepted,
        eventsView: eventsViewRoute(options.serviceUrl, options.workspaceId, accepted.accountId)
      })),
      Effect.catchTags({
        IngestUnavailable: (error) =>
          Effect.fail(
            new UsageError({
              message:
                error.reason === "network_error" || error.reason === "timeout"
                  ? `cannot reach the service at ${options.serviceUrl} (${error.reason})`
                  : `the service at ${options.serviceUrl} is unavailable (${error.reason} after ${error.attempts} attempts)`
            })
          ),
        IngestRejected: (error) => {
          if (error.status === 401) {
            return Effect.fail(
              new UsageError({ message: "SERVICE_INGEST_API_KEY was refused (401): the key is unknown or revoked" })
            )
          }
          if (error.status === 403) {
            return Effect.fail(
              new UsageError({ message: "SERVICE_INGEST_API_KEY was refused (403): it needs a key of scope ingest" })
            )
          }
          const lines = [
            `refused (${error.status} ${error.code}): ${error.detail}`,
            ...error.errors.map((issue) => `  error   ${issue.path || "(event)"} ${issue.message}`)
          ]
          return Effect.zipRight(options.print(lines), Effect.fail(new FindingsReported()))
        }
      })
    )
