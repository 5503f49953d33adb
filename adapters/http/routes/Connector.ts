/**
 * The connector administration routes (spec "Authentication" 8), under
 * `/api/admin/v1/workspaces/{workspaceId}`:
 *
 * - `PUT /connector` `{ endpoint, actionSigningSecret, completionSecret }` (admin key): a new
 *   pending revision, `201 { connectionId, revision, state: "pending" }`; secrets are never echoed;
 * - `POST /connector/check` (admin key): the handshake for the pending revision, else the active
 *   one, `200 { connectionId, revision, state, paymentModes, problem? }`: the check ran, and
 *   `problem` says why it failed (`state` is then the revision's unchanged state);
 * - `GET /connector` (admin or developer:read key): endpoint host, revisions and their states,
 *   current payment capabilities and the last check; never a secret or a full URL.
 *
 * Routes are declared relative to that path. Errors are problem details (core's errors through
 * `ErrorMap`): 400 `invalid_body` (wrong shape, unknown field), 401/403 (key),
 * 404 `connector_not_configured`, 422 with the rule's code (an endpoint rule from
 * `validateEndpoint`, or `secret_too_short`, `secret_too_long`, `secret_whitespace`,
 * `secrets_not_distinct`), 503 `storage_unavailable`.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import type { CapabilityEvidence } from "../../../core/ports/CapabilityRegistry.ts"
import { type Connection, ConnectionStore } from "../../../core/ports/ConnectionStore.ts"
import { register } from "../../../core/connector/Connection.ts"
import { currentCapabilities } from "../../../core/connector/Capability.ts"
import {
  checkConnection,
  type CheckServices,
  ConnectorNotConfigured,
  endpointHost
} from "../../../core/connector/ConnectionCheck.ts"
import { activeRevision, pendingRevision } from "../../../core/connector/Revisions.ts"
import type { Resolver } from "../../../core/connector/Endpoint.ts"
import type { SecretVault } from "../../../core/ports/SecretVault.ts"
import { formatTimestamp } from "../../../core/protocol/Timestamp.ts"
import type { Transactor } from "../../../core/ports/Transactor.ts"
import { adminOnly, adminOrDeveloper, guarded } from "../Auth.ts"
import { readJson } from "../Body.ts"
import * as Api from "../api/Api.ts"
import { jsonResponse as json } from "../Answer.ts"

/**
 * The connector routes' settings: the body limit and whether insecure (http, loopback) endpoints
 * are allowed.
 */
export interface ConnectorRouteOptions {
  readonly maxBodyBytes: number
  /** `ACCORD_ALLOW_INSECURE_ENDPOINTS`: accept `http` and loopback endpoints (development and tests). */
  readonly allowInsecureEndpoints: boolean
  /** The handshake time-out of `POST /connector/check`; the core default when absent. */
  readonly handshakeTimeoutMillis?: number
}

/**
 * What the connector routes need: the connection check's services, key authentication, the secret
 * vault, transactions and DNS.
 */
export type ConnectorServices = CheckServices | ApiKeyStore | SecretVault | Transactor | Resolver

/**
 * `PUT /connector` body: exactly these three fields. The secrets are `Redacted` from the moment
 * they are decoded.
 */
export const RegisterConnectorBody = Schema.Struct({
  endpoint: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2048)),
  actionSigningSecret: Schema.Redacted(Schema.String),
  completionSecret: Schema.Redacted(Schema.String)
})

/** Fixed wording, so that no field error can echo a received value (least of all a secret). */
const registerMessages = {
  "": "must be a JSON object with endpoint, actionSigningSecret and completionSecret",
  endpoint: "must be a URL string of 1 to 2048 characters",
  actionSigningSecret: "must be a string",
  completionSecret: "must be a string"
}

const registerConnector = (options: ConnectorRouteOptions) => (workspaceId: string) =>
  Effect.gen(function* () {
    const body = yield* readJson(RegisterConnectorBody, options.maxBodyBytes, registerMessages)
    const registered = yield* register(
      {
        workspaceId,
        endpoint: body.endpoint,
        secrets: { actionSigning: body.actionSigningSecret, completion: body.completionSecret }
      },
      { allowInsecure: options.allowInsecureEndpoints }
    )
    return json(registered, 201)
  })

const runCheck = (options: ConnectorRouteOptions) => (workspaceId: string) =>
  Effect.gen(function* () {
    const result = yield* checkConnection(
      workspaceId,
      options.handshakeTimeoutMillis === undefined ? {} : { timeoutMillis: options.handshakeTimeoutMillis }
    )
    return json({
      connectionId: result.connectionId,
      revision: result.revision,
      state: result.state,
      paymentModes: result.paymentModes,
      ...(result.problem !== null ? { problem: result.problem } : {})
    })
  })

const capabilityView = (evidence: CapabilityEvidence) => ({
  revision: evidence.revision,
  modes: evidence.modes,
  livemode: evidence.livemode,
  connectedAccountReferenceHash: evidence.connectedAccountReferenceHash,
  providerConnectionGeneration: evidence.providerConnectionGeneration,
  responseFingerprint: evidence.responseFingerprint,
  recordedAt: formatTimestamp(evidence.recordedAt),
  expiresAt: formatTimestamp(evidence.expiresAt)
})

const time = (at: number | null) => (at === null ? null : formatTimestamp(at))

/**
 * The `GET /connector` view of a connection: hosts only, never a path, query or secret.
 */
export const connectionView = (connection: Connection, capabilities: Option.Option<CapabilityEvidence>) => {
  const active = activeRevision(connection)
  const pending = pendingRevision(connection)
  const shown = active ?? pending ?? connection.revisions[0]
  return {
    connectionId: connection.connectionId,
    endpointHost: shown === undefined ? null : endpointHost(shown.endpoint),
    activeRevision: active?.revision ?? null,
    pendingRevision: pending?.revision ?? null,
    revisions: connection.revisions.map((r) => ({
      revision: r.revision,
      state: r.state,
      endpointHost: endpointHost(r.endpoint),
      createdAt: formatTimestamp(r.createdAt),
      activatedAt: time(r.activatedAt),
      retiredAt: time(r.retiredAt)
    })),
    paymentCapabilities: Option.match(capabilities, { onNone: () => null, onSome: capabilityView }),
    lastCheck:
      connection.lastCheck === null
        ? null
        : {
            revision: connection.lastCheck.revision,
            at: formatTimestamp(connection.lastCheck.at),
            outcome: connection.lastCheck.outcome,
            problem: connection.lastCheck.problem
          }
  }
}

const showConnector = (workspaceId: string) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const connection = yield* Effect.flatMap(ConnectionStore, (store) => store.get(workspaceId))
    if (Option.isNone(connection)) return yield* new ConnectorNotConfigured()
    return json(connectionView(connection.value, yield* currentCapabilities(connection.value, now)))
  })

/**
 * What the routes fail with; `ErrorMap` answers the domain errors.
 */
/**
 * The group's handlers, bound to the declaration (`api/ConnectorApi.ts`).
 */
export const group = (options: ConnectorRouteOptions) =>
  HttpApiBuilder.group(Api.api, "connector", (handlers) =>
    handlers
      .handleRaw("registerConnector", () => guarded(adminOnly)(registerConnector(options)))
      .handleRaw("checkConnector", () => guarded(adminOnly)(runCheck(options)))
      .handleRaw("getConnector", () => guarded(adminOrDeveloper)(showConnector))
  )
