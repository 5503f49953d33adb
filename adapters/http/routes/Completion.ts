/**
 * `POST /api/funnels/v1/runtime/actions/customer-complete`: the customer's signed completion
 * callback (spec "Inbound endpoints"; docs/decisions.md, "Completion route authentication"). A 2xx
 * answer is the durable completion acknowledgement: it is sent only after the completion is
 * committed.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import { makeCompletionReceiver } from "../../../core/connector/CompletionIntake.ts"
import { isJsonContentType } from "../../../core/protocol/Json.ts"
import * as Instrumented from "../../telemetry/Instrumented.ts"
import { jsonResponse as json } from "../Answer.ts"
import * as Api from "../api/Api.ts"
import * as RuntimeApi from "../api/RuntimeApi.ts"
import { notJson, readBytes } from "../Body.ts"

export const completionPath: `/${string}` = RuntimeApi.customerComplete.path

/**
 * Completion bodies are small; 64 KiB bounds them like every connector message (docs/decisions.md,
 * "Outbound calls").
 */
export const maxCompletionBytes = 64 * 1024

/**
 * The completion: the raw body bytes are verified before anything parses them. A refusal fails
 * with core's `CompletionRefused` (its kind picks the status in `ErrorMap`) or, for an authentic
 * body with a duplicate key or unstorable text, the strict parser's `MalformedBody` (400
 * `duplicate_key` / `unstorable_text`, as on every JSON route, but only after the signature
 * verified: "verify the raw body, then parse"); the edge's own check is the content type.
 */
const complete = Effect.flatMap(makeCompletionReceiver, (receive) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (!isJsonContentType(request.headers["content-type"])) {
      return yield* notJson
    }
    const body = yield* readBytes(maxCompletionBytes)
    return json(yield* Effect.tapError(receive({ headers: request.headers, body }), Instrumented.completionRefused))
  })
)

/**
 * The group's handler, bound to the declaration (`api/RuntimeApi.ts`): raw, so the body is read
 * as bytes for the signature, and the declared body schema only documents it.
 */
export const group = HttpApiBuilder.group(Api.api, "runtime", (handlers) =>
  handlers.handleRaw("customerComplete", () => complete)
)
