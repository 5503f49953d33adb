/**
 * Every storage port on one `SqlClient` (PostgreSQL or PGlite alike), after running the migrations.
 */
import type { MigrationError } from "@effect/sql/Migrator"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Layer from "effect/Layer"
import type { Cipher } from "../../core/protocol/Cipher.ts"
import type { StoragePorts } from "../../core/ports/StoragePorts.ts"
import * as ActionLedger from "./ActionLedger.ts"
import * as AccountProfileStore from "./AccountProfileStore.ts"
import * as ApiKeyStore from "./ApiKeyStore.ts"
import * as ApprovalStore from "./ApprovalStore.ts"
import * as CapabilityRegistry from "./CapabilityRegistry.ts"
import * as CatalogStore from "./CatalogStore.ts"
import * as ConnectionStore from "./ConnectionStore.ts"
import * as EventStore from "./EventStore.ts"
import * as FeatureGateStore from "./FeatureGateStore.ts"
import * as ImportJobStore from "./ImportJobStore.ts"
import * as IngestWriter from "./IngestWriter.ts"
import * as Migrations from "./Migrations.ts"
import * as NonceStore from "./NonceStore.ts"
import * as Outbox from "./Outbox.ts"
import * as RuntimeSessionStore from "./RuntimeSessionStore.ts"
import { migrations } from "./schema/Migrations.ts"
import * as SecretTable from "./SecretTable.ts"
import * as SuppressionStore from "./SuppressionStore.ts"
import * as Transactor from "./Transactor.ts"
import * as UsageMeterStore from "./UsageMeterStore.ts"

/**
 * The ports, built after the migrations have run on the client.
 */
export const layer: Layer.Layer<StoragePorts, SqlError | MigrationError, SqlClient.SqlClient | Cipher> =
  IngestWriter.layer.pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        NonceStore.layer,
        ApiKeyStore.layer,
        SecretTable.layer,
        ConnectionStore.layer,
        CapabilityRegistry.layer,
        CatalogStore.layer,
        Outbox.layer,
        ActionLedger.layer,
        EventStore.layer,
        AccountProfileStore.layer,
        UsageMeterStore.layer,
        FeatureGateStore.layer,
        Transactor.layer,
        RuntimeSessionStore.layer,
        ApprovalStore.layer,
        SuppressionStore.layer,
        ImportJobStore.layer
      )
    ),
    Layer.provide(Migrations.layer(migrations))
  )
