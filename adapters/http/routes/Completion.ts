/**
 * `POST /api/funnels/v1/runtime/actions/customer-complete`: the customer's signed completion
 * callback (spec "Inbound endpoints"; DESIGN D7). A 2xx answer is the durable completion
 * acknowledgement: it is sent only after the completion is committed.
 *
 * @since 0.1.0
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { type CompletionRefusalKind, type CompletionServices, makeCompletionReceiver } from "../../../core/connector/CompletionIntake.ts"
import { storageUnavailable } from "../Auth.ts"
import { isJsonContentType, readBytes } from "../Body.ts"
import * as Problem from "../Problem.ts"
import { jsonResponse as json } from "../Answer.ts"

/**
 * @since 0.1.0
 */
export const completionPath = "/api/funnels/v1/runtime/actions/customer-complete" as const

/**
 * Completion bodies are small; 64 KiB bounds them like every connector message (D4).
 *
 * @since 0.1.0
 */
export const maxCompletionBytes = 64 * 1024

const refusalStatus: Readonly<Record<CompletionRefusalKind, number>> = {
  unauthenticated: 401,
  invalid: 400,
  unknown_action: 404,
  binding_mismatch: 422,
  conflict: 409
}

/**
 * @since 0.1.0
 */
export const handler: Effect.Effect<
  Effect.Effect<HttpServerResponse.HttpServerResponse, Problem.Problem, HttpServerRequest.HttpServerRequest>,
  never,
  CompletionServices
> = Effect.map(makeCompletionReceiver, (receive) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (!isJsonContentType(request.headers["content-type"])) {
      return yield* Problem.unsupportedMediaType("application/json")
    }
    const body = yield* readBytes(maxCompletionBytes)
    const receipt = yield* receive({ headers: request.headers, body }).pipe(
      Effect.catchTags({
        CompletionRefused: (e) =>
          Effect.fail(Problem.make(refusalStatus[e.kind], e.code, e.detail, e.errors === undefined ? undefined : { errors: e.errors })),
        StorageError: (e) => Effect.fail(storageUnavailable(e))
      })
    )
    return json(receipt)
  }))
