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
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { type CapabilityEvidence, CapabilityRegistry, capabilityValidityMillis } from "../ports/CapabilityRegistry.ts"
import {
  type Connection,
  type ConnectionRevision,
  ConnectionStore,
  type RevisionState
} from "../ports/ConnectionStore.ts"
import { Crypto } from "../ports/Crypto.ts"
import type { PaymentMode } from "../protocol/messages/Common.ts"
import { type HandshakeAck, type HandshakeRequest, HandshakeAck as HandshakeAckSchema } from "../protocol/messages/Handshake.ts"
import type { NonceStore } from "../ports/NonceStore.ts"
import { connectorSecretRef, SecretVault } from "../ports/SecretVault.ts"
import { encodeBody, freshNonce, headerNames, importSigningKeys, protocolVersion, sign } from "../protocol/Signing.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { formatTimestamp } from "../protocol/Timestamp.ts"
import { Transactor } from "../ports/Transactor.ts"
import { makeVerifier, type VerificationError } from "../protocol/Verification.ts"
import { ConnectorTransport, type TransportFailureReason } from "../ports/ConnectorTransport.ts"
import { currentCapabilities } from "./Capability.ts"
import { activeRevision, pendingRevision } from "./Revisions.ts"

/**
 * How long the service waits for a handshake response ("connector request time-out value: not
 * shown").
 *
 * @since 0.1.0
 */
export const defaultHandshakeTimeoutMillis = 10_000

/**
 * Why a check failed, as a stable code (answered by `POST /connector/check` and kept as the last check):
 *
 * - `secrets_missing`, `secrets_unreadable`: the revision's secrets are not (both) in the vault, or
 *   cannot be opened with the master key;
 * - transport: `endpoint_refused` (an address not allowed, D10), `dns_failed`, `connect_failed`,
 *   `timeout`, `connection_reset`, `response_too_large`;
 * - `redirect` (a 3xx, never followed), `unexpected_status` (anything but 200);
 * - verification of the response: `unsupported_version`, `invalid_timestamp`, `stale_response`,
 *   `future_response`, `invalid_nonce`, `replayed_nonce`, `invalid_signature`, `malformed_response`
 *   (not UTF-8 JSON), `invalid_ack` (not exactly the `handshake_ack` shape);
 * - `challenge_mismatch`, `connection_mismatch`, `workspace_mismatch`: the ack echoes another value;
 * - `revision_superseded`: the revision was superseded or replaced while the handshake ran.
 *
 * @since 0.1.0
 */
export type CheckProblem =
  | "secrets_missing"
  | "secrets_unreadable"
  | "endpoint_refused"
  | "dns_failed"
  | "connect_failed"
  | "timeout"
  | "connection_reset"
  | "response_too_large"
  | "redirect"
  | "unexpected_status"
  | "unsupported_version"
  | "invalid_timestamp"
  | "stale_response"
  | "future_response"
  | "invalid_nonce"
  | "replayed_nonce"
  | "invalid_signature"
  | "malformed_response"
  | "invalid_ack"
  | "challenge_mismatch"
  | "connection_mismatch"
  | "workspace_mismatch"
  | "revision_superseded"

/**
 * Why a successful handshake's payment capability proof was refused (the handshake still succeeds,
 * but the proof enables nothing and the previous modes are removed).
 *
 * @since 0.1.0
 */
export type CapabilityProblem = "capability_revision_mismatch"

/**
 * The outcome of one check. `state` is the checked revision's state afterwards (`active` on
 * success); `paymentModes` are the modes currently enabled for the connection (evidence still valid
 * and bound to the active revision).
 *
 * @since 0.1.0
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
 *
 * @since 0.1.0
 */
export class ConnectorNotConfigured extends Schema.TaggedError<ConnectorNotConfigured>()("ConnectorNotConfigured", {}) {
  override get message(): string {
    return "no connector endpoint is registered for this workspace"
  }
}

/**
 * @since 0.1.0
 */
export interface CheckOptions {
  /** The handshake time-out; `defaultHandshakeTimeoutMillis` when absent. */
  readonly timeoutMillis?: number
}

/**
 * The services a check runs on.
 *
 * @since 0.1.0
 */
export type CheckServices =
  | ConnectionStore
  | SecretVault
  | CapabilityRegistry
  | ConnectorTransport
  | Crypto
  | NonceStore
  | Transactor

/**
 * The nonce space of a connection's handshake responses: one per connection and direction, as the
 * dispatcher's `dispatch_response:{connectionId}` (a customer's nonces are only compared with that
 * customer's).
 *
 * @since 0.1.0
 */
