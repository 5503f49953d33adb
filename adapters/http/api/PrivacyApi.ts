/**
 * Erasure with suppression and the account export, under `/api/admin/v1/workspaces/{workspaceId}`;
 * admin keys only. Handled by `routes/Privacy.ts` (docs/decisions.md, "Erasure and suppression",
 * "Account export").
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { adminGuarded, adminPath, declaring, page, pageParams, Timestamp } from "./Common.ts"

const Counts = Schema.Struct({
  events: Schema.Int,
  profileFacts: Schema.Int,
  users: Schema.Int,
  logins: Schema.Int,
  featureGates: Schema.Int,
  runtimeSessions: Schema.Int,
  approvals: Schema.Int,
  actionsRedacted: Schema.Int.annotations({
    description: "actions kept for the connector's audit trail, their personal fields removed or pseudonymised"
  })
}).annotations({ description: "what the erasures of the subject removed, in total" })

/**
 * A suppression as answered: the subject, its audit (first and last erasure, who and when) and
 * what its erasures removed.
 */
export const SuppressionView = Schema.Struct({
  subject: Schema.Struct({ kind: Schema.Literal("account", "user"), id: Schema.String }),
  createdAt: Timestamp,
  createdBy: Schema.String.annotations({ description: "who erased it first: api_key:<id>" }),
  lastErasedAt: Timestamp,
  lastErasedBy: Schema.String,
  removed: Counts
})

const suppressionExample: typeof SuppressionView.Type = {
  subject: { kind: "account", id: "acct_42" },
  createdAt: "2026-11-22T10:15:30.000Z",
  createdBy: "api_key:0b6f3f7e-9a51-4d1c-8e2f-5a7c0d9e1b23",
  lastErasedAt: "2026-11-22T10:15:30.000Z",
  lastErasedBy: "api_key:0b6f3f7e-9a51-4d1c-8e2f-5a7c0d9e1b23",
  removed: {
    events: 120,
    profileFacts: 4,
    users: 2,
    logins: 2,
    featureGates: 1,
    runtimeSessions: 0,
    approvals: 0,
    actionsRedacted: 3
  }
}

const erased = SuppressionView.annotations({
  description: "The subject's suppression, the same on every erasure of it",
  examples: [suppressionExample]
})

export const eraseAccount = HttpApiEndpoint.del("eraseAccount", "/accounts/:accountId")
  .setPath(adminPath({ accountId: Schema.String }))
  .addSuccess(erased)
  .pipe(declaring("OpenActions"))
  .annotate(
    OpenApi.Summary,
    "Erase an account: its events, profile, users, gates, sessions and approvals removed, its actions redacted, later events suppressed"
  )

export const eraseUser = HttpApiEndpoint.del("eraseUser", "/users/:userId")
  .setPath(adminPath({ userId: Schema.String }))
  .addSuccess(erased)
  .pipe(declaring("OpenActions"))
  .annotate(
    OpenApi.Summary,
    "Erase a user: every event it caused, its user record, logins, sessions and approvals removed, its actions redacted, later events suppressed"
  )

export const listSuppressions = HttpApiEndpoint.get("listSuppressions", "/suppressions")
  .setPath(adminPath({}))
  .setUrlParams(Schema.Struct(pageParams))
  .addSuccess(page(SuppressionView, suppressionExample))
  .pipe(declaring("InvalidQuery"))
  .annotate(OpenApi.Summary, "The erased subjects and their audit, newest first")

export const exportAccount = HttpApiEndpoint.get("exportAccount", "/accounts/:accountId/export")
  .setPath(adminPath({ accountId: Schema.String }))
  .addSuccess(
    HttpApiSchema.withEncoding(
      Schema.String.annotations({
        description:
          "NDJSON, streamed: one record per line, `kind` first (profile, event, login, user, feature_gate, action); an action without its continuation or acknowledgement"
      }),
      { kind: "Text", contentType: "application/x-ndjson" }
    )
  )
  .annotate(OpenApi.Summary, "Everything held about an account, as NDJSON")

export const group = HttpApiGroup.make("privacy")
  .add(eraseAccount)
  .add(eraseUser)
  .add(listSuppressions)
  .add(exportAccount)
  .pipe(adminGuarded)
  .annotate(OpenApi.Title, "Erasure and export")
  .annotate(
    OpenApi.Description,
    "Erase an account or a user (a suppression keeps later events of it from being stored), list the erasures, export an account. Admin keys only."
  )
