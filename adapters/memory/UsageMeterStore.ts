/**
 * UsageMeterStore in memory: usage meters in a map.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { UsageMeterStore, type UsageMeterStoreService } from "../../core/ports/UsageMeterStore.ts"

/** An empty `UsageMeterStore` held in this process's memory. */
export const make = (): UsageMeterStoreService => {
  const units = new Map<string, string>()
  return {
    claimUnit: ({ meterKey, unit, workspaceId }) =>
      Effect.sync(() => {
        const key = workspaceId + "\u0000" + meterKey
        const existing = units.get(key)
        if (existing === undefined) units.set(key, unit)
        return Option.fromNullable(existing)
      }),
    releaseUnit: ({ meterKey, unit, workspaceId }) =>
      Effect.sync(() => {
        const key = workspaceId + "\u0000" + meterKey
        if (units.get(key) === unit) units.delete(key)
      })
  }
}

/** Provides an empty in-memory `UsageMeterStore`. */
export const layerMemory: Layer.Layer<UsageMeterStore> = Layer.sync(UsageMeterStore, make)
