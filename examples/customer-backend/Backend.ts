/**
 * A reference customer backend, the one a customer would copy: it serves the Accord customer kit at
 * `POST /connector`, performs the extend-trial operation on its own table, answers an entitlement
 * check, and after an extension sends `entitlement_active` to the service's ingest endpoint with the
 * server SDK.
 *
 * Everything durable lives in one database (PGlite in `ACCORD_DATA_DIR`, or PostgreSQL with
 * `DATABASE_URL`): the kit's claims and outbox, and this backend's trials. The extension is written
 * under the action's `providerIdempotencyKey` in the same transaction as the trial change, so the
 * kit's `lookup` finds a run that happened even if the process died right after it.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { makeCustomerKit } from "../../adapters/customer/Kit.ts"
import { makeDirectApiClient } from "../../adapters/sdk/DirectApiClient.ts"
import * as Database from "../../adapters/sql/Database.ts"
import * as SqlStorage from "../../adapters/sql/Storage.ts"
import { layerAesGcm } from "../../core/Cipher.ts"
import type { ClaimedExecution } from "../../core/customer/ClaimedExecution.ts"
import type { ExecutionResult } from "../../core/customer/Worker.ts"
import { isExtendTrialOperation } from "../../core/messages/Execution.ts"

export interface BackendConfig {
  readonly port: number
  readonly host: string
  readonly workspaceId: string
  readonly actionSigningSecret: string
  readonly completionSecret: string
  /** The service's base URL: completions and events go there. */
  readonly serviceUrl: string
  /** A key of scope `ingest`; without it no `entitlement_active` events are sent. */
  readonly ingestApiKey: string | undefined
  readonly dataDir: string
  readonly databaseUrl: string | undefined
  /** The feature an extended trial unlocks (reported in `entitlement_active`). */
  readonly featureKey: string
  /** Allow an `http://` or loopback service URL (development only). */
  readonly allowInsecureServiceUrl: boolean
}

/** Reads the configuration the README documents; refuses to start without the required values. */
export const configFromEnv = (env: Record<string, string | undefined>): BackendConfig => {
  const required = (name: string) => {
    const value = env[name]
    if (value === undefined || value.trim() === "") throw new Error(`${name} is required`)
    return value
  }
  const actionSigningSecret = required("ACCORD_ACTION_SIGNING_SECRET")
  const completionSecret = required("ACCORD_COMPLETION_SECRET")
  if (actionSigningSecret.length < 32 || completionSecret.length < 32) throw new Error("both connector secrets need at least 32 characters")
  if (actionSigningSecret === completionSecret) throw new Error("the two connector secrets must differ")
  const serviceUrl = required("ACCORD_SERVICE_URL")
  return {
    port: Number(env["PORT"] ?? 8788),
    host: env["HOST"] ?? "127.0.0.1",
    workspaceId: required("ACCORD_WORKSPACE_ID"),
    actionSigningSecret,
    completionSecret,
    serviceUrl,
    ingestApiKey: env["SERVICE_INGEST_API_KEY"] || undefined,
    dataDir: env["ACCORD_DATA_DIR"] || "./.customer-data",
    databaseUrl: env["DATABASE_URL"] || undefined,
    featureKey: env["EXAMPLE_FEATURE_KEY"] || "extended_trial",
    allowInsecureServiceUrl: new URL(serviceUrl).protocol === "http:" || /^(1|true|yes|on)$/i.test(env["ACCORD_ALLOW_INSECURE_ENDPOINTS"] ?? "")
  }
}

export interface RunningBackend {
  readonly url: string
  /** The trial of an account, as the entitlement check sees it. */
  readonly trialOf: (accountId: string) => Promise<{ readonly trialEndsAt: number; readonly extensions: number } | undefined>
  readonly close: () => Promise<void>
}

const schema = [
  `CREATE TABLE IF NOT EXISTS example_trials (
     account_id text PRIMARY KEY,
     trial_ends_at bigint NOT NULL
   )`,
  `CREATE TABLE IF NOT EXISTS example_trial_extensions (
     provider_idempotency_key text PRIMARY KEY,
     account_id text NOT NULL,
     extension_days integer NOT NULL,
     trial_ends_at bigint NOT NULL,
     extended_at bigint NOT NULL,
     journey_id text NOT NULL,
     version_id text NOT NULL,
     action_request_id text NOT NULL
   )`
]

const dayMillis = 24 * 60 * 60_000

interface ExtensionRow {
  readonly account_id: string
  readonly extension_days: number
  readonly trial_ends_at: string
  readonly extended_at: string
}

const resultOf = (key: string, row: ExtensionRow): ExecutionResult => ({
  outcome: "succeeded",
  providerReference: `trial_ext_${key.slice(4, 20)}`,
  evidence: {
    entitlement: "trial_extended",
    reasonCode: "trial_extended",
    source: "entitlement_state",
    trialEndsAt: new Date(Number(row.trial_ends_at)).toISOString(),
    extensionDays: row.extension_days
  }
})

