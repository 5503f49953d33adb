/**
 * The action routes for trusted server callers and operators:
 * `POST /action-requests` (intake of an already-authorized action; 202 with `Location` naming the
 * request's own `GET`) and
 * `GET /action-requests?state&account_id&cursor&limit` (newest first, paged) and
 * `GET /action-requests/{id}` (its state and full history), relative to
 * `/api/admin/v1/workspaces/{workspaceId}`.
 *
 * `POST /action-requests` takes an optional `Idempotency-Key` header (`core/connector/IntakeKey.ts`;
 * callers should always send one): a retry under the same key with the same body answers the
 * original 202 body again, with `Idempotent-Replayed: true`.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { ActionLedger, type ActionRecord } from "../../../core/ports/ActionLedger.ts"
import { actionStates } from "../../../core/connector/ActionState.ts"
import type { ApiKeyRecord, ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import type { CapabilityRegistry } from "../../../core/ports/CapabilityRegistry.ts"
import type { ConnectionStore } from "../../../core/ports/ConnectionStore.ts"
import { ActionIntake } from "../../../core/connector/Action.ts"
import {
  type ConnectorNotActive,
  intake,
  type PaymentModeNotEnabled,
  type PaymentSnapshotMismatch
} from "../../../core/connector/Intake.ts"
import type { IdempotencyKeyReused, InvalidIdempotencyKey } from "../../../core/connector/IntakeKey.ts"
import type { Revalidation, RevalidationFailed } from "../../../core/connector/Revalidation.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import type { StorageError } from "../../../core/ports/StorageError.ts"
import { formatTimestamp } from "../../../core/protocol/Timestamp.ts"
import { NotFound } from "../../../core/protocol/NotFound.ts"
import { canonicalUuid } from "../../../core/protocol/Uuid.ts"
import { adminOnly, guarded, guardedAs } from "../Auth.ts"
import { readJson } from "../Body.ts"
import * as Api from "../api/Api.ts"
import type * as Problem from "../Problem.ts"
import { json as answer, jsonResponse as json, toResponse } from "../Answer.ts"
import { adminPrefix } from "../Paths.ts"
import { encodeTimeCursor, type InvalidQuery, listQuery, oneOf, pageOf, timeCursor, validQuery } from "../Paging.ts"

/**
 * What the action-request routes need: the ledger, the connection and its capabilities, key
 * authentication and revalidation.
 */
export type ActionsServices = ActionLedger | ConnectionStore | CapabilityRegistry | ApiKeyStore | Crypto | Revalidation

/**
 * What the routes fail with; `ErrorMap` answers the domain errors.
 */
export type ActionsError =
  | Problem.Problem
  | StorageError
  | ConnectorNotActive
  | PaymentSnapshotMismatch
  | PaymentModeNotEnabled
  | InvalidIdempotencyKey
  | IdempotencyKeyReused
  | RevalidationFailed
  | NotFound
  | InvalidQuery

const createAction = (maxBodyBytes: number) => (workspaceId: string, key: ApiKeyRecord) =>
  Effect.gen(function* () {
    const body = yield* readJson(ActionIntake, maxBodyBytes, {
      "": "must be a JSON object with accountId, action, actor and binding"
    })
    const idempotencyKey = (yield* HttpServerRequest.HttpServerRequest).headers["idempotency-key"]
    const { actionRequestId, replayed, state } = yield* intake(workspaceId, body, {
      idempotencyKey,
      authorizedBy: { kind: "api_key", id: key.id }
    })
    const reply = answer({ actionRequestId, state }, 202)
    // Where the new action request's state and history are read (RFC 9110 §10.2.2); a replay says so.
    const location = { location: `${adminPrefix}/${workspaceId}/action-requests/${actionRequestId}` }
    return toResponse({
      ...reply,
      headers: { ...reply.headers, ...location, ...(replayed ? { "idempotent-replayed": "true" } : {}) }
    })
  })

/** An action request as listed, and as read without its history. */
const actionView = (r: ActionRecord) => {
  const ack = r.acknowledgement as { readonly errorCode?: string; readonly providerReferenceHash?: string } | null
  return {
    actionRequestId: r.actionRequestId,
    state: r.state,
    accountId: r.accountId,
    connectionId: r.connectionId,
    revision: r.revision,
    providerIdempotencyKey: r.providerIdempotencyKey,
    createdAt: formatTimestamp(r.createdAt),
    updatedAt: formatTimestamp(r.updatedAt),
    ...(ack?.errorCode !== undefined ? { errorCode: ack.errorCode } : {}),
    ...(ack?.providerReferenceHash !== undefined ? { providerReferenceHash: ack.providerReferenceHash } : {}),
    hasContinuation: r.sealedContinuation !== null
  }
}

const listActions = (workspaceId: string) =>
  Effect.gen(function* () {
    const query = yield* listQuery
    const state = oneOf(query, "state", actionStates)
    const after = timeCursor(query)
    yield* validQuery(query)
    const accountId = query.params.get("account_id")
    const rows = yield* (yield* ActionLedger).list({
      workspaceId,
      limit: query.limit + 1,
      ...(state !== undefined ? { state } : {}),
      ...(accountId !== null ? { accountId } : {}),
      ...(Option.isSome(after) ? { after: { createdAt: after.value.at, actionRequestId: after.value.id } } : {})
    })
    return json(pageOf(rows, query.limit, actionView, (r) => encodeTimeCursor(r.createdAt, r.actionRequestId)))
  })

const showAction = (workspaceId: string) =>
  Effect.gen(function* () {
    const id = canonicalUuid((yield* HttpRouter.params)["id"])
    const ledger = yield* ActionLedger
    const record = Option.isSome(id) ? yield* ledger.get(id.value) : Option.none()
    if (Option.isNone(record) || record.value.workspaceId !== workspaceId) {
      return yield* new NotFound({ resource: "action_request" })
    }
    const history = yield* ledger.history(record.value.actionRequestId)
    return json({
      ...actionView(record.value),
      history: history.map((h) => ({
        seq: h.seq,
        at: formatTimestamp(h.at),
        trigger: h.trigger,
        fromState: h.fromState,
        toState: h.toState,
        detail: h.detail
      }))
    })
  })

/**
 * The group's handlers, bound to the declaration (`api/ActionRequestsApi.ts`); admin keys only.
 * Raw: bodies are read by `Body.readJson`, and the list reads its query itself, after the guard.
 */
export const group = (maxBodyBytes: number) =>
  HttpApiBuilder.group(Api.api, "actionRequests", (handlers) =>
    handlers
      .handleRaw("createActionRequest", () => guardedAs(adminOnly)(createAction(maxBodyBytes)))
      .handleRaw("listActionRequests", () => guarded(adminOnly)(listActions))
      .handleRaw("getActionRequest", () => guarded(adminOnly)(showAction))
  )
