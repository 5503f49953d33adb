/**
 * The `Readiness` port behind `GET /readyz`: can this process serve requests right now? The storage
 * layer provides it (the database answers and its migrations are applied), so the HTTP app never
 * knows which storage it runs on (`adapters/sql/Readiness.ts` for SQL, `layerAlwaysReady` for memory).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { StorageError } from "../../core/ports/StorageError.ts"

export interface ReadinessService {
  /** Succeeds when storage is reachable and migrated; fails with why not. */
  readonly check: Effect.Effect<void, StorageError>
}

export class Readiness extends Context.Tag("@accord/adapters/http/Readiness")<Readiness, ReadinessService>() {}

/**
 * For memory storage, which is ready as soon as it exists.
 */
export const layerAlwaysReady: Layer.Layer<Readiness> = Layer.succeed(Readiness, { check: Effect.void })

export const layer = <R>(check: Effect.Effect<void, StorageError, R>): Layer.Layer<Readiness, never, R> =>
  Layer.effect(
    Readiness,
    Effect.map(Effect.context<R>(), (context) => ({ check: Effect.provide(check, context) }))
  )
