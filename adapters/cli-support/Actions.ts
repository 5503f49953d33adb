/**
 * `accord actions submit FILE [--idempotency-key KEY] [--json]` and `accord actions status ID [--json]`:
 * the action-intake client (`adapters/sdk/ActionClient.ts`) from the command line, with an admin
 * key (`ACCORD_ADMIN_KEY`) of `ACCORD_WORKSPACE_ID` at `ACCORD_SERVICE_URL`.
 *
 * `submit` always sends an `Idempotency-Key` (the given one, else a fresh UUID that it prints, so a
 * user whose reply was lost can submit again under it and get the same action). The service's
 * refusal of the action (a 4xx problem such as `catalog_not_published` or `idempotency_key_reused`)
 * is printed with its code and exits 1; a refused key, a missing variable or an unreachable service
 * is one line on stderr and exits 2. The key's value is never printed.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ActionIntake } from "../../core/connector/Action.ts"
import { type ActionRefused, type ActionStatus, type ActionUnavailable, make } from "../sdk/ActionClient.ts"
import { FindingsReported, UsageError } from "./CliError.ts"
import * as Environment from "./Environment.ts"
import { readJson } from "./EventFile.ts"

const json = Options.boolean("json").pipe(Options.withDescription("print one machine-readable JSON document"))

const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

/** The client from the environment; nothing is sent yet. */
const clientFromEnv = Effect.gen(function* () {
  const serviceUrl = yield* Environment.serviceUrl
  const adminKey = yield* Environment.secret("ACCORD_ADMIN_KEY", "an admin key of ACCORD_WORKSPACE_ID")
  const workspaceId = yield* Environment.required("ACCORD_WORKSPACE_ID", "the workspace of the action")
  return {
    serviceUrl,
    client: make({ serviceUrl, adminKey, workspaceId, maxAttempts: 4, baseDelayMillis: 200, maxDelayMillis: 5_000 })
  }
})

/**
 * The failures of a call as the CLI ends: a refused key or an unreachable service is a `UsageError`
 * (exit 2); any other refusal is printed (its code, detail and field errors) and exits 1.
 */
const ending =
  (serviceUrl: string, asJson: boolean) =>
  (error: ActionRefused | ActionUnavailable): Effect.Effect<never, UsageError | FindingsReported> => {
    if (error._tag === "ActionUnavailable") {
      const retry =
        error.idempotencyKey === undefined ? "" : `; submit again with --idempotency-key ${error.idempotencyKey}`
      return Effect.fail(
        new UsageError({
          message:
            error.reason === "network_error" || error.reason === "timeout"
              ? `cannot reach the service at ${serviceUrl} (${error.reason})${retry}`
              : `the service at ${serviceUrl} is unavailable (${error.reason} after ${error.attempts} attempts)${retry}`
        })
      )
    }
    if (error.status === 401) {
      return Effect.fail(
        new UsageError({ message: "ACCORD_ADMIN_KEY was refused (401): the key is unknown or revoked" })
      )
    }
    if (error.status === 403) {
      return Effect.fail(
        new UsageError({ message: "ACCORD_ADMIN_KEY was refused (403): it needs an admin key of ACCORD_WORKSPACE_ID" })
      )
    }
    const problem = { status: error.status, code: error.code, detail: error.detail, errors: error.errors }
    const print = asJson
      ? printJson({ refused: problem })
      : Console.log(
          [
            `refused (${error.status} ${error.code}): ${error.detail}`,
            ...error.errors.map((issue) => `  error   ${issue.path || "(body)"} ${issue.message}`)
          ].join("\n")
        )
    return Effect.zipRight(print, Effect.fail(new FindingsReported()))
  }

const submit = Command.make(
  "submit",
  {
    file: Args.text({ name: "FILE" }).pipe(
      Args.withDescription(
        "one action intake as JSON: accountId, action, actor, binding (and payment for a Payment action)"
      )
    ),
    idempotencyKey: Options.text("idempotency-key").pipe(
      Options.withDescription("the key of this action (1-255 visible ASCII characters); default a fresh UUID, printed"),
      Options.optional
    ),
    json
  },
  (options) =>
    Effect.gen(function* () {
      const intake = yield* readJson(options.file)
      if (typeof intake !== "object" || intake === null || Array.isArray(intake)) {
        return yield* new UsageError({
          message: `${options.file}: not an action intake; expected one JSON object with accountId, action, actor and binding`
        })
      }
      const { client, serviceUrl } = yield* clientFromEnv
      // The service decodes and judges the intake: its refusal names the fields.
      const submitted = yield* client
        .submit(
          intake as ActionIntake,
          Option.isSome(options.idempotencyKey) ? { idempotencyKey: options.idempotencyKey.value } : {}
        )
        .pipe(Effect.catchAll(ending(serviceUrl, options.json)))
      const location = client.statusUrl(submitted.actionRequestId)
      if (options.json) return yield* printJson({ ...submitted, location })
      yield* Console.log(
        `${submitted.replayed ? "replayed" : "accepted"}: action request ${submitted.actionRequestId} (${submitted.state})\n` +
          `idempotency key: ${submitted.idempotencyKey} (submit again with --idempotency-key to retry safely)\n` +
          `read it: accord actions status ${submitted.actionRequestId}, or GET ${location} (an admin key)`
      )
    })
).pipe(
  Command.withDescription(
    "submit one already-authorized action to ACCORD_SERVICE_URL with ACCORD_ADMIN_KEY (an admin key) for ACCORD_WORKSPACE_ID, " +
      "always with an Idempotency-Key; prints the action request id and where to read it"
  )
)

const formatStatus = (status: ActionStatus): string =>
  [
    `action request ${status.actionRequestId}: ${status.state}`,
    ...status.history.map((h) => `  ${h.at}  ${h.fromState ?? "-"} -> ${h.toState}  [${h.trigger}]`)
  ].join("\n")

const status = Command.make(
  "status",
  { id: Args.text({ name: "ID" }).pipe(Args.withDescription("the actionRequestId that submit printed")), json },
  (options) =>
    Effect.gen(function* () {
      const { client, serviceUrl } = yield* clientFromEnv
      const shown = yield* client.status(options.id).pipe(Effect.catchAll(ending(serviceUrl, options.json)))
      yield* options.json ? printJson(shown) : Console.log(formatStatus(shown))
    })
).pipe(Command.withDescription("show an action request's state and history (ACCORD_ADMIN_KEY, an admin key)"))

/**
 * `accord actions`.
 */
export const actions = Command.make("actions").pipe(
  Command.withDescription("submit already-authorized actions and read their state (trusted server callers)"),
  Command.withSubcommands([submit, status])
)
