/**
 * `CapabilityRegistry` on SQL: one row per connection; a replay (same fingerprint) or evidence of an
 * older revision than the row's changes nothing, decided by the upsert itself.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import {
  type CapabilityEvidence,
  CapabilityRegistry,
  type CapabilityRegistryService
} from "../../core/ports/CapabilityRegistry.ts"
import type { PaymentMode } from "../../core/protocol/messages/Common.ts"
import { firstRow, json, num, orStorageError } from "./SqlSupport.ts"

interface Row {
  readonly connection_id: string
  readonly revision: number
  readonly modes: ReadonlyArray<PaymentMode>
  readonly livemode: boolean
  readonly account_reference_hash: string
  readonly response_fingerprint: string
  readonly provider_connection_generation: string
  readonly recorded_at: unknown
  readonly expires_at: unknown
}

const toEvidence = (row: Row): CapabilityEvidence => ({
  connectionId: row.connection_id,
  revision: num(row.revision),
  modes: row.modes,
  livemode: row.livemode,
  connectedAccountReferenceHash: row.account_reference_hash,
  responseFingerprint: row.response_fingerprint,
  providerConnectionGeneration: row.provider_connection_generation,
  recordedAt: num(row.recorded_at),
  expiresAt: num(row.expires_at)
})

export const make: Effect.Effect<CapabilityRegistryService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => ({
    record: (e) =>
      sql<{ recorded: boolean; prior_revision: number | null }>`
          WITH prior AS (
            SELECT revision FROM accord_capabilities WHERE connection_id = ${e.connectionId}
          ), upserted AS (
            INSERT INTO accord_capabilities (connection_id, revision, modes, livemode, account_reference_hash,
              response_fingerprint, provider_connection_generation, recorded_at, expires_at)
            VALUES (${e.connectionId}, ${e.revision}, ${json(e.modes)}::jsonb, ${e.livemode}, ${e.connectedAccountReferenceHash},
              ${e.responseFingerprint}, ${e.providerConnectionGeneration}, ${e.recordedAt}, ${e.expiresAt})
            ON CONFLICT (connection_id) DO UPDATE SET
              revision = EXCLUDED.revision, modes = EXCLUDED.modes, livemode = EXCLUDED.livemode,
              account_reference_hash = EXCLUDED.account_reference_hash,
              response_fingerprint = EXCLUDED.response_fingerprint,
              provider_connection_generation = EXCLUDED.provider_connection_generation,
              recorded_at = EXCLUDED.recorded_at, expires_at = EXCLUDED.expires_at
            WHERE accord_capabilities.response_fingerprint <> EXCLUDED.response_fingerprint
              AND accord_capabilities.revision <= EXCLUDED.revision
            RETURNING connection_id
          )
          SELECT EXISTS (SELECT 1 FROM upserted) AS recorded, (SELECT revision FROM prior) AS prior_revision`.pipe(
        Effect.flatMap(([row]) => {
          if (row?.recorded === true) return Effect.succeed("recorded" as const)
          // Nothing written and no row seen: a concurrent first record won the insert after this
          // statement's snapshot; read its revision in a new snapshot to tell why.
          const prior =
            row?.prior_revision != null
              ? Effect.succeed(num(row.prior_revision))
              : Effect.map(
                  sql<{
                    revision: number
                  }>`SELECT revision FROM accord_capabilities WHERE connection_id = ${e.connectionId}`,
                  (rows) => (rows[0] === undefined ? e.revision : num(rows[0].revision))
                )
          return Effect.map(prior, (revision) =>
            revision > e.revision ? ("older_revision" as const) : ("replay" as const)
          )
        }),
        orStorageError("capability.record")
      ),
    clear: (connectionId, revision) =>
      sql`DELETE FROM accord_capabilities WHERE connection_id = ${connectionId} AND revision <= ${revision}`.pipe(
        Effect.asVoid,
        orStorageError("capability.clear")
      ),
    current: (connectionId, now) =>
      sql<Row>`SELECT * FROM accord_capabilities WHERE connection_id = ${connectionId} AND expires_at > ${now}`.pipe(
        Effect.map(firstRow(toEvidence)),
        orStorageError("capability.current")
      )
  })
)

export const layer: Layer.Layer<CapabilityRegistry, never, SqlClient.SqlClient> = Layer.effect(CapabilityRegistry, make)
