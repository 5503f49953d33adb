/**
 * `Readiness` for memory storage, which is ready as soon as it exists.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Readiness } from "../../core/ports/Readiness.ts"

/** Readiness for memory storage: always ready. */
export const layerMemory: Layer.Layer<Readiness> = Layer.succeed(Readiness, { check: Effect.void })
