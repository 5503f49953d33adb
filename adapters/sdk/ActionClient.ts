/**
 * The server SDK's action-intake client for trusted server callers: `submit` posts one
 * already-authorized action to `POST /api/admin/v1/workspaces/{workspaceId}/action-requests` with an
 * admin key and ALWAYS an `Idempotency-Key` header — the caller's, else a random UUID drawn once per
 * `submit` and sent again on every retry of that submit — so a retry after a lost reply answers the
 * original action instead of creating a second one. What may succeed later (network failures,
 * time-outs, 429 after its `Retry-After`, 5xx) is retried with the shared backoff
 * (`core/protocol/Backoff.ts`) under the same key and the same bytes; a refusal (any other 4xx) is
 * never retried and comes back as a typed error carrying the service's problem `code`
 * (`catalog_not_published`, `idempotency_key_reused`, `connector_not_active`, …). `status` reads
 * `GET /action-requests/{id}`. The admin key is `Redacted` and never appears in an error.
 *
 * Built on `HttpApiClient` over the served declaration (`adapters/http/api/ActionRequestsApi.ts`,
 * through `internal/declared.ts`) and `fetch`, so it runs on Node, Bun and Deno. Not for browsers: the
 * admin key is secret.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type { ActionIntake } from "../../core/connector/Action.ts"
import { createActionRequest, getActionRequest } from "../http/api/ActionRequestsApi.ts"
import { adminWorkspacePath } from "../http/Paths.ts"
import { type Attempt, type Retry, runTyped, sentAsGiven, transport } from "./internal/declared.ts"
import { retrySchedule } from "./internal/retrying.ts"

/**
 * The served endpoints this client calls, under the admin workspace prefix as the server serves
 * them.
 */
const declaration = HttpApi.make("actionIntake").add(
  HttpApiGroup.make("actionRequests")
    .add(sentAsGiven(createActionRequest))
    .add(getActionRequest)
    .prefix(adminWorkspacePath)
)

const statusPath = `${adminWorkspacePath}${getActionRequest.path}`

/**
 * Where and how the action client calls the service: its URL, the administrator key, the workspace
 * and retry settings.
 */
export interface ActionClientOptions {
  /** The service's base URL, e.g. `https://accord.example.com`. */
  readonly serviceUrl: string
  /** A key of scope `admin` of the workspace. */
  readonly adminKey: Redacted.Redacted<string> | string
  readonly workspaceId: string
  /** Attempts in all, the first included (default 5). */
  readonly maxAttempts?: number
  /** First backoff delay (default 250 ms); doubles per attempt. */
  readonly baseDelayMillis?: number
  /** Largest backoff delay and largest honoured `Retry-After` (default 30 s). */
  readonly maxDelayMillis?: number
  /** Time-out of one attempt (default 10 s). */
  readonly timeoutMillis?: number
  /** Defaults to the global `fetch`. */
  readonly fetch?: typeof fetch
}

/**
 * What `submit` answers: the action's id and state; `replayed` when the service answered an earlier
 * intake under the same key (`Idempotent-Replayed: true`). `idempotencyKey` is the key sent.
 */
export interface ActionSubmitted {
  readonly actionRequestId: string
  readonly state: string
  readonly replayed: boolean
  readonly idempotencyKey: string
}

/**
 * One entry of an action's history.
 */
export interface ActionHistoryEntry {
  readonly seq: number
  readonly at: string
  readonly trigger: string
  readonly fromState: string | null
  readonly toState: string
  readonly detail: unknown
}

/**
 * What `status` answers (`GET /action-requests/{id}`): the state and full history, and the other
 * fields the service shows.
 */
export interface ActionStatus {
  readonly actionRequestId: string
  readonly state: string
  readonly history: ReadonlyArray<ActionHistoryEntry>
  readonly [field: string]: unknown
}

/**
 * Options of one `submit`.
 */
export interface SubmitOptions {
  /** The caller's key (1–255 visible ASCII characters), one per action; default a random UUID. */
  readonly idempotencyKey?: string
}

/**
 * The service refused the request (a 4xx other than 408 and 429); retrying it cannot succeed.
 */
export class ActionRefused extends Schema.TaggedError<ActionRefused>()("ActionRefused", {
  status: Schema.Number,
  code: Schema.String,
  detail: Schema.String,
  errors: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String }))
}) {}

/**
 * Every attempt failed with something retryable (`network_error`, `timeout`, `http_429`, `http_5xx`);
 * the last reason is kept. A submit that ends so may still have been taken: submit it again with
 * the same `idempotencyKey`.
 */
export class ActionUnavailable extends Schema.TaggedError<ActionUnavailable>()("ActionUnavailable", {
  attempts: Schema.Number,
  reason: Schema.String,
  idempotencyKey: Schema.optional(Schema.String)
}) {}

/**
 * Why a submission or status read failed: refused by the service, or the service unavailable after
 * the retries.
 */
export type ActionClientError = ActionRefused | ActionUnavailable

/** Submits already-authorized actions (always with an `Idempotency-Key`) and reads their state. */
export interface ActionClient {
  /**
   * Submits an authorized action; retried with the same `Idempotency-Key`, so it is taken at most
   * once.
   */
  readonly submit: (intake: ActionIntake, options?: SubmitOptions) => Effect.Effect<ActionSubmitted, ActionClientError>
  /** Reads an action's state and history by its `actionRequestId`. */
  readonly status: (actionRequestId: string) => Effect.Effect<ActionStatus, ActionClientError>
  /** Where an action request's state and history are read (the `Location` of its 202). */
  readonly statusUrl: (actionRequestId: string) => string
}

