/**
 * The Direct API (spec `direct-api-ingestion.md`): `POST /api/events/ingest`, one event per
 * request, an `ingest` key. Served by the `node:http` fast path (`NodeIngest.ts`) on Node and by
 * `routes/Ingest.ts` elsewhere, with the same answers. Bodies are the spec's snake_case.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import * as ErrorMap from "../ErrorMap.ts"
import { ApiKey, declaring, problem, refusal, Timestamp, UuidText } from "./Common.ts"

/**
 * The event as documented: the spec's fields, in its snake_case; `Accept` checks the full contract.
 */
export const IngestEvent = Schema.Struct(
  {
    event_name: Schema.String.annotations({
      description: "what happened, e.g. account_created, user_logged_in, entitlement_active"
    }),
    account_id: Schema.String.annotations({ description: "the customer's account" }),
    timestamp: Timestamp.annotations({ description: "when it occurred (RFC 3339)" }),
    event_id: Schema.optional(
      Schema.String.annotations({ description: "the sender's id, for safe retries (strongly recommended)" })
    ),
    user_id: Schema.optional(Schema.String),
    semantic_type: Schema.optional(Schema.String),
    properties: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
).annotations({
  description:
    "One event (at most 32 KiB). Never send secrets, card data or other data the spec forbids: such an event is refused (422) and nothing is stored.",
  examples: [
    {
      event_name: "account_created",
      account_id: "acct_42",
      timestamp: "2026-11-22T10:15:30.000Z",
      event_id: "evt_0001",
      properties: { plan: "pro", account_status: "trialing", is_in_trial: true }
    }
  ]
})

const view = {
  id: UuidText,
  event_id: Schema.NullOr(Schema.String),
  account_id: Schema.String,
  suggested_event_id: Schema.optional(
    Schema.String.annotations({ description: "an event_id to send on retries, when the event had none" })
  )
}

const example = { id: "9d7c6b5a-4e3f-4a2b-8c1d-0e9f8a7b6c5d", event_id: "evt_0001", account_id: "acct_42" }

export const ingestEvent = HttpApiEndpoint.post("ingestEvent", "/api/events/ingest")
  .setPayload(IngestEvent)
  .addSuccess(
    Schema.Struct({ status: Schema.Literal("accepted"), duplicate: Schema.Literal(false), ...view }).annotations({
      description: "Committed",
      examples: [{ status: "accepted" as const, duplicate: false as const, ...example }]
    }),
    { status: 202 }
  )
  .addSuccess(
    Schema.Struct({
      status: Schema.Literal("suppressed"),
      suppressed: Schema.Literal(true),
      duplicate: Schema.Literal(false),
      event_id: Schema.NullOr(Schema.String),
      account_id: Schema.String
    }).annotations({
      description: "An event of an erased account or user (a suppression): nothing stored",
      examples: [
        {
          status: "suppressed" as const,
          suppressed: true as const,
          duplicate: false as const,
          event_id: "evt_0001",
          account_id: "acct_42"
        }
      ]
    }),
    { status: 202 }
  )
  .addSuccess(
    Schema.Struct({ status: Schema.Literal("duplicate"), duplicate: Schema.Literal(true), ...view }).annotations({
      description: "A retry of an event already stored: nothing stored twice",
      examples: [{ status: "duplicate" as const, duplicate: true as const, ...example }]
    }),
    { status: 200 }
  )
  .addError(
    problem(400, ["unreadable_body"], "the request body could not be read", {
      description: "A body that could not be read to its end"
    })
  )
  .addError(
    problem(401, ["unauthorized"], "a valid API key is required (Authorization: Bearer)", {
      description: "No key, or an unknown or revoked key"
    })
  )
  .addError(
    problem(403, ["forbidden"], "this route needs a key with scope ingest", {
      description: "A key without the ingest scope"
    })
  )
  .addError(refusal(ErrorMap.eventIdConflict, "The same event_id with a different payload"))
  .addError(
    problem(413, ["content_too_large"], "the request body exceeds 32768 bytes", { description: "An event over 32 KiB" })
  )
  .addError(
    problem(415, ["unsupported_media_type"], "the request body must be application/json", {
      description: "A body that is not application/json"
    })
  )
  .addError(
    refusal(
      ErrorMap.ingestRefusal({ _tag: "UnitChanged", issue: { path: "unit", message: "must stay the meter's unit" } }),
      "A usage meter changing its unit"
    )
  )
  .addError(
    problem(
      429,
      ["rate_limited"],
      "over the key's rate: ACCORD_INGEST_RATE_LIMIT requests per second, 1000 by default",
      {
        description: "Over the key's rate (with Retry-After)"
      }
    )
  )
  .pipe(
    declaring("InvalidEvent", "BatchNotAccepted", "MalformedBody", "UnsafeEvent", "NotRevenueRelevant", "StorageError")
  )
  .annotate(OpenApi.Summary, "Send one event (Direct API)")

export const group = HttpApiGroup.make("ingest")
  .add(ingestEvent)
  .middleware(ApiKey)
  .annotate(OpenApi.Title, "Direct API")
  .annotate(
    OpenApi.Description,
    "Event ingestion with an ingest key. Bodies and answers use the Direct API spec's snake_case."
  )
