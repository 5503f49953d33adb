/**
 * `GET /healthz` (the process is up) and `GET /readyz` (storage reachable and migrated, and the
 * server not shutting down): the liveness and readiness probes.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as Effect from "effect/Effect"
import { jsonResponse as json } from "../Answer.ts"
import { Drain } from "../Drain.ts"
import { retryableUnavailable } from "../ErrorMap.ts"
import * as Problem from "../Problem.ts"
import { Readiness } from "../../../core/ports/Readiness.ts"
import * as ServiceApi from "../api/ServiceApi.ts"

/** What `/healthz` and `/readyz` read: the drain (stopping) and storage readiness. */
export type HealthServices = Drain | Readiness

const healthz = Effect.succeed(json({ status: "ok" }))

const readyz = Effect.gen(function* () {
  if (yield* (yield* Drain).draining) {
    return Problem.toResponse(retryableUnavailable("shutting_down", "the server is shutting down"))
  }
  return yield* (yield* Readiness).check.pipe(
    Effect.as(json({ status: "ready" })),
    Effect.catchAll(() =>
      Effect.succeed(Problem.toResponse(retryableUnavailable("not_ready", "storage is not reachable or not migrated")))
    )
  )
})

/**
 * `GET /healthz` (the process answers) and `GET /readyz` (storage ready and not stopping, else 503
 * with `Retry-After`).
 */
export const routes: HttpRouter.HttpRouter<never, HealthServices> = HttpRouter.empty.pipe(
  HttpRouter.get(ServiceApi.healthz.path, healthz),
  HttpRouter.get(ServiceApi.readyz.path, readyz)
)
