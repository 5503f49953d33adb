/**
 * Event retention of a workspace, under `/api/admin/v1/workspaces/{workspaceId}`; admin keys only.
 * Handled by `routes/Retention.ts` (docs/decisions.md, "Event retention").
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { maxRetentionDays } from "../../../core/ingest/Retention.ts"
import { adminGuarded, adminPath, bodyProblems } from "./Common.ts"

const RetentionDays = Schema.NullOr(Schema.Int.pipe(Schema.between(1, maxRetentionDays))).annotations({
  description: `how many days raw events are kept after they occurred (1 to ${maxRetentionDays}); null keeps them forever`
})

/** A retention setting as sent: the days, or null for forever. */
export const SetRetentionBody = Schema.Struct({ retentionDays: RetentionDays }).annotations({
  examples: [{ retentionDays: 90 }, { retentionDays: null }]
})

/** A workspace's retention as answered: what applies, and whether the workspace set it. */
export const RetentionView = Schema.Struct({
  retentionDays: RetentionDays,
  source: Schema.Literal("workspace", "server").annotations({
    description:
      "workspace: set for this workspace; server: the server's default (ACCORD_EVENT_RETENTION_DAYS) until one is set"
  })
}).annotations({ examples: [{ retentionDays: 400, source: "server" }] })

export const getRetention = HttpApiEndpoint.get("getRetention", "/retention")
  .setPath(adminPath({}))
  .addSuccess(RetentionView)
  .annotate(OpenApi.Summary, "How long the workspace keeps its raw events")

export const setRetention = HttpApiEndpoint.put("setRetention", "/retention")
  .setPath(adminPath({}))
  .setPayload(SetRetentionBody)
  .addSuccess(RetentionView)
  .addError(bodyProblems[0])
  .addError(bodyProblems[1])
  .addError(bodyProblems[2])
  .annotate(
    OpenApi.Summary,
    "Set how long the workspace keeps its raw events; the hourly sweep removes older ones (profiles and rollups stay)"
  )

export const group = HttpApiGroup.make("retention")
  .add(getRetention)
  .add(setRetention)
  .pipe(adminGuarded)
  .annotate(OpenApi.Title, "Event retention")
  .annotate(
    OpenApi.Description,
    "How long raw events are kept; older ones are removed by the server's hourly sweep. Admin keys only."
  )
