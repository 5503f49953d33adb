/**
 * The connection scheduler (spec "Limits": "capability check schedule: every 10 minutes for active
 * or pending connections; checks older than 20 minutes are refreshed") and revision retirement
 * ("every action bound to an older revision has ended its reconciliation window: the old signing
 * and completion secrets are retired together"; "a partial historical credential write: treated as
 * an orphan and retired with its own immutable audit evidence").
 *
 * One round, every 10 minutes on the `Clock`:
 *
 * 1. every connection whose last check is older than 20 minutes (or missing) is checked: its active
 *    revision (which refreshes the payment capability evidence before its hour runs out) and its
 *    pending revision (which activates it once the customer answers);
 * 2. every `replaced` or `superseded` revision is considered for retirement:
 *    - with one or both secrets missing, it is an orphan and is retired at once (the secret still
 *      present is deleted) with an `orphan_retired` audit entry naming the missing secrets;
 *    - a `superseded` revision was never active, so no action is bound to it: it is retired at once;
 *    - a `replaced` revision is retired once the reconciliation window has passed since the later of
 *      its replacement and the last activity of any action bound to it
 *      (`ActionLedger.lastActivityOnRevision`), and never while an action bound to it is still on
 *      the delivery path (`dispatching` or `unknown_outcome` with a live dispatch item: retries do
 *      not update the action and run for 24 hours) or awaiting a reconciliation read
 *      (`ActionLedger.unfinishedOnRevision`).
 *    Retiring deletes both secrets, then marks the revision `retired`, then appends the audit entry,
 *    in one `Transactor` transaction (the same order makes an interrupted retirement an orphan that
 *    the next round finishes).
 *
 * A round never fails: a storage failure on one connection is logged and the round goes on.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { ActionLedger, type OpenWork } from "../ports/ActionLedger.ts"
import { type Connection, type ConnectionRevision, ConnectionStore } from "../ports/ConnectionStore.ts"
import { connectorSecretRef, SecretVault } from "../ports/SecretVault.ts"
import type { SecretName } from "../protocol/Signing.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { Transactor } from "../ports/Transactor.ts"
import { dispatchOutboxKind } from "./Action.ts"
import { type CheckOptions, type CheckResult, checkRevision, type CheckServices } from "./ConnectionCheck.ts"
import { activeRevision, pendingRevision } from "./Revisions.ts"

/**
 * "Every 10 minutes for active or pending connections."
 */
export const checkIntervalMillis = 10 * 60_000

/**
 * "Checks older than 20 minutes are refreshed."
 */
export const checkRefreshAfterMillis = 20 * 60_000

/**
 * The default reconciliation window (`ACCORD_RECONCILIATION_WINDOW`): how long after the last
 * activity of its actions a replaced revision's secrets are kept for completions and reconciliation
 * reads. 30 days covers card refund and dispute windows of common provider defaults.
 */
export const defaultReconciliationWindowMillis = 30 * 24 * 60 * 60_000

export interface MaintenanceOptions extends CheckOptions {
  readonly reconciliationWindowMillis: number
}

/**
 * What one round did, for logs and tests.
 */
export interface RoundSummary {
  readonly checks: ReadonlyArray<CheckResult>
  readonly retired: ReadonlyArray<{
    readonly connectionId: string
    readonly revision: number
    readonly orphan: boolean
  }>
}

/**
 * The services a round runs on.
 */
export type MaintenanceServices = CheckServices | ActionLedger | Transactor

const secretNames: ReadonlyArray<SecretName> = ["actionSigning", "completion"]

/**
 * Work that still needs a revision's secrets after the reconciliation window: a delivery that may
 * be retried (for up to 24 hours) without its action changing. A queued reconciliation read is not
 * counted: it is queued by a change of its action, so the window since the action's last activity
 * already covers it, and a read still queued after that window has outlived the reconciliation
 * window, the spec's condition for retiring the secrets.
 */
const unfinishedWork: ReadonlyArray<OpenWork> = [
  { kind: dispatchOutboxKind, whileIn: ["dispatching", "unknown_outcome"] }
]

const logFailure = (what: string, connectionId: string) => (error: StorageError) =>
  Effect.annotateLogs(Effect.logWarning(`${what} failed`), { connectionId, operation: error.operation })

/**
 * Checks every connection due for a check (see the module documentation).
 */
export const runDueChecks = (
  options: CheckOptions = {}
): Effect.Effect<ReadonlyArray<CheckResult>, never, CheckServices> =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const due = yield* Effect.flatMap(ConnectionStore, (store) =>
      store.dueForCheck(now - checkRefreshAfterMillis)
    ).pipe(Effect.catchAll((error) => Effect.as(logFailure("listing connections due for a check", "-")(error), [])))
    const results = yield* Effect.forEach(
      due,
      (connection) =>
        Effect.forEach(
          [activeRevision(connection), pendingRevision(connection)].filter((r) => r !== undefined),
          (revision) =>
            Effect.option(
              checkRevision(connection, revision, options).pipe(
                Effect.tapError(logFailure("scheduled connection check", connection.connectionId))
              )
            )
        ),
      { concurrency: 4 }
    )
    return results.flat().flatMap(Option.toArray)
  })

