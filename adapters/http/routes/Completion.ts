/**
 * `POST /api/funnels/v1/runtime/actions/customer-complete`: the customer's signed completion
 * callback (spec "Inbound endpoints"; docs/decisions.md, "Completion route authentication"). A 2xx
 * answer is the durable completion acknowledgement: it is sent only after the completion is
 * committed.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { type CompletionServices, makeCompletionReceiver } from "../../../core/connector/CompletionIntake.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { CatalogStore } from "../../../core/ports/CatalogStore.ts"
import { ConnectionStore } from "../../../core/ports/ConnectionStore.ts"
import { Crypto } from "../../../core/ports/Crypto.ts"
import { EventStore } from "../../../core/ports/EventStore.ts"
import { NonceStore } from "../../../core/ports/NonceStore.ts"
import { SecretVault } from "../../../core/ports/SecretVault.ts"
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
const complete = (receiver: Effect.Effect<Receiver, never, CompletionServices>) =>
  Effect.flatMap(receiver, (receive) =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (!isJsonContentType(request.headers["content-type"])) {
        return yield* notJson
      }
      const body = yield* readBytes(maxCompletionBytes)
      return json(yield* Effect.tapError(receive({ headers: request.headers, body }), Instrumented.completionRefused))
    })
  )

type Receiver = Effect.Effect.Success<typeof makeCompletionReceiver>

/** The services the receiver is built over, in a fixed order. */
const receiverServices = [ActionLedger, ConnectionStore, SecretVault, Crypto, NonceStore, CatalogStore, EventStore]

/**
 * The receiver, built on the first completion and kept while the services it was built over are
 * the ones the request runs with (they are, for every request of one app): it holds the verifier
 * and the per-revision key cache, which a receiver built per request would rebuild, opening and
 * importing the completion secret on every completion.
 */
const builtOnce = (): Effect.Effect<Receiver, never, CompletionServices> => {
  let built: { readonly services: ReadonlyArray<unknown>; readonly receive: Receiver } | undefined
  return Effect.flatMap(Effect.context<CompletionServices>(), (context) => {
    const services = receiverServices.map((tag) =>
      Context.unsafeGet(context as Context.Context<unknown>, tag as Context.Tag<unknown, unknown>)
    )
    if (built?.services.every((service, i) => service === services[i])) return Effect.succeed(built.receive)
    return Effect.map(makeCompletionReceiver, (receive) => {
      built = { services, receive }
      return receive
    })
  })
}

/**
 * The group's handler, bound to the declaration (`api/RuntimeApi.ts`): raw, so the body is read
 * as bytes for the signature, and the declared body schema only documents it.
 */
export const group = HttpApiBuilder.group(Api.api, "runtime", (handlers) => {
  const handler = complete(builtOnce())
  return handlers.handleRaw("customerComplete", () => handler)
})
