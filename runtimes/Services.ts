/**
 * What the server builds over its stores, apart from storage itself: revalidation against the
 * stored catalog (`Revalidation.layerStoredCatalog`) and approval tokens kept sealed in the vault
 * until collected (`TokenPickup.layer`). Storage adapters provide stores only, so an
 * embedding host swaps either of these (`Revalidation.layerWith`, its own notifier) and keeps its
 * storage.
 */
import * as Layer from "effect/Layer"
import * as Revalidation from "../core/connector/Revalidation.ts"
import * as TokenPickup from "../core/approval/TokenPickup.ts"
import type * as ApprovalNotifier from "../core/ports/ApprovalNotifier.ts"
import type { StoragePorts } from "../core/ports/StoragePorts.ts"

/**
 * What the server composes over any storage adapter: stored-catalog revalidation and the
 * token-pickup notifier.
 */
export const layerOverStorage: Layer.Layer<
  Revalidation.Revalidation | ApprovalNotifier.ApprovalNotifier,
  never,
  StoragePorts
> = Layer.merge(Revalidation.layerStoredCatalog, TokenPickup.layer)
