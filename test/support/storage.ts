/**
 * The storage variants every contract suite runs against: memory, PGlite (in memory) and
 * PostgreSQL (when `DATABASE_URL` is set). Each `layer()` call is a fresh, empty, migrated store.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as MemoryStorage from "../../adapters/memory/Storage.ts"
import * as SqlStorage from "../../adapters/sql/Storage.ts"
import type { Revalidation } from "../../core/connector/Revalidation.ts"
import type { ApprovalNotifier } from "../../core/ports/ApprovalNotifier.ts"
import { type Cipher, layerAesGcm } from "../../core/protocol/Cipher.ts"
import type { StoragePorts } from "../../core/ports/StoragePorts.ts"
import { layerOverStorage } from "../../runtimes/Services.ts"
import { layerMigrated } from "./pgliteTemplate.ts"
import { databaseUrl, layerPooledSchema, warnIfSkipped } from "./postgres.ts"

/** A fixed test master key (32 bytes). */
export const testMasterKey = Redacted.make(new Uint8Array(32).map((_, i) => i + 1))

export const cipherLayer: Layer.Layer<Cipher> = layerAesGcm(testMasterKey)

/** The stores and what the server builds over them (`runtimes/Services.ts`). */
export type StoredServices = StoragePorts | Revalidation | ApprovalNotifier

/** `storage` with the services the server builds over it. */
export const withServices = <E, R>(storage: Layer.Layer<StoragePorts, E, R>): Layer.Layer<StoredServices, E, R> =>
  layerOverStorage.pipe(Layer.provideMerge(storage))

export interface StorageVariant {
  readonly name: "memory" | "pglite" | "postgres"
  /** Whether this variant is available here (PostgreSQL needs `DATABASE_URL`). */
  readonly available: boolean
  /** The stores, with the services the server builds over them. */
  readonly layer: () => Layer.Layer<StoredServices | Cipher, unknown>
  /** The SQL client under the ports, for tests that inspect raw rows (SQL variants only). */
  readonly sqlLayer?: () => Layer.Layer<StoredServices | Cipher | SqlClient.SqlClient, unknown>
}

const onSql = (client: () => Layer.Layer<SqlClient.SqlClient, unknown>) => () =>
  withServices(SqlStorage.layer).pipe(Layer.provideMerge(Layer.merge(client(), cipherLayer)))

export const storageVariants: ReadonlyArray<StorageVariant> = [
  {
    name: "memory",
    available: true,
    layer: () => withServices(MemoryStorage.layer).pipe(Layer.provideMerge(cipherLayer))
  },
  {
    name: "pglite",
    available: true,
    // A migrated database from the process's pool (see pgliteTemplate.ts).
    layer: onSql(layerMigrated),
    sqlLayer: onSql(layerMigrated)
  },
  {
    name: "postgres",
    /** Read where a suite decides to skip (`describe.skipIf(!variant.available)`), so says why then. */
    get available() {
      warnIfSkipped("postgres storage variant")
      return databaseUrl !== undefined
    },
    // A migrated schema from the process's pool (see postgres.ts).
    layer: onSql(() => layerPooledSchema(databaseUrl!)),
    sqlLayer: onSql(() => layerPooledSchema(databaseUrl!))
  }
]

/** Unique ids per test so tests sharing one database never see each other's rows (the contract suites' own). */
export { uid } from "../../adapters/testing/internal/uid.ts"
