/**
 * `IngestWriter` on SQL. The common batch (events that carry at most profile facts and logins) is
 * ONE statement, atomic on its own: the events are written as `EventStore.append` writes them
 * (`claimAndInsert`: their `event_id`s claimed, then the events that won inserted), and the facts and logins of the rows actually inserted are upserted in the same
 * statement (the newest per key, newest-wins against the stored row too). Three JSON parameters
 * carry the whole batch, so the client sends and the server parses one message, whatever its size.
 *
 * A batch with a user update, a usage meter or an `entitlement_active` event goes through the
 * port composition (`StoreWriter.makeFromStores`) in one transaction instead.
 *
 * On PostgreSQL the layer also provides the callback form (`IngestWriterNow`), which the group
 * commit runs:
 * the common batch's statement goes straight to the pool (`DirectStatements`) and is answered from
 * the driver's callback, without a fiber; anything else runs `write`.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type * as Statement from "@effect/sql/Statement"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import type { AccountProfileStore } from "../../core/ports/AccountProfileStore.ts"
import type { EventStore } from "../../core/ports/EventStore.ts"
import type { FeatureGateStore } from "../../core/ports/FeatureGateStore.ts"
import {
  IngestWriter,
  IngestWriterNow,
  type IngestWriterService,
  type Submission,
  type WriteOptions,
  type WriteResult
} from "../../core/ports/IngestWriter.ts"
import { makeFromStores, needsMoreThanFacts } from "../../core/ingest/StoreWriter.ts"
import type { Transactor } from "../../core/ports/Transactor.ts"
import type { StorageError } from "../../core/ports/StorageError.ts"
import type { UsageMeterStore } from "../../core/ports/UsageMeterStore.ts"
import { DirectStatements, executeFailed, makeRun } from "./DirectStatements.ts"
import { allStored, batchRows, claimAndInsert, copiedRows, eventsJson, jsonRows, resolveAppend } from "./EventStore.ts"
import { json, orStorageError, toStorageError } from "./SqlSupport.ts"

/** The writer, and on PostgreSQL its callback form. */
export const make: Effect.Effect<
  Context.Context<IngestWriter | IngestWriterNow>,
  never,
  SqlClient.SqlClient | EventStore | AccountProfileStore | FeatureGateStore | UsageMeterStore | Transactor
> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const composed = yield* makeFromStores
  // On PostgreSQL the batch statement runs straight on the pool (`DirectStatements`); in a
  // caller's transaction and on PGlite through the `SqlClient`, as every other statement.
  const run = yield* makeRun
  const operation = "ingest.write"

  // The batch's profile facts and logins as the statement's JSON parameters.
  const factsAndLogins = (batch: ReadonlyArray<Submission>): readonly [string, string] => [
    json(
      batch.flatMap(({ normalized, stored: e }) =>
        normalized.profileFacts.map((fact) => ({
          event_row_id: e.id,
          workspace_id: e.workspaceId,
          account_id: e.accountId,
          name: fact.name,
          value: fact.value,
          observed_at: fact.observedAt,
          source_event_id: fact.sourceEventId
        }))
      )
    ),
    json(
      batch.flatMap(({ normalized, stored: e }) =>
        Option.toArray(
          Option.map(normalized.login, (login) => ({
            event_row_id: e.id,
            workspace_id: login.workspaceId,
            account_id: login.accountId,
            user_id: login.userId,
            last_login_at: login.observedAt,
            source_event_id: login.sourceEventId
          }))
        )
      )
    )
  ]
  // The events as `EventStore.append` writes them (`claimAndInsert`: each key claimed in
  // `accord_event_keys`, each event stored only with its key won); the facts in key order too, so
  // concurrent statements lock conflicting keys in the same order. Byte order (COLLATE "C"), like
  // the JavaScript order the other writers use, whatever the database's collation.
  const statement = (rows: Statement.Fragment, [facts, logins]: readonly [string, string]) =>
    sql<{ readonly id: string }>`
      WITH ${claimAndInsert(sql, rows)}, facts AS (
        INSERT INTO accord_profile_facts (workspace_id, account_id, name, value, observed_at, source_event_id)
        SELECT DISTINCT ON (f.workspace_id COLLATE "C", f.account_id COLLATE "C", f.name COLLATE "C")
          f.workspace_id, f.account_id, f.name, f.value, f.observed_at, f.source_event_id
        FROM jsonb_to_recordset(${facts}::jsonb) AS f(event_row_id text, workspace_id text, account_id text, name text,
          value jsonb, observed_at int8, source_event_id text)
        JOIN inserted ON inserted.id = f.event_row_id
        ORDER BY f.workspace_id COLLATE "C", f.account_id COLLATE "C", f.name COLLATE "C", f.observed_at DESC, f.source_event_id DESC
        ON CONFLICT (workspace_id, account_id, name) DO UPDATE SET
          value = EXCLUDED.value, observed_at = EXCLUDED.observed_at, source_event_id = EXCLUDED.source_event_id
        WHERE (EXCLUDED.observed_at, EXCLUDED.source_event_id)
            > (accord_profile_facts.observed_at, accord_profile_facts.source_event_id)
      ), logins AS (
        INSERT INTO accord_account_logins (workspace_id, account_id, user_id, last_login_at, source_event_id)
        SELECT DISTINCT ON (l.workspace_id COLLATE "C", l.account_id COLLATE "C", l.user_id COLLATE "C")
          l.workspace_id, l.account_id, l.user_id, l.last_login_at, l.source_event_id
        FROM jsonb_to_recordset(${logins}::jsonb) AS l(event_row_id text, workspace_id text, account_id text, user_id text,
          last_login_at int8, source_event_id text)
        JOIN inserted ON inserted.id = l.event_row_id
        ORDER BY l.workspace_id COLLATE "C", l.account_id COLLATE "C", l.user_id COLLATE "C", l.last_login_at DESC, l.source_event_id DESC
        ON CONFLICT (workspace_id, account_id, user_id) DO UPDATE SET
          last_login_at = EXCLUDED.last_login_at, source_event_id = EXCLUDED.source_event_id
        WHERE (EXCLUDED.last_login_at, EXCLUDED.source_event_id)
            > (accord_account_logins.last_login_at, accord_account_logins.source_event_id)
      )
      SELECT id FROM inserted`
  const resolve = (batch: ReadonlyArray<Submission>, insertedIds: ReadonlyArray<string>) =>
    resolveAppend(
      sql,
      batch.map((s) => s.stored),
      insertedIds
    )

  const eventsAndFacts = (batch: ReadonlyArray<Submission>) =>
    Effect.gen(function* () {
      const rows = yield* batchRows(
        sql,
        batch.map((s) => s.stored)
      )
      const inserted = yield* run(statement(rows, factsAndLogins(batch)))
      return yield* resolve(
        batch,
        inserted.map((row) => row.id)
      )
    }).pipe(orStorageError(operation))

  const writeBatch = (batch: ReadonlyArray<Submission>): Effect.Effect<ReadonlyArray<WriteResult>, StorageError> =>
    batch.length === 0
      ? Effect.succeed([])
      : batch.some(needsMoreThanFacts)
        ? composed.write(batch)
        : eventsAndFacts(batch)
  // A bulk import's batch sends its event rows with `COPY` (`copiedRows`), in the caller's
  // transaction, through either form of the write.
  const write = (
    batch: ReadonlyArray<Submission>,
    options?: WriteOptions
  ): Effect.Effect<ReadonlyArray<WriteResult>, StorageError> =>
    options?.bulk === true ? Effect.locally(writeBatch(batch), copiedRows, true) : writeBatch(batch)

  // The callback form (PostgreSQL's pool, `DirectStatements`): the common batch without a fiber.
  // The statement's text is the same for every batch (three parameters), compiled once.
  const direct = Option.getOrUndefined(yield* Effect.serviceOption(DirectStatements))
  const writer: IngestWriterService = { write }
  if (direct === undefined) return Context.make(IngestWriter, writer) as Context.Context<IngestWriter | IngestWriterNow>
  const runCallback = Runtime.runCallback(yield* Effect.runtime<never>())
  const text = statement(jsonRows(sql, ""), ["", ""]).compile()[0]
  const writeNow = (
    batch: ReadonlyArray<Submission>,
    done: (exit: Exit.Exit<ReadonlyArray<WriteResult>, StorageError>) => void
  ): void => {
    if (batch.length === 0 || batch.some(needsMoreThanFacts)) return void runCallback(write(batch), { onExit: done })
    direct.run(text, [eventsJson(batch.map((s) => s.stored)), ...factsAndLogins(batch)], (cause, rows) => {
      // The error `run` fails with, mapped as `write` maps it.
      if (cause !== undefined) return done(Exit.fail(toStorageError(operation, executeFailed(cause))))
      if (rows.length === batch.length) return done(Exit.succeed(allStored(batch.map((s) => s.stored))))
      runCallback(
        resolve(
          batch,
          rows.map((row) => row["id"] as string)
        ).pipe(orStorageError(operation)),
        { onExit: done }
      )
    })
  }
  return Context.make(IngestWriter, writer).pipe(Context.add(IngestWriterNow, { writeNow }))
})

export const layer: Layer.Layer<
  IngestWriter | IngestWriterNow,
  never,
  SqlClient.SqlClient | EventStore | AccountProfileStore | FeatureGateStore | UsageMeterStore | Transactor
> = Layer.effectContext(make)