/** When a revision stopped being used: when a later revision was activated (or, never active, created). */
const endedAt = (connection: Connection, revision: ConnectionRevision): number => {
  const later = connection.revisions.filter((r) => r.revision > revision.revision)
  const activations = later.flatMap((r) => (r.activatedAt === null ? [] : [r.activatedAt]))
  return activations.length > 0 ? Math.min(...activations) : Math.min(...later.map((r) => r.createdAt))
}

const retireRevision = (
  connection: Connection,
  revision: ConnectionRevision,
  options: MaintenanceOptions,
  now: number
): Effect.Effect<Option.Option<{ readonly orphan: boolean }>, StorageError, MaintenanceServices> =>
  Effect.gen(function* () {
    const vault = yield* SecretVault
    const store = yield* ConnectionStore
    const { connectionId } = connection
    const ref = (name: SecretName) => connectorSecretRef(connectionId, revision.revision, name)
    // A secret that cannot be opened is still present: retiring it is what it needs.
    const present = yield* Effect.forEach(secretNames, (name) =>
      vault.get(ref(name)).pipe(
        Effect.map(Option.isSome),
        Effect.catchTag("OpenFailed", () => Effect.succeed(true))
      )
    )
    const missing = secretNames.filter((_, i) => !present[i])
    const orphan = missing.length > 0

    let detail: Record<string, unknown>
    if (orphan) {
      detail = { reason: "partial_credential_write", missingSecrets: missing }
    } else if (revision.state === "superseded") {
      detail = { reason: "superseded_before_activation" }
    } else {
      const lastActivity = yield* Effect.flatMap(ActionLedger, (ledger) =>
        ledger.lastActivityOnRevision(connectionId, revision.revision)
      )
      const since = Math.max(
        endedAt(connection, revision),
        Option.getOrElse(lastActivity, () => 0)
      )
      if (now < since + options.reconciliationWindowMillis) return Option.none()
      const unfinished = yield* Effect.flatMap(ActionLedger, (ledger) =>
        ledger.unfinishedOnRevision({ connectionId, revision: revision.revision, work: unfinishedWork })
      )
      if (unfinished > 0) return Option.none()
      detail = {
        reason: "reconciliation_window_elapsed",
        lastActionActivityAt: Option.getOrNull(lastActivity),
        reconciliationWindowMillis: options.reconciliationWindowMillis
      }
    }

    return yield* (yield* Transactor).withTransaction(
      Effect.gen(function* () {
        // Secrets first, then the state: an interruption in between leaves an orphan for the next round.
        const deleted = yield* Effect.forEach(secretNames, (name) => vault.retire(ref(name)))
        const retired = yield* store.retire({ connectionId, revision: revision.revision, now })
        if (!retired) return Option.none()
        yield* store.appendAudit(connectionId, {
          at: now,
          revision: revision.revision,
          event: orphan ? "orphan_retired" : "retired",
          detail: { ...detail, retiredSecrets: secretNames.filter((_, i) => deleted[i]) }
        })
        return Option.some({ orphan })
      })
    )
  })

/**
 * Retires every revision that is due (see the module documentation).
 */
export const retireRevisions = (
  options: MaintenanceOptions
): Effect.Effect<RoundSummary["retired"], never, MaintenanceServices> =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const connections = yield* Effect.flatMap(ConnectionStore, (store) => store.withRetirableRevisions).pipe(
      Effect.catchAll((error) => Effect.as(logFailure("listing retirable revisions", "-")(error), []))
    )
    const retired: Array<RoundSummary["retired"][number]> = []
    for (const connection of connections) {
      for (const revision of connection.revisions) {
        if (revision.state !== "replaced" && revision.state !== "superseded") continue
        const outcome = yield* Effect.option(
          retireRevision(connection, revision, options, now).pipe(
            Effect.tapError(logFailure("revision retirement", connection.connectionId))
          )
        )
        if (Option.isSome(outcome) && Option.isSome(outcome.value)) {
          retired.push({
            connectionId: connection.connectionId,
            revision: revision.revision,
            orphan: outcome.value.value.orphan
          })
          yield* Effect.annotateLogs(
            Effect.logInfo(
              outcome.value.value.orphan ? "orphaned connector secrets retired" : "connector secrets retired"
            ),
            { connectionId: connection.connectionId, revision: revision.revision }
          )
        }
      }
    }
    return retired
  })

/**
 * One round: due checks, then retirement.
 */
export const runRound = (options: MaintenanceOptions): Effect.Effect<RoundSummary, never, MaintenanceServices> =>
  Effect.gen(function* () {
    const checks = yield* runDueChecks(options)
    const retired = yield* retireRevisions(options)
    return { checks, retired }
  })

/**
 * Runs a round every 10 minutes on the `Clock`, forever, the first one 10 minutes after it starts;
 * `onRound` sees each summary (the server ignores it; tests wait on it).
 */
export const scheduler = (
  options: MaintenanceOptions & { readonly onRound?: (summary: RoundSummary) => Effect.Effect<void> }
): Effect.Effect<never, never, MaintenanceServices> =>
  runRound(options).pipe(
    Effect.tap((summary) => options.onRound?.(summary) ?? Effect.void),
    Effect.catchAllDefect((defect) => Effect.logError("connection maintenance round failed", defect)),
    Effect.schedule(Schedule.fixed(Duration.millis(checkIntervalMillis))),
    Effect.zipRight(Effect.never)
  )
