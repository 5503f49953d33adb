/**
 * Request spans without personal data. The platform's own server span (`HttpMiddleware.tracer`)
 * records the full URL (workspace and account ids in the path, query values), every request header
 * but a few, and the client's address; it is switched off, and this span takes its place with the
 * method, the matched route template (`http.route`, set by the router: `/accounts/:accountId`, never
 * the id) and the response status only. An incoming `traceparent` still links the span to its caller.
 */
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

const knownMethods = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

/**
 * Wraps an app in the request span (served so only through `tracedWhenRecorded`).
 */
const traced = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const method = knownMethods.has(request.method) ? request.method : "OTHER"
    return Effect.useSpan(
      `http.server ${method}`,
      {
        kind: "server",
        captureStackTrace: false,
        ...Option.match(HttpTraceContext.fromHeaders(request.headers), {
          onNone: () => ({}),
          onSome: (parent) => ({ parent })
        })
      },
      (span) => {
        span.attribute("http.request.method", method)
        return Effect.tap(Effect.withParentSpan(app, span), (response) => {
          span.attribute("http.response.status_code", response.status)
        })
      }
    )
  })

/** Effect's own tracer, in force unless another is installed: its spans are made and dropped. */
const nativeTracer = Effect.runSync(Effect.tracer)

/**
 * `traced(app)` when the tracer in force records spans (the OTLP exporter, or one an embedding host
 * installed), else `app` itself: under Effect's own tracer a request span is made and thrown away,
 * which measured about a seventh of `/healthz`'s CPU per request. Decided once, when serving starts.
 */
export const tracedWhenRecorded = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>
): Effect.Effect<Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>> =>
  Effect.map(Effect.tracer, (tracer) => (tracer === nativeTracer ? app : traced(app)))

/**
 * Runs `serve` (the effect that starts serving) with the platform's request span switched off for
 * every request it will handle (its fibers inherit this setting).
 */
export const withoutPlatformSpans = <A, E, R>(serve: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locally(serve, HttpMiddleware.currentTracerDisabledWhen, () => true)
