/**
 * The runtime routes under `/api/funnels/v1/runtime/actions/`: the customer's signed completion
 * callback (spec "Inbound endpoints"; docs/decisions.md, "Completion route authentication"), handled
 * by `routes/Completion.ts` (served by `HttpApiBuilder`). Add further runtime endpoints to this group.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { actionStates } from "../../../core/connector/ActionState.ts"
import { Completion } from "../../../core/protocol/messages/Completion.ts"
import { declaring, problem, UuidText } from "./Common.ts"

export const runtimePrefix = "/api/funnels/v1/runtime/actions" as const

const CompletionBody = Completion.annotations({
  examples: [
    {
      type: "service.customer_action.completion",
      protocolVersion: 1,
      workspaceId: "6f1d2c3b-4a5e-4f60-8a71-92b3c4d5e6f7",
      actionRequestId: "3c2b1a09-8f7e-4d6c-a5b4-c3d2e1f0a9b8",
      providerIdempotencyKey: "pva_a9bab1d429ffbcf6dde708bb255f03187f7775a33ff2049030f4dd4e8386bf5e",
      providerReference: "trialext_991",
      completionId: "cmp_0001",
      completedAt: "2026-11-22T10:15:30.000Z",
      outcome: "succeeded",
      evidence: { entitlement: "pro_trial", reasonCode: "trial_extended", source: "customer_server_event" }
    } as never
  ]
})

/*
 * The signature headers are required, yet declared optional: `HttpApiBuilder` decodes declared
 * headers before the handler runs, and the completion route answers in the spec's order (content
 * type 415, size 413, then the signature 401, "verify the raw body, then parse"), so a missing
 * header must reach the handler. `requiredSignedHeaders` marks them required in the document.
 */
const signed = (description: string) => Schema.optional(Schema.String.annotations({ description }))

const signedHeaderPrefix = "x-service-customer-action-"

const requiredSignedHeaders = (operation: Record<string, any>): Record<string, any> => ({
  ...operation,
  parameters: (operation["parameters"] ?? []).map((parameter: Record<string, any>) =>
    parameter["in"] === "header" && String(parameter["name"]).startsWith(signedHeaderPrefix)
      ? { ...parameter, required: true }
      : parameter
  )
})

/**
 * `POST /api/funnels/v1/runtime/actions/customer-complete`.
 */
export const customerComplete = HttpApiEndpoint.post("customerComplete", `${runtimePrefix}/customer-complete`)
  .setHeaders(
    Schema.Struct({
      "x-service-customer-action-version": signed("1"),
      "x-service-customer-action-timestamp": signed("RFC 3339; within the freshness window"),
      "x-service-customer-action-nonce": signed("16 to 160 visible ASCII characters, never reused"),
      "x-service-customer-action-signature": signed(
        "v1=<hex HMAC-SHA256 of the signed string under the completion secret>"
      )
    })
  )
  .setPayload(CompletionBody)
  .addSuccess(
    Schema.Struct({
      status: Schema.Literal("recorded", "duplicate"),
      actionRequestId: UuidText,
      completionId: Schema.String,
      state: Schema.Literal(...actionStates)
    }).annotations({
      description: "The durable completion acknowledgement: sent only after the completion is committed.",
      examples: [
        {
          status: "recorded" as const,
          actionRequestId: "3c2b1a09-8f7e-4d6c-a5b4-c3d2e1f0a9b8",
          completionId: "cmp_0001",
          state: "verified" as const
        }
      ]
    })
  )
  .addError(
    problem(400, ["unreadable_body"], "the request body could not be read", {
      description: "A body that could not be read to its end"
    })
  )
  .addError(
    problem(413, ["content_too_large"], "the request body exceeds 65536 bytes", { description: "A body over 64 KiB" })
  )
  .addError(
    problem(415, ["unsupported_media_type"], "the request body must be application/json", {
      description: "A body that is not application/json"
    })
  )
  .pipe(declaring("CompletionRefused", "MalformedBody", "StorageError"))
  .annotate(OpenApi.Summary, "The customer's signed completion callback")
  .annotate(OpenApi.Transform, requiredSignedHeaders)
  .annotate(
    OpenApi.Description,
    "Authenticated by the HMAC signature over the raw body under the connection's completion secret (no API key). Verify the raw body, then parse."
  )

/**
 * Every runtime route's rate refusal: a client address's, or a runtime session's, bucket is empty.
 */
export const runtimeRateLimited = problem(
  429,
  ["runtime_rate_limited"],
  "at most 600 requests per minute per client address",
  { description: "Over the client address's or the runtime session's rate; retry after Retry-After seconds" }
)

export const group = HttpApiGroup.make("runtime")
  .add(customerComplete)
  .addError(runtimeRateLimited)
  .annotate(OpenApi.Title, "Runtime")
  .annotate(OpenApi.Description, "Routes the customer's systems call under /api/funnels/v1/runtime/actions/.")