export const handshakeNonceScope = (connectionId: string): string => `handshake_response:${connectionId}`

/**
 * The provider connection generation of a proof. The service holds no provider connection of its
 * own, so the connected account (its reference hash) and the environment identify it: a proof naming
 * another account or environment is another generation, and replaces the previous evidence.
 *
 * @since 0.1.0
 */
export const providerConnectionGeneration = (proof: {
  readonly connectedAccountReferenceHash: string
  readonly livemode: boolean
}): string => `${proof.livemode ? "live" : "test"}:${proof.connectedAccountReferenceHash}`

const transportProblems: Readonly<Record<TransportFailureReason, CheckProblem>> = {
  refused_address: "endpoint_refused",
  dns: "dns_failed",
  connect: "connect_failed",
  timeout: "timeout",
  reset: "connection_reset",
  response_too_large: "response_too_large"
}

const verificationProblem = (error: VerificationError): CheckProblem => {
  switch (error._tag) {
    case "UnsupportedVersion":
      return "unsupported_version"
    case "InvalidTimestamp":
      return "invalid_timestamp"
    case "StaleTimestamp":
      return "stale_response"
    case "FutureTimestamp":
      return "future_response"
    case "InvalidNonce":
      return "invalid_nonce"
    case "ReplayedNonce":
      return "replayed_nonce"
    case "InvalidSignature":
      return "invalid_signature"
    case "MalformedBody":
      return "malformed_response"
    case "InvalidShape":
      return "invalid_ack"
  }
}

/** A verified acknowledgement and the fingerprint of the response body that carried it. */
interface Acknowledged {
  readonly ack: HandshakeAck
  readonly fingerprint: string
}

/**
 * Sends the handshake for `revision` and verifies the answer. Fails only with `StorageError`; every
 * other failure is the `CheckProblem` on the left.
 */
const handshake = (
  connection: Connection,
  revision: ConnectionRevision,
  options: CheckOptions
): Effect.Effect<Either.Either<Acknowledged, CheckProblem>, StorageError, CheckServices> =>
  Effect.gen(function*() {
    const vault = yield* SecretVault
    const refs = {
      actionSigning: connectorSecretRef(connection.connectionId, revision.revision, "actionSigning"),
      completion: connectorSecretRef(connection.connectionId, revision.revision, "completion")
    }
    const secrets = yield* Effect.all({ actionSigning: vault.get(refs.actionSigning), completion: vault.get(refs.completion) })
      .pipe(Effect.catchTag("OpenFailed", () => Effect.succeed(undefined)))
    if (secrets === undefined) return Either.left("secrets_unreadable" as const)
    if (Option.isNone(secrets.actionSigning) || Option.isNone(secrets.completion)) {
      return Either.left("secrets_missing" as const)
    }
    const keys = yield* importSigningKeys({
      actionSigning: secrets.actionSigning.value,
      completion: secrets.completion.value
    })

    const nonce = yield* freshNonce
    const request: HandshakeRequest = {
      challenge: nonce,
      connectionId: connection.connectionId,
      protocolVersion,
      sentAt: formatTimestamp(yield* Clock.currentTimeMillis),
      type: "service.customer_action.handshake",
      workspaceId: connection.workspaceId
    }
    const body = encodeBody(request)
    const signed = yield* sign({ purpose: "handshake_request", keys, body, nonce })
    const sent = yield* Effect.either((yield* ConnectorTransport).post({
      url: revision.endpoint,
      headers: { ...signed, [headerNames.connectionRevision]: String(revision.revision) },
      body,
      timeoutMillis: options.timeoutMillis ?? defaultHandshakeTimeoutMillis
    }))
    if (Either.isLeft(sent)) return Either.left(transportProblems[sent.left.reason])
    const response = sent.right
    if (response.status >= 300 && response.status < 400) return Either.left("redirect" as const)
    if (response.status !== 200) return Either.left("unexpected_status" as const)

    const verifier = yield* makeVerifier
    const verified = yield* Effect.either(verifier.verifyAndDecode(HandshakeAckSchema, {
      purpose: "handshake_response",
      keys,
      headers: response.headers,
      body: response.body,
      nonceScope: handshakeNonceScope(connection.connectionId)
    }))
    if (Either.isLeft(verified)) {
      if (verified.left._tag === "StorageError") return yield* verified.left
      return Either.left(verificationProblem(verified.left))
    }
    const ack = verified.right.body
    if (ack.challenge !== nonce) return Either.left("challenge_mismatch" as const)
    if (ack.connectionId !== connection.connectionId) return Either.left("connection_mismatch" as const)
    if (ack.workspaceId !== connection.workspaceId) return Either.left("workspace_mismatch" as const)
    const fingerprint = yield* Effect.flatMap(Crypto, (crypto) => crypto.sha256Hex(response.body))
    return Either.right({ ack, fingerprint })
  })

