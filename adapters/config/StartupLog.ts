/**
 * What the server says when it starts, as plain lines: where the master key came from, the loud
 * warning of DESIGN D10 ("`ACCORD_ALLOW_INSECURE_ENDPOINTS=1` permits `http` and loopback for local
 * development and tests only; it is off by default and logged loudly when on"), what bootstrapping
 * did, and why a start failed. Lines never contain a secret: at most a path, a workspace id or a
 * variable's name.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type { BootstrapKeyConflict, BootstrapOutcome } from "../../core/access/ApiKeys.ts"
import type { StorageError } from "../../core/ports/StorageError.ts"
import type { AccordConfig, InvalidConfig, MasterKey } from "./AccordConfig.ts"

/**
 * Lines to log, by level.
 *
 * @since 0.1.0
 */
export interface StartupLines {
  readonly info: ReadonlyArray<string>
  readonly warnings: ReadonlyArray<string>
}

/**
 * Logs the lines, information first.
 *
 * @since 0.1.0
 */
export const log = (lines: StartupLines): Effect.Effect<void> =>
  Effect.zipRight(
    Effect.forEach(lines.info, (line) => Effect.logInfo(line), { discard: true }),
    Effect.forEach(lines.warnings, (line) => Effect.logWarning(line), { discard: true })
  )

/**
 * Where the master key came from (never the key itself).
 *
 * @since 0.1.0
 */
export const masterKeySource = (masterKey: MasterKey): string =>
  masterKey.source === "environment"
    ? "master key: from ACCORD_MASTER_KEY"
    : masterKey.source === "ephemeral"
    ? "master key: generated for this process (in-memory data directory)"
    : `master key: ${masterKey.path} (${masterKey.source === "created" ? "created" : "existing"})`

/**
 * A key file others can read, said as soon as the key is resolved.
 *
 * @since 0.1.0
 */
export const masterKeyWarnings = (masterKey: MasterKey): StartupLines => ({
  info: [],
  warnings: masterKey.warning === undefined ? [] : [masterKey.warning]
})

/**
 * @since 0.1.0
 */
export const insecureEndpointsWarning: string =
  "ACCORD_ALLOW_INSECURE_ENDPOINTS IS ON: http:// and loopback connector endpoints are accepted " +
  "(other private addresses stay refused). For local development and tests only; never in production."

/**
 * Said once the server listens: the master key's source, and the endpoint policy when it is open.
 *
 * @since 0.1.0
 */
export const listening = (config: AccordConfig, masterKey: MasterKey): StartupLines => ({
  info: [masterKeySource(masterKey)],
  warnings: config.allowInsecureEndpoints ? [insecureEndpointsWarning] : []
})

/**
 * What bootstrapping did; a revoked bootstrap key stays revoked, and that deserves a warning.
 *
 * @since 0.1.0
 */
export const bootstrapped = (workspaceId: string, outcome: BootstrapOutcome): StartupLines => ({
  info: [
    `bootstrap: workspace ${workspaceId} ${outcome.workspaceCreated ? "created" : "present"}, admin key ${outcome.adminKey}`
  ],
  warnings: outcome.adminKey === "revoked" ? ["bootstrap: ACCORD_BOOTSTRAP_ADMIN_KEY was revoked and is not restored"] : []
})

/**
 * Why bootstrapping stopped the start.
 *
 * @since 0.1.0
 */
export const bootstrapFailure = (error: StorageError | BootstrapKeyConflict): string =>
  error._tag === "StorageError" ? `bootstrap: ${error.message}` : error.message

/**
 * Why the listener could not be opened.
 *
 * @since 0.1.0
 */
export const listenFailure = (config: AccordConfig, cause: unknown): string =>
  `cannot listen on ${config.host}:${config.port}: ${cause instanceof Error ? cause.message : "unknown error"}`

/**
 * A failed start in plain lines (a configuration problem is not a crash, so no stack trace): a
 * heading, then one indented line per problem.
 *
 * @since 0.1.0
 */
export const startFailure = (failure: InvalidConfig | { readonly _tag: "StartupError"; readonly reason: string }): ReadonlyArray<string> =>
  failure._tag === "InvalidConfig"
    ? ["Accord cannot start: invalid configuration", ...failure.problems.map((line) => `  - ${line}`)]
    : ["Accord cannot start", `  - ${failure.reason}`]

/**
 * The last line of a server that was started and then stopped (SIGTERM or SIGINT): everything it
 * started has been drained and closed.
 *
 * @since 0.1.0
 */
export const stopped: string = "stopped"
