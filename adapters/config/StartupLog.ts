/**
 * What the server says when it starts, as plain lines: where the master key came from, the loud
 * warning the rule asks for (docs/decisions.md, "Public endpoints":
 * "`ACCORD_ALLOW_INSECURE_ENDPOINTS=1` permits `http` and loopback for local development and tests
 * only; it is off by default and logged loudly when on"), what bootstrapping did, and why a start
 * failed. Lines never contain a secret: at most a path, a workspace id or a variable's name.
 */
import * as Effect from "effect/Effect"
import type { BootstrapKeyConflict, BootstrapOutcome } from "../../core/access/ApiKeys.ts"
import type { StorageError } from "../../core/ports/StorageError.ts"
import type { AppliedMigration } from "../sql/Migrations.ts"
import type { AccordConfig, InvalidConfig, MasterKey } from "./AccordConfig.ts"

/**
 * Lines to log, by level.
 */
export interface StartupLines {
  readonly info: ReadonlyArray<string>
  readonly warnings: ReadonlyArray<string>
}

/**
 * Logs the lines, information first.
 */
export const log = (lines: StartupLines): Effect.Effect<void> =>
  Effect.zipRight(
    Effect.forEach(lines.info, (line) => Effect.logInfo(line), { discard: true }),
    Effect.forEach(lines.warnings, (line) => Effect.logWarning(line), { discard: true })
  )

/**
 * Where the master key came from (never the key itself).
 */
export const masterKeySource = (masterKey: MasterKey): string =>
  masterKey.source === "environment"
    ? "master key: from ACCORD_MASTER_KEY"
    : masterKey.source === "ephemeral"
      ? "master key: generated for this process (in-memory data directory)"
      : `master key: ${masterKey.path} (${masterKey.source === "created" ? "created" : "existing"})`

/**
 * A key file others can read, said as soon as the key is resolved.
 */
export const masterKeyWarnings = (masterKey: MasterKey): StartupLines => ({
  info: [],
  warnings: masterKey.warning === undefined ? [] : [masterKey.warning]
})

/**
 * With `DATABASE_URL` the data lives in PostgreSQL, but without `ACCORD_MASTER_KEY` the key that
 * opens its connector secrets lives in a local file: lose the file (or start on another host) and
 * the server refuses to start on that database.
 */
export const masterKeyPlacement = (config: AccordConfig, masterKey: MasterKey): StartupLines => ({
  info: [],
  warnings:
    config.databaseUrl._tag === "Some" && masterKey.source !== "environment"
      ? [
          `master key: DATABASE_URL is set but ACCORD_MASTER_KEY is not, so the key that opens the stored connector secrets lives only in ${
            masterKey.path ?? "this process"
          }; back it up, or set ACCORD_MASTER_KEY (base64 of 32 bytes) to its content on every host`
        ]
      : []
})

/**
 * The server was started with another master key than the database was first started with.
 */
export const masterKeyMismatch = (config: AccordConfig): string =>
  `master key: ${
    config.masterKey._tag === "Some" ? "ACCORD_MASTER_KEY" : "the key file in ACCORD_DATA_DIR"
  } is not the master key this database was first started with; set ACCORD_MASTER_KEY to that key (the stored connector secrets open only with it)`

/**
 * What the master-key guard did.
 */
export const masterKeyChecked = (outcome: "recorded" | "matched"): StartupLines => ({
  info: [
    outcome === "recorded"
      ? "master key: check recorded in the database (first start)"
      : "master key: matches the database"
  ],
  warnings: []
})

/**
 * Said before the embedded database is created, which takes a few seconds.
 */
export const creatingEmbeddedDatabase: string =
  "storage: creating the embedded database (first start, this takes a few seconds)"

/**
 * Which migrations this start applied.
 */
export const migrated = (applied: ReadonlyArray<AppliedMigration>): StartupLines => ({
  info: [
    applied.length === 0
      ? "migrations: none pending"
      : `migrations: applied ${applied.map(({ id, name }) => `${String(id).padStart(4, "0")}_${name}`).join(", ")}`
  ],
  warnings: []
})

