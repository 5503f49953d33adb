/**
 * `GET /healthz` (the process is up) and `GET /readyz` (storage reachable and migrated, and the
 * server not shutting down): the liveness and readiness probes.
 */
import * as Effect from "effect/Effect"
import { jsonResponse as json } from "../Answer.ts"
import { Drain } from "../Drain.ts"
import { retryableUnavailable } from "../ErrorMap.ts"
import * as Problem from "../Problem.ts"
import { Readiness } from "../../../core/ports/Readiness.ts"

/** What `/healthz` and `/readyz` read: the drain (stopping) and storage readiness. */
export type HealthServices = Drain | Readiness

/** `GET /healthz`: the process is up. */
export const healthz = Effect.succeed(json({ status: "ok" }))

/** `GET /readyz`: storage reachable and migrated, and the server not draining. */
export const readyz = Effect.gen(function* () {
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