/**
 * Replaces the connection's capability evidence with what a successful handshake proved.
 */
const recordCapabilities = (
  connectionId: string,
  revision: number,
  acknowledged: Acknowledged,
  now: number
): Effect.Effect<CapabilityProblem | "revision_superseded" | null, StorageError, CapabilityRegistry> =>
  Effect.gen(function*() {
    const registry = yield* CapabilityRegistry
    const proof = acknowledged.ack.paymentCapabilities
    // The store never lets an older revision's result clear or replace a newer revision's evidence:
    // a slow check of a revision replaced meanwhile changes nothing.
    if (proof === undefined) {
      yield* registry.clear(connectionId, revision)
      return null
    }
    if (proof.connectionRevision !== revision) {
      yield* registry.clear(connectionId, revision)
      return "capability_revision_mismatch"
    }
    const evidence: CapabilityEvidence = {
      connectionId,
      revision,
      modes: proof.modes,
      livemode: proof.livemode,
      connectedAccountReferenceHash: proof.connectedAccountReferenceHash,
      responseFingerprint: acknowledged.fingerprint,
      providerConnectionGeneration: providerConnectionGeneration(proof),
      recordedAt: now,
      expiresAt: now + capabilityValidityMillis
    }
    // An exact replay (same response fingerprint) changes nothing, `expiresAt` included.
    const recorded = yield* registry.record(evidence)
    return recorded === "older_revision" ? "revision_superseded" : null
  })

const reload = (connectionId: string): Effect.Effect<Option.Option<Connection>, StorageError, ConnectionStore> =>
  Effect.flatMap(ConnectionStore, (store) => store.getById(connectionId))

/**
 * Checks one revision of a connection (see the module documentation). Only a storage failure fails
 * the effect; every other outcome is a `CheckResult`.
 *
 * @since 0.1.0
 */
export const checkRevision = (
  connection: Connection,
  revision: ConnectionRevision,
  options: CheckOptions = {}
): Effect.Effect<CheckResult, StorageError, CheckServices> =>
  Effect.gen(function*() {
    const store = yield* ConnectionStore
    const { connectionId } = connection
    const exchanged = yield* handshake(connection, revision, options)
    const now = yield* Clock.currentTimeMillis

    let problem: CheckProblem | CapabilityProblem | null = Either.isLeft(exchanged) ? exchanged.left : null
    if (Either.isRight(exchanged)) {
      // Pending: activate exactly this revision, only while it is still the newest pending one.
      // Active: it must still be the active one before its evidence may replace anything.
      const current = yield* reload(connectionId)
      const stillActive = revision.state === "active" &&
        Option.exists(current, (c) => activeRevision(c)?.revision === revision.revision)
      const activated = revision.state === "pending" && (yield* (yield* Transactor).withTransaction(Effect.gen(function*() {
        if ((yield* store.activate({ connectionId, revision: revision.revision, now })) !== "activated") return false
        yield* store.appendAudit(connectionId, {
          at: now,
          revision: revision.revision,
          event: "activated",
          detail: { endpointHost: endpointHost(revision.endpoint) }
        })
        return true
      })))
      problem = activated || stillActive
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
      outcome === "succeeded" ? Effect.logInfo("connection check succeeded") : Effect.logWarning("connection check failed"),
      { connectionId, revision: revision.revision, state: result.state, problem: problem ?? "none" }
    )
    return result
  })

/**
 * `POST /connector/check`: checks the workspace's pending revision, else its active one.
 *
 * @since 0.1.0
 */
export const checkConnection = (
  workspaceId: string,
  options: CheckOptions = {}
): Effect.Effect<CheckResult, ConnectorNotConfigured | StorageError, CheckServices> =>
  Effect.gen(function*() {
    const connection = yield* Effect.flatMap(ConnectionStore, (store) => store.get(workspaceId))
    if (Option.isNone(connection)) return yield* new ConnectorNotConfigured()
    const target = pendingRevision(connection.value) ?? activeRevision(connection.value)
    if (target === undefined) return yield* new ConnectorNotConfigured()
    return yield* checkRevision(connection.value, target, options)
  })

/**
 * The host (and port, if any) of an endpoint URL: what the service shows and logs of an endpoint,
 * never its path (which may carry a customer's routing secret).
 *
 * @since 0.1.0
 */
export const endpointHost = (endpoint: string): string => {
  try {
    return new URL(endpoint).host
  } catch {
    return ""
  }
}
