/**
 * The `Readiness` port behind `GET /readyz`: can this process serve requests right now? The storage
 * adapter provides it (SQL: the database answers and its migrations are applied; memory: always),
 * so the HTTP edge never knows which storage it runs on.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { StorageError } from "./StorageError.ts"

/** Tells whether storage can serve requests, for `/readyz`. */
export interface ReadinessService {
  /** Succeeds when storage is reachable and migrated; fails with why not. */
  readonly check: Effect.Effect<void, StorageError>
}

/** The service tag of storage readiness. */
export class Readiness extends Context.Tag("@accord/core/Readiness")<Readiness, ReadinessService>() {}

/**
 * Readiness as `check`, run with the services it needs from the layer's context.
 */
export const layer = <R>(check: Effect.Effect<void, StorageError, R>): Layer.Layer<Readiness, never, R> =>
  Layer.effect(
    Readiness,
    Effect.map(Effect.context<R>(), (context) => ({ check: Effect.provide(check, context) }))
  )
