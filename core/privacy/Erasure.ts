/**
 * Erasure with suppression: an administrator removes what the service holds about an account or a
 * user, and a suppression stops later events for that subject from recreating it
 * (docs/decisions.md, "Erasure and suppression").
 *
 * One erasure is one transaction over every store: the subject's events (rollups are events, so
 * their contributions go with them), the profile facts, logins and user records, the account's
 * feature gates, runtime sessions and approvals, and the suppression with its audit (who, when,
 * what was removed). The connector's audit trail survives: the subject's actions keep their ids,
 * states, history and acknowledgements, with the subject's id replaced by its {@link pseudonym}
 * and the other personal fields removed (`ActionLedger.redactSubject`). An action still in flight
 * cannot be redacted without changing what the service sends for it, so the erasure is refused
 * (`OpenActions`) until it settles.
 *
 * The subject is added to this process's suppression set before anything is removed, so no event
 * accepted here from then on recreates it; the addition is taken back if the erasure fails.
 * Erasing a subject again runs again (removing whatever arrived in between, such as an event
 * another process accepted before its set was refreshed) and answers the same suppression.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ActionState } from "../connector/ActionState.ts"
import { Suppressions } from "../ingest/Suppression.ts"
import { AccountProfileStore } from "../ports/AccountProfileStore.ts"
import { ActionLedger } from "../ports/ActionLedger.ts"
import { ApprovalStore } from "../ports/ApprovalStore.ts"
import { Crypto } from "../ports/Crypto.ts"
import { EventStore } from "../ports/EventStore.ts"
import { FeatureGateStore } from "../ports/FeatureGateStore.ts"
import { RuntimeSessionStore } from "../ports/RuntimeSessionStore.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { type Subject, type Suppression, SuppressionStore } from "../ports/SuppressionStore.ts"
import { Transactor } from "../ports/Transactor.ts"

/**
 * The states of an action the service may still send something for without a new trigger (a
 * delivery, a retry, an evidence watch): redacting it would change what is sent, so an erasure
 * waits until none of the subject's actions is in one of them.
 */
export const inFlightStates: ReadonlyArray<ActionState> = [
  "dispatching",
  "accepted",
  "unknown_outcome",
  "pending",
  "evidence_overdue"
]

/**
 * The erasure is refused: `count` of the subject's actions are still in flight (see
 * {@link inFlightStates}). Nothing was removed.
 */
export class OpenActions extends Schema.TaggedError<OpenActions>()("OpenActions", { count: Schema.Number }) {}

/**
 * What replaces an erased subject's id in the actions kept for the audit trail: `erased:` and the
 * lowercase hex SHA-256 of the JSON string of the id (as `connectedAccountReferenceHash` hashes an
 * account id), so an operator who holds the id can still find its actions, and nobody can read it
 * from them.
 */
export const pseudonym = (subject: Subject): Effect.Effect<string, never, Crypto> =>
  Effect.flatMap(Crypto, (crypto) => crypto.sha256Hex(JSON.stringify(subject.id))).pipe(
    Effect.map((hex) => `erased:${hex}`)
  )

/** What an erasure needs: every store holding subject data, the suppressions and a digest. */
export type ErasureServices =
  | EventStore
  | AccountProfileStore
  | FeatureGateStore
  | RuntimeSessionStore
  | ApprovalStore
  | ActionLedger
  | SuppressionStore
  | Transactor
  | Suppressions
  | Crypto

/**
 * Erases the subject's data in the workspace and records its suppression (see module doc); `by`
 * names who asked (`api_key:<id>`). Answers the suppression as it now is.
 */
export const erase = (options: {
  readonly workspaceId: string
  readonly subject: Subject
  readonly by: string
}): Effect.Effect<Suppression, OpenActions | StorageError, ErasureServices> =>
  Effect.gen(function* () {
    const { by, subject, workspaceId } = options
    const at = yield* Clock.currentTimeMillis
    const replacement = yield* pseudonym(subject)
    const [events, profiles, gates, sessions, approvals, ledger, suppressionStore, transactor] = yield* Effect.all([
      EventStore,
      AccountProfileStore,
      FeatureGateStore,
      RuntimeSessionStore,
      ApprovalStore,
      ActionLedger,
      SuppressionStore,
      Transactor
    ])
    const takeBack = (yield* Suppressions).add(workspaceId, subject)
    return yield* transactor
      .withTransaction(
        Effect.gen(function* () {
          const actions = yield* ledger.redactSubject({
            workspaceId,
            subject,
            pseudonym: replacement,
            openStates: inFlightStates
          })
          if (actions._tag === "Open") return yield* new OpenActions({ count: actions.count })
          const erased = yield* events.eraseSubject(workspaceId, subject)
          const profile = yield* profiles.eraseSubject({
            workspaceId,
            subject,
            userIds: [...new Set(erased.flatMap((event) => (event.userId === null ? [] : [event.userId])))],
            sourceEventIds: erased.map((event) => event.id)
          })
          const featureGates = subject.kind === "account" ? yield* gates.eraseAccount(workspaceId, subject.id) : 0
          const runtimeSessions = yield* sessions.eraseSubject(workspaceId, subject)
          const removedApprovals = yield* approvals.eraseSubject(workspaceId, subject)
          return yield* suppressionStore.record({
            workspaceId,
            subject,
            at,
            by,
            removed: {
              events: erased.length,
              ...profile,
              featureGates,
              runtimeSessions,
              approvals: removedApprovals,
              actionsRedacted: actions.count
            }
          })
        })
      )
      .pipe(Effect.onError(() => Effect.sync(takeBack)))
  })
