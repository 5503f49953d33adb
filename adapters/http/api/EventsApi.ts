/**
 * The Events view and the account profiles, under `/api/admin/v1/workspaces/{workspaceId}`;
 * admin or developer:read keys. Handled by `routes/Events.ts` and `routes/Accounts.ts`.
 *
 * Events are answered as they were sent, in the Direct API's own snake_case (`event_name`,
 * `account_id`, ...), with Accord's `id` and `received_at`; the envelope and every other admin body
 * are camelCase (docs/decisions.md, "JSON naming").
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import {
  adminGuarded,
  adminPath,
  declaring,
  notFound,
  page,
  pageParams,
  queryParam,
  Timestamp,
  UuidText
} from "./Common.ts"

/**
 * An event as listed: the event as sent (snake_case) with Accord's `id` and `received_at`.
 */
export const EventView = Schema.Struct(
  {
    id: UuidText,
    received_at: Timestamp,
    event_name: Schema.String,
    account_id: Schema.String,
    timestamp: Timestamp,
    event_id: Schema.optional(Schema.String)
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)

export const listEvents = HttpApiEndpoint.get("listEvents", "/events")
  .setPath(adminPath({}))
  .setUrlParams(
    Schema.Struct({
      account_id: queryParam(Schema.String.annotations({ description: "only this account's events" })),
      event_name: queryParam(Schema.String.annotations({ description: "only events of this name" })),
      from: queryParam(Timestamp.annotations({ description: "occurred at or after (RFC 3339)" })),
      to: queryParam(Timestamp.annotations({ description: "occurred before (RFC 3339)" })),
      ...pageParams
    })
  )
  .addSuccess(
    page(EventView, {
      id: "9d7c6b5a-4e3f-4a2b-8c1d-0e9f8a7b6c5d",
      received_at: "2026-11-22T10:15:31.000Z",
      event_name: "account_created",
      account_id: "acct_42",
      timestamp: "2026-11-22T10:15:30.000Z",
      event_id: "evt_0001",
      properties: { plan: "pro", account_status: "trialing" }
    })
  )
  .pipe(declaring("InvalidQuery"))
  .annotate(OpenApi.Summary, "The Events view: events newest first, filtered and paged")

const GateView = Schema.Struct({
  id: UuidText,
  accountId: Schema.String,
  journeyId: UuidText,
  versionId: UuidText,
  featureKey: Schema.String,
  startedAt: Timestamp,
  state: Schema.Literal("checking", "unlocked"),
  unlockedAt: Schema.NullOr(Timestamp),
  unlockEventId: Schema.NullOr(Schema.String)
})

export const featureGateExample: typeof GateView.Type = {
  id: "1e2d3c4b-5a69-4788-9a0b-1c2d3e4f5a6b",
  accountId: "acct_42",
  journeyId: "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d",
  versionId: "2b3c4d5e-6f70-4812-a3b4-c5d6e7f8a9b0",
  featureKey: "exports.csv",
  startedAt: "2026-11-22T10:15:00.000Z",
  state: "checking",
  unlockedAt: null,
  unlockEventId: null
}

/**
 * A feature gate as answered (here and by `featureGates`).
 */
export const FeatureGateView = GateView.annotations({ identifier: "FeatureGate", examples: [featureGateExample] })

const accountExample = {
  accountId: "acct_42",
  factCount: 4,
  firstObservedAt: "2026-11-20T08:00:00.000Z",
  lastObservedAt: "2026-11-22T10:15:30.000Z"
}

export const listAccounts = HttpApiEndpoint.get("listAccounts", "/accounts")
  .setPath(adminPath({}))
  .setUrlParams(Schema.Struct(pageParams))
  .addSuccess(
    page(
      Schema.Struct({
        accountId: Schema.String,
        factCount: Schema.Int.annotations({ description: "how many profile facts the account has" }),
        firstObservedAt: Timestamp.annotations({ description: "when its oldest current fact was observed" }),
        lastObservedAt: Timestamp.annotations({ description: "when its newest fact was observed" })
      }),
      accountExample
    )
  )
  .pipe(declaring("InvalidQuery"))
  .annotate(OpenApi.Summary, "The accounts with a profile (at least one fact), by account id, paged")

export const getAccount = HttpApiEndpoint.get("getAccount", "/accounts/:accountId")
  .setPath(adminPath({ accountId: Schema.String }))
  .addSuccess(
    Schema.Struct({
      accountId: Schema.String,
      lastEventAt: Schema.NullOr(Timestamp),
      facts: Schema.Array(
        Schema.Struct({
          name: Schema.String,
          value: Schema.Unknown,
          observedAt: Timestamp,
          sourceEventId: Schema.NullOr(UuidText),
          sourceEvent: Schema.NullOr(
            Schema.Struct({
              id: UuidText,
              event_name: Schema.String,
              event_id: Schema.NullOr(Schema.String),
              timestamp: Timestamp
            })
          )
        })
      ),
      featureGates: Schema.Array(GateView)
    }).annotations({
      examples: [
        {
          accountId: "acct_42",
          lastEventAt: "2026-11-22T10:15:30.000Z",
          facts: [
            {
              name: "plan",
              value: "pro",
              observedAt: "2026-11-22T10:15:30.000Z",
              sourceEventId: "9d7c6b5a-4e3f-4a2b-8c1d-0e9f8a7b6c5d",
              sourceEvent: {
                id: "9d7c6b5a-4e3f-4a2b-8c1d-0e9f8a7b6c5d",
                event_name: "account_created",
                event_id: "evt_0001",
                timestamp: "2026-11-22T10:15:30.000Z"
              }
            }
          ],
          featureGates: []
        }
      ]
    })
  )
  .addError(notFound("account"))
  .annotate(OpenApi.Summary, "An account's profile: facts with their source events, active users, feature gates")

export const group = HttpApiGroup.make("events")
  .add(listEvents)
  .add(listAccounts)
  .add(getAccount)
  .pipe(adminGuarded)
  .annotate(OpenApi.Title, "Events and accounts")
  .annotate(OpenApi.Description, "The Events view and account profiles. Admin or developer:read keys.")
