/**
 * The signed handshake exchange of a connection check and its problem mapping (spec "Handshake
 * request body", "Handshake response body"): "The response must be HTTP 200, signed with that
 * revision's action signing secret under `handshake_response`, fresh, with an unused nonce, and
 * exactly the `handshake_ack` shape echoing the challenge, the connection and the workspace."
 * Every other answer becomes a stable `CheckProblem`.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { CapabilityRegistry } from "../../ports/CapabilityRegistry.ts"
import type { Connection, ConnectionRevision, ConnectionStore } from "../../ports/ConnectionStore.ts"
import { Crypto } from "../../ports/Crypto.ts"
import {
  type HandshakeAck,
  type HandshakeRequest,
  HandshakeAck as HandshakeAckSchema
} from "../../protocol/messages/Handshake.ts"
import type { NonceStore } from "../../ports/NonceStore.ts"
import { connectorSecretRef, SecretVault } from "../../ports/SecretVault.ts"
import {
  encodeBody,
  freshNonce,
  headerNames,
  importSigningKeys,
  protocolVersion,
  sign
} from "../../protocol/Signing.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { formatTimestamp } from "../../protocol/Timestamp.ts"
import type { Transactor } from "../../ports/Transactor.ts"
import { makeVerifier, type VerificationError } from "../../protocol/Verification.ts"
import * as Metrics from "../../telemetry/Metrics.ts"
import { ConnectorTransport, type TransportFailureReason } from "../../ports/ConnectorTransport.ts"

/**
 * How long the service waits for a handshake response ("connector request time-out value: not
 * shown").
 */
export const defaultHandshakeTimeoutMillis = 10_000

/**
 * Why a check failed, as a stable code (answered by `POST /connector/check` and kept as the last check):
 *
 * - `secrets_missing`, `secrets_unreadable`: the revision's secrets are not (both) in the vault, or
 *   cannot be opened with the master key;
 * - transport: `endpoint_refused` (a non-public address), `dns_failed`, `connect_failed`,
 *   `timeout`, `connection_reset`, `response_too_large`;
 * - `redirect` (a 3xx, never followed), `unexpected_status` (anything but 200);
 * - verification of the response: `unsupported_version`, `invalid_timestamp`, `stale_response`,
 *   `future_response`, `invalid_nonce`, `replayed_nonce`, `invalid_signature`, `malformed_response`
 *   (not UTF-8 JSON), `invalid_ack` (not exactly the `handshake_ack` shape);
 * - `challenge_mismatch`, `connection_mismatch`, `workspace_mismatch`: the ack echoes another value;
 * - `revision_superseded`: the revision was superseded or replaced while the handshake ran.
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

export interface CheckOptions {
  /** The handshake time-out; `defaultHandshakeTimeoutMillis` when absent. */
  readonly timeoutMillis?: number
}

/**
 * The services a check runs on.
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
 */
export const handshakeNonceScope = (connectionId: string): string => `handshake_response:${connectionId}`

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

/**
 * A verified acknowledgement and the fingerprint of the response body that carried it.
 */
export interface Acknowledged {
  readonly ack: HandshakeAck
  readonly fingerprint: string
}

/**
 * Sends the handshake for `revision` and verifies the answer. Fails only with `StorageError`; every
 * other failure is the `CheckProblem` on the left.
 */
export const handshake = (
  connection: Connection,
  revision: ConnectionRevision,
  options: CheckOptions
): Effect.Effect<Either.Either<Acknowledged, CheckProblem>, StorageError, CheckServices> =>
  Effect.gen(function* () {
    const vault = yield* SecretVault
    const refs = {
      actionSigning: connectorSecretRef(connection.connectionId, revision.revision, "actionSigning"),
      completion: connectorSecretRef(connection.connectionId, revision.revision, "completion")
    }
    const secrets = yield* Effect.all({
      actionSigning: vault.get(refs.actionSigning),
      completion: vault.get(refs.completion)
    }).pipe(Effect.catchTag("OpenFailed", () => Effect.succeed(undefined)))
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
    const sent = yield* Effect.either(
      (yield* ConnectorTransport).post({
        url: revision.endpoint,
        headers: { ...signed, [headerNames.connectionRevision]: String(revision.revision) },
        body,
        timeoutMillis: options.timeoutMillis ?? defaultHandshakeTimeoutMillis
      })
    )
    if (Either.isLeft(sent)) return Either.left(transportProblems[sent.left.reason])
    const response = sent.right
    if (response.status >= 300 && response.status < 400) return Either.left("redirect" as const)
    if (response.status !== 200) return Either.left("unexpected_status" as const)

    const verifier = yield* makeVerifier
    const verified = yield* Effect.either(
      verifier.verifyAndDecode(HandshakeAckSchema, {
        purpose: "handshake_response",
        keys,
        headers: response.headers,
        body: response.body,
        nonceScope: handshakeNonceScope(connection.connectionId)
      })
    )
    if (Either.isLeft(verified)) {
      if (verified.left._tag === "StorageError") return yield* verified.left
      yield* Metrics.customerResponseRefused("handshake", verified.left._tag)
      return Either.left(verificationProblem(verified.left))
    }
    const ack = verified.right.body
    if (ack.challenge !== nonce) return Either.left("challenge_mismatch" as const)
    if (ack.connectionId !== connection.connectionId) return Either.left("connection_mismatch" as const)
    if (ack.workspaceId !== connection.workspaceId) return Either.left("workspace_mismatch" as const)
    const fingerprint = yield* Effect.flatMap(Crypto, (crypto) => crypto.sha256Hex(response.body))
    return Either.right({ ack, fingerprint })
  })
