/**
 * `AccountProfileStore` on SQL. Upserts replace a stored fact, user field or last login only when
 * the incoming one is newer by `(observed_at, source_event_id)`, decided in the statement itself, so
 * concurrent and out-of-order writers converge.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  AccountProfileStore,
  type AccountProfileStoreService,
  type FactsEntry,
  isNewer,
  type ProfileFact,
  type UserField
} from "../../core/ports/AccountProfileStore.ts"
import { anyOf, json, newestInKeyOrder, num, orStorageError } from "./SqlSupport.ts"

interface FactRow {
  readonly name: string
  readonly value: unknown
  readonly observed_at: unknown
  readonly source_event_id: string
}

interface UserRow {
  readonly workspace_id: string
  readonly user_id: string
  readonly name: string | null
  readonly name_observed_at: unknown
  readonly name_source_event_id: string | null
  readonly email: string | null
  readonly email_observed_at: unknown
  readonly email_source_event_id: string | null
}

const field = (value: string | null, observedAt: unknown, source: string | null): UserField | null =>
  value === null || source === null ? null : { value, observedAt: num(observedAt), sourceEventId: source }

export const make: Effect.Effect<AccountProfileStoreService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => {
    const applyFactsBatch = (entries: ReadonlyArray<FactsEntry>) => {
      // One row per (workspace, account, fact), the newest (one statement may not update a row twice),
      // in key order so concurrent batches lock rows in the same order.
      const newest = new Map<string, FactsEntry & { readonly fact: ProfileFact }>()
      for (const entry of entries) {
        for (const fact of entry.facts) {
          const k = entry.workspaceId + "\u0000" + entry.accountId + "\u0000" + fact.name
          if (isNewer(fact, newest.get(k)?.fact)) newest.set(k, { ...entry, fact })
        }
      }
      if (newest.size === 0) return Effect.void
      return sql`INSERT INTO accord_profile_facts ${sql.insert(
        [...newest.entries()]
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([, { accountId, fact, workspaceId }]) => ({
            workspace_id: workspaceId,
            account_id: accountId,
            name: fact.name,
            value: json(fact.value),
            observed_at: fact.observedAt,
            source_event_id: fact.sourceEventId
          }))
      )} ON CONFLICT (workspace_id, account_id, name) DO UPDATE SET
        value = EXCLUDED.value, observed_at = EXCLUDED.observed_at, source_event_id = EXCLUDED.source_event_id
      WHERE (EXCLUDED.observed_at, EXCLUDED.source_event_id)
          > (accord_profile_facts.observed_at, accord_profile_facts.source_event_id)`.pipe(
        Effect.asVoid,
        orStorageError("profile.applyFacts")
      )
    }
    return {
      // account ids compared byte-wise (COLLATE "C"), as the memory store does; the order is that of
      // `accord_profile_facts_accounts` (migration 0019)
      listAccounts: ({ after, limit, workspaceId }) =>
        sql<{
          readonly account_id: string
          readonly facts: unknown
          readonly first_at: unknown
          readonly last_at: unknown
        }>`
        SELECT account_id COLLATE "C" AS account_id, count(*) AS facts, min(observed_at) AS first_at, max(observed_at) AS last_at
        FROM accord_profile_facts
        WHERE workspace_id = ${workspaceId}${after === undefined ? sql`` : sql` AND account_id COLLATE "C" > ${after}`}
        GROUP BY account_id COLLATE "C" ORDER BY account_id COLLATE "C" LIMIT ${limit}`.pipe(
          Effect.map((rows) =>
            rows.map((row) => ({
              accountId: row.account_id,
              factCount: num(row.facts),
              firstObservedAt: num(row.first_at),
              lastObservedAt: num(row.last_at)
            }))
          ),
          orStorageError("profile.listAccounts")
        ),
      applyFacts: (workspaceId, accountId, facts) => applyFactsBatch([{ workspaceId, accountId, facts }]),
      applyFactsBatch,
      get: (workspaceId, accountId) =>
        sql<FactRow>`SELECT name, value, observed_at, source_event_id FROM accord_profile_facts
          WHERE workspace_id = ${workspaceId} AND account_id = ${accountId} ORDER BY name`.pipe(
          Effect.map((rows) =>
            rows.length === 0
              ? Option.none()
              : Option.some({
                  workspaceId,
                  accountId,
                  facts: rows.map(
                    (row): ProfileFact => ({
                      name: row.name,
                      value: row.value,
                      observedAt: num(row.observed_at),
                      sourceEventId: row.source_event_id
                    })
                  )
                })
          ),
          orStorageError("profile.get")
        ),
      upsertUser: ({ email, name, userId, workspaceId }) =>
        sql`INSERT INTO accord_users (workspace_id, user_id, name, name_observed_at, name_source_event_id,
            email, email_observed_at, email_source_event_id)
          VALUES (${workspaceId}, ${userId}, ${name?.value ?? null}, ${name?.observedAt ?? null}, ${name?.sourceEventId ?? null},
            ${email?.value ?? null}, ${email?.observedAt ?? null}, ${email?.sourceEventId ?? null})
          ON CONFLICT (workspace_id, user_id) DO UPDATE SET
            (name, name_observed_at, name_source_event_id) = (
              SELECT CASE WHEN n THEN EXCLUDED.name ELSE accord_users.name END,
                     CASE WHEN n THEN EXCLUDED.name_observed_at ELSE accord_users.name_observed_at END,
                     CASE WHEN n THEN EXCLUDED.name_source_event_id ELSE accord_users.name_source_event_id END
              FROM (SELECT EXCLUDED.name_observed_at IS NOT NULL AND (accord_users.name_observed_at IS NULL OR
                (EXCLUDED.name_observed_at, EXCLUDED.name_source_event_id)
                  > (accord_users.name_observed_at, accord_users.name_source_event_id)) AS n) AS newer),
            (email, email_observed_at, email_source_event_id) = (
              SELECT CASE WHEN e THEN EXCLUDED.email ELSE accord_users.email END,
                     CASE WHEN e THEN EXCLUDED.email_observed_at ELSE accord_users.email_observed_at END,
                     CASE WHEN e THEN EXCLUDED.email_source_event_id ELSE accord_users.email_source_event_id END
              FROM (SELECT EXCLUDED.email_observed_at IS NOT NULL AND (accord_users.email_observed_at IS NULL OR
                (EXCLUDED.email_observed_at, EXCLUDED.email_source_event_id)
                  > (accord_users.email_observed_at, accord_users.email_source_event_id)) AS e) AS newer)`.pipe(
          Effect.asVoid,
          orStorageError("profile.upsertUser")
        ),
      recordLogins: (logins) => {
        const rows = newestInKeyOrder(logins, (login) =>
          [login.workspaceId, login.accountId, login.userId].join("\u0000")
        )
        if (rows.length === 0) return Effect.void
        return sql`INSERT INTO accord_account_logins ${sql.insert(
          rows.map((login) => ({
            workspace_id: login.workspaceId,
            account_id: login.accountId,
            user_id: login.userId,
            last_login_at: login.observedAt,
            source_event_id: login.sourceEventId
          }))
        )} ON CONFLICT (workspace_id, account_id, user_id) DO UPDATE SET
          last_login_at = EXCLUDED.last_login_at, source_event_id = EXCLUDED.source_event_id
        WHERE (EXCLUDED.last_login_at, EXCLUDED.source_event_id)
            > (accord_account_logins.last_login_at, accord_account_logins.source_event_id)`.pipe(
          Effect.asVoid,
          orStorageError("profile.recordLogins")
        )
      },
      countActiveUsers: (workspaceId, accountId, since) =>
        since.length === 0
          ? Effect.succeed([])
          : sql<{ readonly active: unknown }>`
        SELECT count(l.user_id) AS active
        FROM jsonb_array_elements(${json(since)}::jsonb) WITH ORDINALITY AS w(since, i)
        LEFT JOIN accord_account_logins l
          ON l.workspace_id = ${workspaceId} AND l.account_id = ${accountId} AND l.last_login_at >= (w.since)::bigint
        GROUP BY w.i ORDER BY w.i`.pipe(
              Effect.map((rows) => rows.map((row) => num(row.active))),
              orStorageError("profile.countActiveUsers")
            ),
      getUser: (workspaceId, userId) =>
        sql<UserRow>`SELECT * FROM accord_users WHERE workspace_id = ${workspaceId} AND user_id = ${userId}`.pipe(
          Effect.map((rows) =>
            Option.map(Option.fromNullable(rows[0]), (row) => ({
              workspaceId: row.workspace_id,
              userId: row.user_id,
              name: field(row.name, row.name_observed_at, row.name_source_event_id),
              email: field(row.email, row.email_observed_at, row.email_source_event_id)
            }))
          ),
          orStorageError("profile.getUser")
        ),
      listLogins: (workspaceId, accountId) =>
        sql<{
          readonly user_id: string
          readonly last_login_at: unknown
          readonly source_event_id: string
        }>`SELECT user_id, last_login_at, source_event_id FROM accord_account_logins
          WHERE workspace_id = ${workspaceId} AND account_id = ${accountId} ORDER BY user_id COLLATE "C"`.pipe(
          Effect.map((rows) =>
            rows.map((row) => ({
              workspaceId,
              accountId,
              userId: row.user_id,
              observedAt: num(row.last_login_at),
              sourceEventId: row.source_event_id
            }))
          ),
          orStorageError("profile.listLogins")
        ),
      // One statement: the deletes are data-modifying CTEs, so the user records of an account's
      // login users are found from the logins it removes.
      eraseSubject: ({ sourceEventIds, subject, userIds, workspaceId }) =>
        (subject.kind === "account"
          ? sql<{ readonly facts: unknown; readonly users: unknown; readonly logins: unknown }>`
          WITH facts AS (
            DELETE FROM accord_profile_facts WHERE workspace_id = ${workspaceId} AND account_id = ${subject.id}
            RETURNING 1
          ), logins AS (
            DELETE FROM accord_account_logins WHERE workspace_id = ${workspaceId} AND account_id = ${subject.id}
            RETURNING user_id
          ), users AS (
            DELETE FROM accord_users WHERE workspace_id = ${workspaceId}
              AND (user_id IN (SELECT user_id FROM logins) OR user_id = ANY(${anyOf(sql, userIds)}))
            RETURNING 1
          )
          SELECT (SELECT count(*) FROM facts) AS facts, (SELECT count(*) FROM users) AS users,
            (SELECT count(*) FROM logins) AS logins`
          : sql<{ readonly facts: unknown; readonly users: unknown; readonly logins: unknown }>`
          WITH facts AS (
            DELETE FROM accord_profile_facts WHERE workspace_id = ${workspaceId}
              AND source_event_id = ANY(${anyOf(sql, sourceEventIds)})
            RETURNING 1
          ), logins AS (
            DELETE FROM accord_account_logins WHERE workspace_id = ${workspaceId} AND user_id = ${subject.id}
            RETURNING 1
          ), users AS (
            DELETE FROM accord_users WHERE workspace_id = ${workspaceId} AND user_id = ${subject.id} RETURNING 1
          )
          SELECT (SELECT count(*) FROM facts) AS facts, (SELECT count(*) FROM users) AS users,
            (SELECT count(*) FROM logins) AS logins`
        ).pipe(
          Effect.map(([row]) => ({ profileFacts: num(row!.facts), users: num(row!.users), logins: num(row!.logins) })),
          orStorageError("profile.eraseSubject")
        )
    }
  }
)

export const layer: Layer.Layer<AccountProfileStore, never, SqlClient.SqlClient> = Layer.effect(
  AccountProfileStore,
  make
)