/** The service tag of an `ActionClient`, for Effect programs. */
export class Actions extends Context.Tag("@accord/sdk/Actions")<Actions, ActionClient>() {}

const refusal = (attempt: Extract<Attempt<unknown>, { readonly _tag: "Refused" }>): ActionRefused =>
  new ActionRefused(attempt.problem)

/** An action client for `options`; the administrator key is kept `Redacted`. */
export const make = (options: ActionClientOptions): ActionClient => {
  const adminKey = typeof options.adminKey === "string" ? Redacted.make(options.adminKey) : options.adminKey
  const serviceUrl = options.serviceUrl.replace(/\/+$/, "")
  const maxAttempts = Math.max(1, options.maxAttempts ?? 5)
  // The shared backoff; a `Retry-After` (429, 503) sets the wait instead, up to `maxDelayMillis`; `maxAttempts` in all.
  const retryPolicy = retrySchedule<Retry>({
    baseDelayMillis: options.baseDelayMillis ?? 250,
    maxDelayMillis: options.maxDelayMillis ?? 30_000,
    maxAttempts
  })
  const { httpClient, attempt } = transport({
    credential: adminKey,
    acceptJson: true,
    timeoutMillis: options.timeoutMillis ?? 10_000,
    fetch: options.fetch,
    fallbackDetail: (status) => `the service answered ${status}`
  })
  const client = Effect.runSync(
    HttpApiClient.group(declaration, { group: "actionRequests", httpClient, baseUrl: serviceUrl })
  )
  // Path parameters are substituted as given: encoded once here.
  const workspaceId = encodeURIComponent(options.workspaceId)

  /** Retries the same request (same bytes, same key) until done, refused or out of attempts. */
  const retrying = <A>(
    call: Effect.Effect<Attempt<A>>,
    idempotencyKey?: string
  ): Effect.Effect<Extract<Attempt<A>, { readonly _tag: "Done" }>, ActionClientError> => {
    const once: Effect.Effect<Exclude<Attempt<A>, Retry>, Retry> = Effect.flatMap(call, (result) =>
      result._tag === "Retry" ? Effect.fail(result) : Effect.succeed(result)
    )
    return Effect.retry(once, retryPolicy).pipe(
      Effect.catchAll((last) =>
        Effect.fail(
          new ActionUnavailable({
            attempts: maxAttempts,
            reason: last.reason,
            ...(idempotencyKey === undefined ? {} : { idempotencyKey })
          })
        )
      ),
      Effect.flatMap((result) => (result._tag === "Refused" ? Effect.fail(refusal(result)) : Effect.succeed(result)))
    )
  }

  const submit = (
    intake: ActionIntake,
    submitOptions: SubmitOptions = {}
  ): Effect.Effect<ActionSubmitted, ActionClientError> =>
    Effect.gen(function* () {
      // Drawn once per submit: every retry of this submit carries the same key.
      const idempotencyKey = submitOptions.idempotencyKey ?? (yield* Effect.sync(() => globalThis.crypto.randomUUID()))
      const done = yield* retrying(
        attempt(
          client.createActionRequest({
            path: { workspaceId },
            headers: { "idempotency-key": idempotencyKey },
            payload: intake,
            withResponse: true
          })
        ),
        idempotencyKey
      )
      return {
        actionRequestId: done.value.actionRequestId,
        state: done.value.state,
        replayed: done.response.headers["idempotent-replayed"] === "true",
        idempotencyKey
      }
    })

  const statusUrl = (actionRequestId: string) =>
    serviceUrl + statusPath.replace(":workspaceId", workspaceId).replace(":id", encodeURIComponent(actionRequestId))

  return {
    submit,
    status: (actionRequestId) =>
      Effect.map(
        retrying(
          attempt(
            client.getActionRequest({
              path: { workspaceId, id: encodeURIComponent(actionRequestId) },
              withResponse: true
            })
          )
        ),
        (done) => done.value
      ),
    statusUrl
  }
}

/** Provides `Actions` with a client made from `options`. */
export const layer = (options: ActionClientOptions): Layer.Layer<Actions> => Layer.succeed(Actions, make(options))

/**
 * From the environment: `ACCORD_SERVICE_URL`, `ACCORD_ADMIN_KEY` (an admin key) and `ACCORD_WORKSPACE_ID`.
 */
export const layerConfig: Layer.Layer<Actions, ConfigError.ConfigError> = Layer.effect(
  Actions,
  Effect.map(
    Config.all({
      serviceUrl: Config.string("ACCORD_SERVICE_URL"),
      adminKey: Config.redacted("ACCORD_ADMIN_KEY"),
      workspaceId: Config.string("ACCORD_WORKSPACE_ID")
    }),
    make
  )
)

/**
 * The same client with Promises, for hosts that do not use Effect. Rejects with the typed error
 * itself (`ActionRefused` or `ActionUnavailable`).
 */
export const makeActionClient = (
  options: ActionClientOptions
): {
  /**
   * Submits an authorized action; retried with the same `Idempotency-Key`, so it is taken at most
   * once.
   */
  readonly submit: (intake: ActionIntake, options?: SubmitOptions) => Promise<ActionSubmitted>
  /** Reads an action's state and history by its `actionRequestId`. */
  readonly status: (actionRequestId: string) => Promise<ActionStatus>
} => {
  const client = make(options)
  return {
    submit: (intake, submitOptions) => runTyped(client.submit(intake, submitOptions)),
    status: (actionRequestId) => runTyped(client.status(actionRequestId))
  }
}
