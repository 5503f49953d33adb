/**
 * Feature gates, under `/api/admin/v1/workspaces/{workspaceId}`: create (admin keys), list and read
 * (admin or developer:read keys). Handled by `routes/FeatureGates.ts`.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { FeatureKey } from "../../../core/ingest/FeatureAccess.ts"
import { parseTimestamp } from "../../../core/protocol/Timestamp.ts"
import { Uuid } from "../../../core/protocol/Uuid.ts"
import {
  adminGuarded,
  adminPath,
  bodyProblems,
  declaring,
  notFound,
  page,
  pageParams,
  queryParam,
  UuidText
} from "./Common.ts"
import { featureGateExample, FeatureGateView } from "./EventsApi.ts"

/**
 * `POST /feature-gates` body.
 */
export const CreateGateBody = Schema.Struct({
  accountId: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256)),
  journeyId: Uuid,
  versionId: Uuid,
  featureKey: FeatureKey,
  startedAt: Schema.String.pipe(Schema.filter((s) => parseTimestamp(s) !== undefined || "an RFC 3339 timestamp"))
}).annotations({
  examples: [
    {
      accountId: "acct_42",
      journeyId: "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d",
      versionId: "2b3c4d5e-6f70-4812-a3b4-c5d6e7f8a9b0",
      featureKey: "exports.csv",
      startedAt: "2026-11-22T10:15:00.000Z"
    } as never
  ]
})

export const createFeatureGate = HttpApiEndpoint.post("createFeatureGate", "/feature-gates")
  .setPath(adminPath({}))
  .setPayload(CreateGateBody)
  .addSuccess(FeatureGateView, { status: 201 })
  .addError(bodyProblems[0])
  .addError(bodyProblems[1])
  .addError(bodyProblems[2])
  .annotate(OpenApi.Summary, "Create a feature gate awaiting access evidence (admin keys)")

export const listFeatureGates = HttpApiEndpoint.get("listFeatureGates", "/feature-gates")
  .setPath(adminPath({}))
  .setUrlParams(
    Schema.Struct({
      account_id: queryParam(Schema.String.annotations({ description: "only this account's gates" })),
      state: queryParam(Schema.Literal("checking", "unlocked")),
      ...pageParams
    })
  )
  .addSuccess(page(FeatureGateView, featureGateExample))
  .pipe(declaring("InvalidQuery"))
  .annotate(
    OpenApi.Summary,
    "The workspace's feature gates, newest first, filtered and paged (each settled against the evidence so far)"
  )

export const getFeatureGate = HttpApiEndpoint.get("getFeatureGate", "/feature-gates/:id")
  .setPath(adminPath({ id: UuidText }))
  .addSuccess(FeatureGateView)
  .addError(notFound("feature_gate"))
  .annotate(OpenApi.Summary, "A feature gate, settled against the evidence committed so far")

export const group = HttpApiGroup.make("featureGates")
  .add(createFeatureGate)
  .add(listFeatureGates)
  .add(getFeatureGate)
  .pipe(adminGuarded)
  .annotate(OpenApi.Title, "Feature gates")
  .annotate(
    OpenApi.Description,
    "A gate stays `checking` until an `entitlement_active` event for the same account, journey, version and feature, sent with a server ingest key after the journey began, unlocks it."
  )
