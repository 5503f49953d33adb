/**
 * The connection check (spec "Handshake request body", "Handshake response body", "Connection
 * revision lifecycle", "Payment capability evidence lifecycle").
 *
 * The service sends a signed handshake for one revision (the `handshake_request` purpose, the
 * revision header, `challenge` equal to the nonce) to that revision's endpoint. The response must
 * be HTTP 200, signed with that revision's action signing secret under `handshake_response`, fresh,
 * with an unused nonce, and "exactly" the `handshake_ack` shape echoing the challenge, the
 * connection and the workspace. Only then:
 *
 * - a pending revision is activated by compare-and-set: "a handshake for a revision that was
 *   superseded (concurrent or delayed) fails before it can activate or overwrite anything";
 * - the payment capability evidence is replaced: a valid proof ("proof `connectionRevision` must
 *   match the current revision") is recorded with the connector identity and revision, the response
 *   fingerprint and the provider connection generation; "a successful acknowledgement without proof"
 *   removes the previous modes, and "a generic successful handshake acknowledgement enables no
 *   Payment modes".
 *
 * Every check that concerns a still active or pending revision is recorded as the connection's last
 * check (see `ConnectionStore.recordCheck`).
 */ import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import {
  type Connection,
  type ConnectionRevision,
  ConnectionStore,
  type RevisionState
} from "../ports/ConnectionStore.ts"
import type { PaymentMode } from "../protocol/messages/Common.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { Transactor } from "../ports/Transactor.ts"
import { currentCapabilities } from "./Capability.ts"
import { type CapabilityProblem, recordCapabilities } from "./internal/capabilityEvidence.ts"
import { type CheckOptions, type CheckProblem, type CheckServices, handshake } from "./internal/handshake.ts"
import { activeRevision, pendingRevision } from "./Revisions.ts"

/**
 * The handshake time-out, the check's problem codes and options, the services it runs on and the
 * nonce space of handshake responses (`internal/handshake.ts`).
 */
export {
  type CheckOptions,
  type CheckProblem,
  type CheckServices,
  defaultHandshakeTimeoutMillis,
  handshakeNonceScope
} from "./internal/handshake.ts"

/**
 * Why a proof was refused, and the provider connection generation a proof is recorded under
 * (`internal/capabilityEvidence.ts`).
 */
export { type CapabilityProblem, providerConnectionGeneration } from "./internal/capabilityEvidence.ts"

/**
 * The outcome of one check. `state` is the checked revision's state afterwards (`active` on
 * success); `paymentModes` are the modes currently enabled for the connection (evidence still valid
 * and bound to the active revision).
 */
export interface CheckResult {
  readonly connectionId: string
  readonly revision: number
  readonly state: RevisionState
  readonly outcome: "succeeded" | "failed"
  readonly paymentModes: ReadonlyArray<PaymentMode>
  readonly problem: CheckProblem | CapabilityProblem | null
}

/**
 * The workspace has no connector, or no revision that can be checked.
 */
export class ConnectorNotConfigured extends Schema.TaggedError<ConnectorNotConfigured>()("ConnectorNotConfigured", {}) {
  override get message(): string {
    return "no connector endpoint is registered for this workspace"
  }
}

const reload = (connectionId: string): Effect.Effect<Option.Option<Connection>, StorageError, ConnectionStore> =>
  Effect.flatMap(ConnectionStore, (store) => store.getById(connectionId))

/**
 * Checks one revision of a connection (see the module documentation). Only a storage failure fails
 * the effect; every other outcome is a `CheckResult`.
 */
export const checkRevision = (
  connection: Connection,
  revision: ConnectionRevision,
  options: CheckOptions = {}
): Effect.Effect<CheckResult, StorageError, CheckServices> =>
  Effect.gen(function* () {
    const store = yield* ConnectionStore
    const { connectionId } = connection
    const exchanged = yield* handshake(connection, revision, options)
    const now = yield* Clock.currentTimeMillis

    let problem: CheckProblem | CapabilityProblem | null = Either.isLeft(exchanged) ? exchanged.left : null
    if (Either.isRight(exchanged)) {
      // Pending: activate exactly this revision, only while it is still the newest pending one.
      // Active: it must still be the active one before its evidence may replace anything.
      const current = yield* reload(connectionId)
      const stillActive =
        revision.state === "active" && Option.exists(current, (c) => activeRevision(c)?.revision === revision.revision)
      const activated =
        revision.state === "pending" &&
        (yield* (yield* Transactor).withTransaction(
          Effect.gen(function* () {
            if ((yield* store.activate({ connectionId, revision: revision.revision, now })) !== "activated")
              return false
            yield* store.appendAudit(connectionId, {
              at: now,
              revision: revision.revision,
              event: "activated",
              detail: { endpointHost: endpointHost(revision.endpoint) }
            })
            return true
          })
        ))
      problem =
        activated || stillActive
          ? yield* recordCapabilities(connectionId, revision.revision, exchanged.right, now)
          : "revision_superseded"
    }
    const outcome = problem === null || problem === "capability_revision_mismatch" ? "succeeded" : "failed"
    // Not recorded when the revision is no longer active or pending: a stale result overwrites nothing.
    yield* store.recordCheck(connectionId, { revision: revision.revision, at: now, outcome, problem })

    const after = Option.getOrElse(yield* reload(connectionId), () => connection)
    const evidence = yield* currentCapabilities(after, now)
    const result: CheckResult = {
      connectionId,
      revision: revision.revision,
      state: after.revisions.find((r) => r.revision === revision.revision)?.state ?? revision.state,
      outcome,
      paymentModes: Option.match(evidence, { onNone: () => [], onSome: (e) => e.modes }),
      problem
    }
    yield* Effect.annotateLogs(
      outcome === "succeeded"
        ? Effect.logInfo("connection check succeeded")
        : Effect.logWarning("connection check failed"),
      { connectionId, revision: revision.revision, state: result.state, problem: problem ?? "none" }
    )
    return result
  })

/**
 * `POST /connector/check`: checks the workspace's pending revision, else its active one.
 */
export const checkConnection = (
  workspaceId: string,
  options: CheckOptions = {}
): Effect.Effect<CheckResult, ConnectorNotConfigured | StorageError, CheckServices> =>
  Effect.gen(function* () {
    const connection = yield* Effect.flatMap(ConnectionStore, (store) => store.get(workspaceId))
    if (Option.isNone(connection)) return yield* new ConnectorNotConfigured()
    const target = pendingRevision(connection.value) ?? activeRevision(connection.value)
    if (target === undefined) return yield* new ConnectorNotConfigured()
    return yield* checkRevision(connection.value, target, options)
  })

/**
 * The host (and port, if any) of an endpoint URL: what the service shows and logs of an endpoint,
 * never its path (which may carry a customer's routing secret).
 */
export const endpointHost = (endpoint: string): string => {
  try {
    return new URL(endpoint).host
  } catch {
    return ""
  }
}
