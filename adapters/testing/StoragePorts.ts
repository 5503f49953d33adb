/**
 * The contract of a whole storage adapter: every storage port's suite (and the `CatalogStore` and
 * default `ApprovalNotifier` over it) against one adapter. An adapter author calls `suite` from a
 * vitest file of their own with a function that builds one fresh, empty store (migrated, for SQL):
 *
 * ```ts
 * import { StoragePorts } from "accord/testing"
 * StoragePorts.suite("my-store", () => myStorageLayer.pipe(Layer.provideMerge(cipherLayer)))
 * ```
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Layer from "effect/Layer"
import * as TokenPickup from "../../core/approval/TokenPickup.ts"
import type { StoragePorts } from "../../core/ports/StoragePorts.ts"
import type { Cipher } from "../../core/protocol/Cipher.ts"
import * as AccountProfileStore from "./AccountProfileStore.ts"
import * as ActionLedger from "./ActionLedger.ts"
import * as ApiKeyStore from "./ApiKeyStore.ts"
import * as ApprovalNotifier from "./ApprovalNotifier.ts"
import * as ApprovalStore from "./ApprovalStore.ts"
import * as CapabilityRegistry from "./CapabilityRegistry.ts"
import * as CatalogStore from "./CatalogStore.ts"
import * as ConnectionStore from "./ConnectionStore.ts"
import * as Erasure from "./Erasure.ts"
import * as EventStore from "./EventStore.ts"
import * as FeatureGateStore from "./FeatureGateStore.ts"
import * as IngestWriter from "./IngestWriter.ts"
import * as IntakeKeys from "./IntakeKeys.ts"
import * as NonceStore from "./NonceStore.ts"
import * as Outbox from "./Outbox.ts"
import * as ImportJobStore from "./ImportJobStore.ts"
import * as RuntimeSessionStore from "./RuntimeSessionStore.ts"
import * as SecretVault from "./SecretVault.ts"
import * as Transactor from "./Transactor.ts"
import * as UsageMeterStore from "./UsageMeterStore.ts"

/**
 * Optional extras for `suite`: the SQL client behind the stores, so the suites also check raw rows.
 */
export interface StorageSuiteOptions {
  /**
   * For SQL adapters: the same store with its `SqlClient`, so the suites also check the raw rows
   * (secrets stored sealed, a failing transaction's writes all rolled back).
   */
  readonly sqlLayer?: () => Layer.Layer<StoragePorts | Cipher | SqlClient.SqlClient, unknown>
  /**
   * The forms of `IngestWriter` the contract writes with (default `["write", "bulk"]`: `"bulk"` is
   * a bulk import's write, in a transaction; `"writeNow"` is the callback form, for an adapter that
   * offers it).
   */
  readonly ingestWriteForms?: ReadonlyArray<IngestWriter.WriteForm>
}

/**
 * Every storage port's contract suite against the adapter `layer()` builds (each call one fresh,
 * empty store; `Cipher` seals the stored secrets), named `name` in the test report.
 */
export const suite = (
  name: string,
  layer: () => Layer.Layer<StoragePorts | Cipher, unknown>,
  options: StorageSuiteOptions = {}
): void => {
  NonceStore.suite(name, layer)
  ApiKeyStore.suite(name, layer)
  SecretVault.suite(name, layer, options.sqlLayer)
  ConnectionStore.suite(name, layer, options.sqlLayer)
  CapabilityRegistry.suite(name, layer)
  CatalogStore.suite(name, layer)
  Outbox.suite(name, layer)
  ActionLedger.suite(name, layer)
  IntakeKeys.suite(name, layer)
  EventStore.suite(name, layer)
  AccountProfileStore.suite(name, layer)
  UsageMeterStore.suite(name, layer)
  FeatureGateStore.suite(name, layer)
  IngestWriter.suite(name, layer, options.ingestWriteForms ?? ["write", "bulk"])
  Transactor.suite(name, layer, options.sqlLayer)
  RuntimeSessionStore.suite(name, layer)
  ApprovalStore.suite(name, layer)
  Erasure.suite(name, layer)
  ImportJobStore.suite(name, layer)
  // The server's default notifier keeps tokens sealed in this adapter's SecretVault until collected.
  ApprovalNotifier.suite(name, () => TokenPickup.layer.pipe(Layer.provide(layer())), { holdsTokens: true })
}
