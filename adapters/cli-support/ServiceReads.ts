/**
 * The live reads of the context server, with a `developer:read` key (`SERVICE_API_KEY`, spec
 * "Authentication" 4) on the admin routes that accept that scope: the Events view, an account
 * profile and a feature gate (`/api/admin/v1/workspaces/{workspaceId}/...`).
 *
 * `checkReadKey` proves the key's scope against the real server before anything starts: the
 * Events view must answer (the key is live, of this workspace, and may read) and the API key list,
 * an `admin`-only route, must refuse it (so the key is not an administrator key).
 */
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { UsageError } from "./CliError.ts"

/**
 * A read the service refused or could not answer: its problem `code` and `detail`, never a secret.
 */
export interface ReadFailure {
  readonly status: number
  readonly code: string
  readonly detail: string
}

export interface ServiceReads {
  /**
   * Reads the workspace route named by `segments` (each percent-encoded here). A segment of `.` or
   * `..` is refused without a request: URL parsing would resolve it to another route.
   */
  readonly get: (
    segments: ReadonlyArray<string>,
    query?: Readonly<Record<string, string | number | undefined>>
  ) => Effect.Effect<unknown, ReadFailure>
}

export const make = (options: {
  readonly serviceUrl: string
  readonly workspaceId: string
  readonly apiKey: Redacted.Redacted<string>
  readonly timeoutMillis?: number
}): ServiceReads => ({
  get: (segments, query = {}) =>
    segments.some((segment) => segment === "." || segment === "..")
      ? Effect.fail<ReadFailure>({
          status: 0,
          code: "invalid_id",
          detail: "an id of . or .. names no single resource"
        })
      : Effect.tryPromise({
          try: async (signal) => {
            const url = new URL(
              `${options.serviceUrl}/api/admin/v1/workspaces/${encodeURIComponent(options.workspaceId)}/` +
                segments.map(encodeURIComponent).join("/")
            )
            for (const [name, value] of Object.entries(query))
              if (value !== undefined) url.searchParams.set(name, String(value))
            const response = await fetch(url, {
              headers: { authorization: `Bearer ${Redacted.value(options.apiKey)}`, accept: "application/json" },
              redirect: "manual",
              signal: AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMillis ?? 10_000)])
            })
            const text = await response.text()
            let json: unknown
            try {
              json = text === "" ? undefined : JSON.parse(text)
            } catch {
              json = undefined
            }
            return { status: response.status, json }
          },
          catch: (error): ReadFailure => ({
            status: 0,
            code: (error as { name?: string })?.name === "TimeoutError" ? "timeout" : "network_error",
            detail: `cannot reach the service at ${options.serviceUrl}`
          })
        }).pipe(
          Effect.flatMap(({ json, status }) => {
            if (status === 200) return Effect.succeed(json)
            const problem = (typeof json === "object" && json !== null ? json : {}) as Record<string, unknown>
            return Effect.fail<ReadFailure>({
              status,
              code: typeof problem["code"] === "string" ? problem["code"] : `http_${status}`,
              detail: typeof problem["detail"] === "string" ? problem["detail"] : `the service answered ${status}`
            })
          })
        )
})

/**
 * Proves that the key is a live `developer:read` key of the workspace; anything else is a one-line
 * `UsageError` (exit 2).
 */
export const checkReadKey = (reads: ServiceReads): Effect.Effect<void, UsageError> =>
  Effect.gen(function* () {
    const refused = (failure: ReadFailure) =>
      new UsageError({
        message:
          failure.status === 0
            ? failure.detail
            : failure.status === 401
              ? "SERVICE_API_KEY was refused (401): the key is unknown or revoked"
              : failure.status === 403
                ? "SERVICE_API_KEY was refused (403): it needs a developer:read key of ACCORD_WORKSPACE_ID"
                : `the service answered ${failure.status} (${failure.code}) to a read`
      })
    yield* Effect.mapError(reads.get(["events"], { limit: 1 }), refused)
    const admin = yield* Effect.either(reads.get(["api-keys"]))
    if (admin._tag === "Right") {
      return yield* new UsageError({
        message: "SERVICE_API_KEY has scope admin; the context server reads only with a developer:read key"
      })
    }
    if (admin.left.status !== 403) return yield* refused(admin.left)
  })