/**
 * The next step when nobody can use the admin API yet: no bootstrap variables and no workspace.
 */
export const noAdminKeyHint: string =
  "no workspace exists yet: to create one with an administrator key, restart with ACCORD_BOOTSTRAP_WORKSPACE_ID " +
  "(a UUID) and ACCORD_BOOTSTRAP_ADMIN_KEY (at least 32 characters) set"

export const insecureEndpointsWarning: string =
  "ACCORD_ALLOW_INSECURE_ENDPOINTS IS ON: http:// and loopback connector endpoints are accepted " +
  "(other private addresses stay refused). For local development and tests only; never in production."

/**
 * Said once the server listens: the master key's source, and the endpoint policy when it is open.
 */
export const listening = (config: AccordConfig, masterKey: MasterKey): StartupLines => ({
  info: [masterKeySource(masterKey)],
  warnings: config.allowInsecureEndpoints ? [insecureEndpointsWarning] : []
})

/**
 * What bootstrapping did; a revoked bootstrap key stays revoked, and that deserves a warning.
 */
export const bootstrapped = (workspaceId: string, outcome: BootstrapOutcome): StartupLines => ({
  info: [
    `bootstrap: workspace ${workspaceId} ${outcome.workspaceCreated ? "created" : "present"}, admin key ${outcome.adminKey}` +
      (outcome.ingestKey === undefined ? "" : `, ingest key ${outcome.ingestKey}`)
  ],
  warnings: [
    ...(outcome.adminKey === "revoked"
      ? ["bootstrap: ACCORD_BOOTSTRAP_ADMIN_KEY was revoked and is not restored"]
      : []),
    ...(outcome.ingestKey === "revoked"
      ? ["bootstrap: ACCORD_BOOTSTRAP_INGEST_KEY was revoked and is not restored"]
      : [])
  ]
})

/**
 * Why bootstrapping stopped the start.
 */
export const bootstrapFailure = (error: StorageError | BootstrapKeyConflict): string =>
  error._tag === "StorageError" ? `bootstrap: ${error.message}` : error.message

/**
 * Why the listener could not be opened.
 */
export const listenFailure = (config: AccordConfig, cause: unknown): string =>
  `cannot listen on ${config.host}:${config.port}: ${cause instanceof Error ? cause.message : "unknown error"}`

/**
 * A failed start in plain lines (a configuration problem is not a crash, so no stack trace): a
 * heading, then one indented line per problem.
 */
export const startFailure = (
  failure: InvalidConfig | { readonly _tag: "StartupError"; readonly reason: string }
): ReadonlyArray<string> =>
  failure._tag === "InvalidConfig"
    ? ["Accord cannot start: invalid configuration", ...failure.problems.map((line) => `  - ${line}`)]
    : ["Accord cannot start", `  - ${failure.reason}`]

/**
 * The last line of a server that was started and then stopped (SIGTERM or SIGINT): everything it
 * started has been drained and closed.
 */
export const stopped: string = "stopped"

/**
 * Where telemetry goes: `/metrics` (and whether it needs the token) and the OTLP collector's host
 * when export is on (never the rest of its URL, which may carry credentials).
 */
export const telemetry = (config: AccordConfig): StartupLines => ({
  info: [
    `metrics: GET /metrics (${config.metricsToken._tag === "Some" ? "bearer ACCORD_METRICS_TOKEN required" : "open; set ACCORD_METRICS_TOKEN to require a token"})`,
    config.otlp._tag === "Some"
      ? `telemetry: exporting traces and metrics over OTLP/HTTP to ${hostOf(config.otlp.value.endpoint)} as ${config.otlp.value.serviceName}`
      : "telemetry: OTLP export off (set OTEL_EXPORTER_OTLP_ENDPOINT to export traces and metrics)"
  ],
  warnings: []
})

const hostOf = (endpoint: string): string => {
  try {
    return new URL(endpoint).host
  } catch {
    return "the configured endpoint"
  }
}