export const start = async (config: BackendConfig): Promise<RunningBackend> => {
  const storage: Database.Storage = config.databaseUrl !== undefined
    ? { _tag: "Postgres", url: Redacted.make(config.databaseUrl) }
    : Database.storageFrom({ databaseUrl: Option.none(), dataDir: config.dataDir })
  // The kit stores no connector secrets, so its storage needs no master key of its own.
  const cipher = layerAesGcm(Redacted.make(new Uint8Array(32)))
  const runtime = ManagedRuntime.make(SqlStorage.layer.pipe(Layer.provideMerge(Layer.merge(Database.layer(storage), cipher))))
  const sql = await runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.as(Effect.forEach(schema, (statement) => sql.unsafe(statement), { discard: true }), sql)))
  const run = <A>(effect: Effect.Effect<A, unknown>) => runtime.runPromise(effect)
  const events = config.ingestApiKey === undefined
    ? undefined
    : makeDirectApiClient({ baseUrl: config.serviceUrl, apiKey: config.ingestApiKey })

  const lookupRow = (key: string) =>
    run(sql<ExtensionRow>`SELECT account_id, extension_days, trial_ends_at, extended_at
                          FROM example_trial_extensions WHERE provider_idempotency_key = ${key}`).then((rows) => rows[0])

  /** The entitlement check: is the account's trial active now? */
  const trialOf = (accountId: string) =>
    run(sql<{ trial_ends_at: string; extensions: string }>`
      SELECT t.trial_ends_at, (SELECT count(*) FROM example_trial_extensions e WHERE e.account_id = t.account_id) AS extensions
      FROM example_trials t WHERE t.account_id = ${accountId}`).then((rows) =>
        rows[0] === undefined ? undefined : { trialEndsAt: Number(rows[0].trial_ends_at), extensions: Number(rows[0].extensions) })

  const reportAccess = async (claimed: ClaimedExecution, row: ExtensionRow) => {
    if (events === undefined) return
    const trial = await trialOf(claimed.accountId)
    if (trial === undefined || trial.trialEndsAt <= Date.now()) return
    await events.sendFeatureAccess({
      accountId: claimed.accountId,
      featureKey: config.featureKey,
      journeyId: claimed.binding.journeyId,
      versionId: claimed.binding.publishedVersionId,
      // The stored time of the extension: a retry resends the same event.
      occurredAt: new Date(Number(row.extended_at)).toISOString(),
      actionRequestId: claimed.actionRequestId
    }).catch((error: unknown) => console.error(`entitlement_active not delivered: ${(error as { _tag?: string })._tag ?? "error"}`))
  }

  const kit = await makeCustomerKit({
    workspaceId: config.workspaceId,
    secrets: { actionSigning: Redacted.make(config.actionSigningSecret), completion: Redacted.make(config.completionSecret) },
    serviceUrl: config.serviceUrl,
    allowInsecureServiceUrl: config.allowInsecureServiceUrl,
    storage: Layer.succeedContext(await runtime.runtime().then((rt) => rt.context)),
    // Only the operation this backend implements is accepted; anything else is rejected up front.
    precheck: async (request) => (isExtendTrialOperation(request.action.operation) ? undefined : "unsupported_operation"),
    executor: {
      execute: async (claimed) => {
        const operation = claimed.action.operation
        if (!isExtendTrialOperation(operation)) {
          return { outcome: "failed", providerReference: "none", evidence: { entitlement: "", reasonCode: "unsupported_operation", source: "customer_server_event" } }
        }
        const key = claimed.providerIdempotencyKey
        const now = Date.now()
        // One transaction: the extension record under the key, and the trial change it causes.
        await run(sql.withTransaction(Effect.gen(function*() {
          const inserted = yield* sql`
            INSERT INTO example_trial_extensions (provider_idempotency_key, account_id, extension_days, trial_ends_at, extended_at, journey_id, version_id, action_request_id)
            VALUES (${key}, ${claimed.accountId}, ${operation.extensionDays}, 0, ${now}, ${claimed.binding.journeyId},
                    ${claimed.binding.publishedVersionId}, ${claimed.actionRequestId})
            ON CONFLICT DO NOTHING RETURNING provider_idempotency_key`
          if (inserted.length === 0) return
          const extension = operation.extensionDays * dayMillis
          const [trial] = yield* sql<{ trial_ends_at: string }>`
            INSERT INTO example_trials (account_id, trial_ends_at) VALUES (${claimed.accountId}, ${now + extension})
            ON CONFLICT (account_id) DO UPDATE SET trial_ends_at = GREATEST(example_trials.trial_ends_at, ${now}) + ${extension}
            RETURNING trial_ends_at`
          yield* sql`UPDATE example_trial_extensions SET trial_ends_at = ${trial!.trial_ends_at} WHERE provider_idempotency_key = ${key}`
        })))
        const row = (await lookupRow(key))!
        void reportAccess(claimed, row)
        return resultOf(key, row)
      },
      lookup: async (key) => {
        const row = await lookupRow(key)
        return row === undefined ? undefined : resultOf(key, row)
      }
    }
  })

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://backend")
    if (req.method === "POST" && url.pathname === "/connector") return kit.nodeHandler(req, res)
    const entitlement = /^\/entitlements\/([^/]+)$/.exec(url.pathname)
    if (req.method === "GET" && entitlement !== null) {
      const accountId = decodeURIComponent(entitlement[1]!)
      void trialOf(accountId).then((trial) => {
        const active = trial !== undefined && trial.trialEndsAt > Date.now()
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
          accountId,
          trialActive: active,
          trialEndsAt: trial === undefined ? null : new Date(trial.trialEndsAt).toISOString()
        }))
      })
      return
    }
    if (req.method === "GET" && url.pathname === "/healthz") return void res.writeHead(200).end("ok")
    res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "not_found" }))
  })
  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve))
  const address = server.address() as AddressInfo
  return {
    url: `http://${config.host}:${address.port}`,
    trialOf,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
      await kit.dispose()
      await runtime.dispose()
    }
  }
}
