/**
 * The direct route of the `node:http` dispatcher (`NodeServer.layerServer`): the ingest endpoint,
 * the one route built for volume (backend jobs sending thousands of events a second), answered by
 * the dispatcher itself instead of through the platform app.
 *
 * It is not a second copy of the route. The dispatcher takes it only for the declared endpoint's
 * method and path (`IngestApi.ingestEvent`) and a request target the app's own check
 * (`Paths.targetProblem`) lets through; anything else, a refused target included, goes to the app.
 * It runs the very pipeline the declared route runs (`Ingest.makeIngest`: the one bearer
 * authenticator, the one scope rule `Auth.scopeProblem`, rate, content type, body, rules, group
 * commit), logs with the app's request log (`RequestLog.withRequestLog`), counts the request as in
 * flight for graceful shutdown, and stops working (the event may still commit) when the client
 * goes away. What it skips is the platform's per-request request and response objects, fiber and
 * router, which cost several times the pipeline itself (measured: docs/decisions.md, "API
 * reference").
 */
import { clientAbortFiberId } from "@effect/platform/HttpServerError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import type { IncomingMessage, ServerResponse } from "node:http"
import type { Answer } from "./Answer.ts"
import { readNodeBody } from "./Body.ts"
import { Drain } from "./Drain.ts"
import { ingestEvent } from "./api/IngestApi.ts"
import { targetProblem } from "./Paths.ts"
import { type IngestOptions, ingestPath, type IngestServices, makeIngest, maxEventBytes } from "./routes/Ingest.ts"
import type * as Problem from "./Problem.ts"
import { requestLogEnabled, withRequestLog } from "./RequestLog.ts"

/**
 * Handles the request and returns `true`, or returns `false` and leaves it to the app.
 */
export type FastRoute = (request: IncomingMessage, response: ServerResponse) => boolean

/**
 * The direct routes the `node:http` dispatcher answers itself; every other request goes to the app.
 */
export class FastRoutes extends Context.Tag("@accord/adapters/http/FastRoutes")<FastRoutes, FastRoute>() {}

/**
 * Writes an answer on a `node:http` response (nothing when one was already written or the socket is
 * gone).
 */
export const send = (response: ServerResponse, answer: Answer): void => {
  if (response.headersSent || response.destroyed) return
  const body = JSON.stringify(answer.body)
  response.writeHead(answer.status, { ...answer.headers, "content-length": Buffer.byteLength(body) })
  response.end(body)
}

const pathOf = (url: string): string => {
  const end = url.search(/[?#]/)
  return end === -1 ? url : url.slice(0, end)
}

/**
 * The ingest endpoint's direct route, bound to the services it runs on. Without the request log it
 * runs the pipeline's callback form (`IngestPipeline.run`: the same steps, no fiber per request);
 * with it, the effect form inside the app's request log.
 */
export const makeIngestRoute = (options: IngestOptions): Effect.Effect<FastRoute, never, IngestServices | Drain> =>
  Effect.gen(function* () {
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const drain = yield* Drain
    const pipeline = yield* makeIngest(options)
    const logged = yield* requestLogEnabled
    const reply = (response: ServerResponse, answer: Answer | undefined) => {
      try {
        if (answer !== undefined) send(response, answer)
      } catch {
        response.destroy()
      }
    }
    return (request, response) => {
      const url = request.url ?? ""
      if (request.method !== ingestEvent.method || pathOf(url) !== ingestPath || targetProblem(url) !== undefined) {
        return false
      }
      const leave = drain.unsafeEnter()
      if (logged) {
        // The body is read inside the pipeline's effect; the answer is written when its fiber
        // ends, before it counts as no longer in flight.
        const fiber = runFork(
          withRequestLog(
            "POST",
            () => ingestPath
          )(
            pipeline({
              authorization: request.headers["authorization"],
              contentType: request.headers["content-type"],
              body: Effect.async<Uint8Array, Problem.Problem>((resume) =>
                Effect.sync(readNodeBody(request, maxEventBytes, resume))
              )
            })
          )
        )
        fiber.addObserver((exit) => {
          reply(response, Exit.isSuccess(exit) ? exit.value : undefined)
          leave()
        })
        response.on("close", () => {
          if (!response.writableEnded) fiber.unsafeInterruptAsFork(clientAbortFiberId)
        })
        return true
      }
      let stopReading = () => {}
      // The client went away: stop reading its body (an event already handed to the commit may
      // still be stored).
      response.on("close", () => stopReading())
      pipeline.run(
        {
          authorization: request.headers["authorization"],
          contentType: request.headers["content-type"],
          readBody: (done) => {
            stopReading = readNodeBody(request, maxEventBytes, done)
          }
        },
        (answer) => {
          reply(response, answer)
          leave()
        }
      )
      return true
    }
  })
