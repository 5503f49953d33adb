/**
 * The action routes for trusted server callers and operators (DESIGN "HTTP surface"):
 * `POST /action-requests` (intake of an already-authorized action) and
 * `GET /action-requests/{id}` (its state and full history).
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import type { ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import type { ConnectionStore } from "../../../core/ports/ConnectionStore.ts"
import { ActionIntake } from "../../../core/connector/Action.ts"
import { intake } from "../../../core/connector/Intake.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import { formatTimestamp } from "../../../core/protocol/Timestamp.ts"
import { authorize, storageUnavailable } from "../Auth.ts"
import { readJson } from "../Body.ts"
import { adminPrefix } from "../Paths.ts"
import * as Problem from "../Problem.ts"
import { jsonResponse as json } from "../Answer.ts"

/**
 * @since 0.1.0
 */
export type ActionsServices = ActionLedger | ConnectionStore | ApiKeyStore | Crypto


const asAdmin = Effect.flatMap(HttpRouter.params, (params) => {
  const workspaceId = params["workspaceId"] ?? ""
  return Effect.as(authorize({ workspaceId, scope: "admin" }), workspaceId)
})

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const createAction = (maxBodyBytes: number) =>
  Effect.gen(function*() {
    const workspaceId = yield* asAdmin
    const body = yield* readJson(ActionIntake, maxBodyBytes, { "": "must be a JSON object with accountId, action, actor and binding" })
    const created = yield* intake(workspaceId, body).pipe(
      Effect.catchTags({
        ConnectorNotActive: () =>
          Effect.fail(Problem.make(409, "connector_not_active", "the workspace has no active connector revision; register and check the connection first")),
        PaymentSnapshotMismatch: (e) =>
          Effect.fail(Problem.make(422, "payment_snapshot_mismatch", `the payment snapshot does not fit the action (${e.reason})`)),
        StorageError: (e) => Effect.fail(storageUnavailable(e))
      })
    )
    return json(created, 202)
  })

const showAction = Effect.gen(function*() {
  const workspaceId = yield* asAdmin
  const id = ((yield* HttpRouter.params)["id"] ?? "").toLowerCase()
  const ledger = yield* ActionLedger
  const record = uuidPattern.test(id) ? yield* ledger.get(id).pipe(Effect.mapError(storageUnavailable)) : Option.none()
  if (Option.isNone(record) || record.value.workspaceId !== workspaceId) {
    return yield* Problem.notFound("no such action request in this workspace")
  }
  const history = yield* ledger.history(id).pipe(Effect.mapError(storageUnavailable))
  const r = record.value
  const ack = r.acknowledgement as { readonly errorCode?: string; readonly providerReferenceHash?: string } | null
  return json({
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
    hasContinuation: r.sealedContinuation !== null,
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
 * @since 0.1.0
 */
export const routes = (maxBodyBytes: number) =>
<E, R>(router: HttpRouter.HttpRouter<E, R>) =>
  router.pipe(
    HttpRouter.post(`${adminPrefix}/:workspaceId/action-requests`, createAction(maxBodyBytes)),
    HttpRouter.get(`${adminPrefix}/:workspaceId/action-requests/:id`, showAction)
  )
