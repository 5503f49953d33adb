/**
 * Action requests, under `/api/admin/v1/workspaces/{workspaceId}`; admin keys only. Handled by
 * `routes/ActionRequests.ts`.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { ActionIntake } from "../../../core/connector/Action.ts"
import { actionStates } from "../../../core/connector/ActionState.ts"
import {
  adminGuarded,
  adminPath,
  bodyProblems,
  declaring,
  notFound,
  page,
  pageParams,
  queryParam,
  responseHeaders,
  Timestamp,
  UuidText
} from "./Common.ts"

const ActionState = Schema.Literal(...actionStates)

/**
 * `POST /action-requests` body, with its example.
 */
export const ActionIntakeBody = ActionIntake.annotations({
  description:
    "The execution request's caller-owned parts; for Payment actions also the price and version snapshot taken at authorization.",
  examples: [
    {
      accountId: "acct_42",
      action: {
        id: "5d4c3b2a-1908-4f7e-8d6c-5b4a39281706",
        key: "extend_trial_14",
        operation: {
          family: "extend_trial",
          extensionDays: 14,
          trialRef: { entityKey: "sub_1", entityKind: "subscription", version: 1 }
        },
        safeTerms: { confirmation: "Extend your trial by 14 days?", label: "Extend trial" }
      },
      actor: { authority: "billing_owner", roleKey: "owner", subjectId: "user_7" },
      binding: {
        decisionId: "8e7d6c5b-4a39-4281-b706-f5e4d3c2b1a0",
        journeyId: "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d",
        offerId: "0a1b2c3d-4e5f-4607-8819-2a3b4c5d6e7f",
        publishedVersionId: "2b3c4d5e-6f70-4812-a3b4-c5d6e7f8a9b0"
      }
    } as never
  ]
})

const summaryExample = {
  actionRequestId: "3c2b1a09-8f7e-4d6c-a5b4-c3d2e1f0a9b8",
  state: "dispatching" as const,
  accountId: "acct_42",
  connectionId: "c0ffee00-1234-4abc-8def-0123456789ab",
  revision: 1,
  providerIdempotencyKey: "pva_a9bab1d429ffbcf6dde708bb255f03187f7775a33ff2049030f4dd4e8386bf5e",
  createdAt: "2026-11-22T10:15:30.000Z",
  updatedAt: "2026-11-22T10:15:30.000Z",
  hasContinuation: false
}

const summaryFields = {
  actionRequestId: UuidText,
  state: ActionState,
  accountId: Schema.String,
  connectionId: Schema.String,
  revision: Schema.Int,
  providerIdempotencyKey: Schema.String,
  createdAt: Timestamp,
  updatedAt: Timestamp,
  errorCode: Schema.optional(
    Schema.String.annotations({ description: "the customer's rejection code, when it rejected the action" })
  ),
  providerReferenceHash: Schema.optional(Schema.String),
  hasContinuation: Schema.Boolean
}

export const createActionRequest = HttpApiEndpoint.post("createActionRequest", "/action-requests")
  .setPath(adminPath({}))
  .setHeaders(
    Schema.Struct({
      "idempotency-key": Schema.optional(
        Schema.String.annotations({
          description:
            "1 to 255 visible ASCII characters; a retry with the same key and body answers the original 202 again, with `Idempotent-Replayed: true`. Always send one."
        })
      )
    })
  )
  .setPayload(ActionIntakeBody)
  .addSuccess(
    Schema.Struct({ actionRequestId: UuidText, state: ActionState }).annotations({
      description: "Accepted for dispatch; `Location` names the request's own GET.",
      examples: [{ actionRequestId: summaryExample.actionRequestId, state: "dispatching" }]
    }),
    { status: 202 }
  )
  .addError(bodyProblems[0])
  .addError(bodyProblems[1])
  .addError(bodyProblems[2])
  .pipe(
    declaring(
      "InvalidIdempotencyKey",
      "ConnectorNotActive",
      "IdempotencyKeyReused",
      "PaymentModeNotEnabled",
      "RevalidationFailed",
      "PaymentSnapshotMismatch"
    )
  )
  .annotate(OpenApi.Summary, "Intake of an already-authorized action (202, with Location)")
  .annotate(
    OpenApi.Transform,
    responseHeaders(202, {
      location: { description: "the new action request's own GET", required: true },
      "idempotent-replayed": {
        description: "`true` when this answers a retry under the same Idempotency-Key and body again"
      }
    })
  )

export const listActionRequests = HttpApiEndpoint.get("listActionRequests", "/action-requests")
  .setPath(adminPath({}))
  .setUrlParams(
    Schema.Struct({
      state: queryParam(ActionState),
      account_id: queryParam(Schema.String.annotations({ description: "only this account's action requests" })),
      ...pageParams
    })
  )
  .addSuccess(page(Schema.Struct(summaryFields), summaryExample))
  .pipe(declaring("InvalidQuery"))
  .annotate(OpenApi.Summary, "The workspace's action requests, newest first, filtered by state and account, paged")

export const getActionRequest = HttpApiEndpoint.get("getActionRequest", "/action-requests/:id")
  .setPath(adminPath({ id: UuidText }))
  .addSuccess(
    Schema.Struct({
      ...summaryFields,
      history: Schema.Array(
        Schema.Struct({
          seq: Schema.Int,
          at: Timestamp,
          trigger: Schema.String,
          fromState: Schema.NullOr(Schema.String),
          toState: Schema.String,
          detail: Schema.Unknown
        })
      )
    }).annotations({
      examples: [
        {
          ...summaryExample,
          history: [
            {
              seq: 1,
              at: "2026-11-22T10:15:30.000Z",
              trigger: "intake",
              fromState: null,
              toState: "dispatching",
              detail: {}
            }
          ]
        }
      ]
    })
  )
  .addError(notFound("action_request"))
  .annotate(OpenApi.Summary, "An action request's state and full history")

export const group = HttpApiGroup.make("actionRequests")
  .add(createActionRequest)
  .add(listActionRequests)
  .add(getActionRequest)
  .pipe(adminGuarded)
  .annotate(OpenApi.Title, "Action requests")
  .annotate(
    OpenApi.Description,
    "Trusted server callers and operators dispatch already-authorized actions and follow them. Admin keys only."
  )
