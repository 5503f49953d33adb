/**
 * Transactor for memory storage: memory operations are synchronous steps, so a unit needs no
 * wrapper.
 */
import * as Layer from "effect/Layer"
import { Transactor } from "../../core/ports/Transactor.ts"

/**
 * For memory storage: runs the effect as it is.
 */
export const layerMemory: Layer.Layer<Transactor> = Layer.succeed(Transactor, { withTransaction: (effect) => effect })
