/**
 * The routes served from the `HttpApi` declaration (`api/Api.ts`) by `HttpApiBuilder`: each
 * group's handlers (`routes/*.ts`, `HttpApiBuilder.group`) are bound to the declared method, path
 * and path parameters, so the served routes, `/openapi.json` and the SDK clients read one source.
 *
 * A handler is decode, one core call, encode: it answers with a response or fails with an edge
 * `Problem` or a core domain error. It may fail only with what its endpoint declares (the builder's
 * types hold it to the declaration, whose domain errors are generated from `ErrorMap`), and the app
 * answers every failure through `ErrorMap.toProblem`, the one map from errors to problem documents.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpRouter from "@effect/platform/HttpRouter"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import type { RuntimeSessionRecord } from "../../core/ports/RuntimeSessionStore.ts"
import { RuntimeToken } from "./api/ApprovalsApi.ts"
import { ApiKey } from "./api/Common.ts"
import type * as ErrorMap from "./ErrorMap.ts"
import type * as Problem from "./Problem.ts"
import type * as RuntimeGuard from "./RuntimeGuard.ts"

/**
 * What a route fails with: an edge problem or a core domain error, each answered by `ErrorMap`.
 */
export type Refusal = ErrorMap.DomainError | Problem.Problem

/*
 * The declared bearer security. The admin key is checked by the one admin guard (`Auth.guarded`)
 * that every admin handler runs before anything else, as it needs the route's scopes; the
 * declaration's part is the document's. The runtime session token is checked here, by the runtime
 * guard (`RuntimeGuard.bearer`), before the handler runs: it runs in the request's fiber, whose
 * context holds the app's services (the declared type does not say so), and provides the session
 * to the handler.
 */
const bearer = (guard: RuntimeGuard.RuntimeGuard) =>
  Layer.merge(
    Layer.succeed(ApiKey, ApiKey.of({ apiKey: () => Effect.void })),
    Layer.succeed(
      RuntimeToken,
      RuntimeToken.of({
        // Its refusals (401, 429, 503) pass through the router to the app, which answers every
        // error through `ErrorMap.toProblem`.
        runtimeToken: guard.bearer as unknown as (
          token: Redacted.Redacted<string>
        ) => Effect.Effect<RuntimeSessionRecord, never, HttpRouter.HttpRouter.Provided>
      })
    )
  )

/**
 * The routes of the given group layers, as one router. Built once, synchronously: the handlers
 * read their services from each request's context (`HttpApiBuilder` runs a handler in the request's
 * context over the one it was built in), so the groups are built without them, and what they
 * require (but the declared security) is the router's requirement.
 */
export const router = <A, RIn>(
  groups: Layer.Layer<A, never, RIn>,
  guard: RuntimeGuard.RuntimeGuard
): HttpRouter.HttpRouter<Refusal, Exclude<RIn, ApiKey | RuntimeToken | HttpApiBuilder.Router>> => {
  const built = Layer.provideMerge(
    groups as Layer.Layer<A, never, ApiKey | RuntimeToken | HttpApiBuilder.Router>,
    Layer.merge(HttpApiBuilder.Router.Live, bearer(guard))
  )
  return Effect.runSync(
    Effect.scoped(
      Effect.flatMap(Layer.build(built), (context) => Effect.provide(HttpApiBuilder.Router.router, context))
    )
  ) as HttpRouter.HttpRouter<Refusal, Exclude<RIn, ApiKey | RuntimeToken | HttpApiBuilder.Router>>
}
