/**
 * The account profiles, relative to `/api/admin/v1/workspaces/{workspaceId}`:
 * `GET /accounts` (admin or developer:read keys): the accounts with a profile (at least one fact),
 * by account id, paged, each with its fact count and when its oldest and newest facts were observed;
 * `GET /accounts/{accountId}` (admin or developer:read keys): the profile's facts, each with the
 * event that set it (`sourceEvent: { id, event_name, event_id, timestamp }`), the active-user
 * counts as of the read, and the account's feature gates (each settled against the evidence
 * committed so far).
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { settleGate } from "../../../core/ingest/GateEvidence.ts"
import { readActiveUsers } from "../../../core/ingest/Profile.ts"
import { AccountProfileStore } from "../../../core/ports/AccountProfileStore.ts"
import type { ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import { EventStore, type StoredEvent } from "../../../core/ports/EventStore.ts"
import { FeatureGateStore } from "../../../core/ports/FeatureGateStore.ts"
import { NotFound } from "../../../core/protocol/NotFound.ts"
import { formatTimestamp } from "../../../core/protocol/Timestamp.ts"
import { jsonResponse as json } from "../Answer.ts"
import { adminOrDeveloper, guarded } from "../Auth.ts"
import { encodeTextCursor, listQuery, pageOf, textCursor, validQuery } from "../Paging.ts"
import { gateView } from "./FeatureGates.ts"

/**
 * What the account-profile routes read: keys for authentication, events, profiles and feature
 * gates.
 */
export type AccountsServices = ApiKeyStore | Crypto | EventStore | AccountProfileStore | FeatureGateStore

const sourceEventView = (event: StoredEvent) => ({
  id: event.id,
  event_name: event.eventName,
  event_id: event.eventId,
  timestamp: formatTimestamp(event.occurredAt)
})

const getAccount = (workspaceId: string) =>
  Effect.gen(function* () {
    const accountId = (yield* HttpRouter.params)["accountId"] ?? ""
    const events = yield* EventStore
    const profile = yield* (yield* AccountProfileStore).get(workspaceId, accountId)
    const facts = Option.match(profile, { onNone: () => [], onSome: (p) => p.facts })
    const recent = yield* events.list({ workspaceId, accountId, limit: 1 })
    const gates = yield* Effect.forEach(
      yield* (yield* FeatureGateStore).listByAccount(workspaceId, accountId),
      settleGate
    )
    if (Option.isNone(profile) && recent.length === 0 && gates.length === 0) {
      return yield* new NotFound({ resource: "account" })
    }
    const sources = new Map(
      (yield* events.getByIds(
        workspaceId,
        facts.map((fact) => ({ id: fact.sourceEventId, occurredAt: fact.observedAt }))
      )).map((event) => [event.id, event])
    )
    const activeUsers = yield* readActiveUsers(workspaceId, accountId)
    return json({
      accountId,
      lastEventAt: recent[0] === undefined ? null : formatTimestamp(recent[0].occurredAt),
      facts: [
        ...facts.map((fact) => {
          const source = sources.get(fact.sourceEventId)
          return {
            name: fact.name,
            value: fact.value,
            observedAt: formatTimestamp(fact.observedAt),
            sourceEventId: fact.sourceEventId,
            sourceEvent: source === undefined ? null : sourceEventView(source)
          }
        }),
        // counted at the read from every recorded login, so no single event is their source
        ...activeUsers.map(({ asOf, name, value }) => ({
          name,
          value,
          observedAt: formatTimestamp(asOf),
          sourceEventId: null,
          sourceEvent: null
        }))
      ],
      featureGates: gates.map(gateView)
    })
  })

const listAccounts = (workspaceId: string) =>
  Effect.gen(function* () {
    const query = yield* listQuery
    const after = textCursor(query)
    yield* validQuery(query)
    const rows = yield* (yield* AccountProfileStore).listAccounts({
      workspaceId,
      limit: query.limit + 1,
      ...(Option.isSome(after) ? { after: after.value } : {})
    })
    return json(
      pageOf(
        rows,
        query.limit,
        (account) => ({
          accountId: account.accountId,
          factCount: account.factCount,
          firstObservedAt: formatTimestamp(account.firstObservedAt),
          lastObservedAt: formatTimestamp(account.lastObservedAt)
        }),
        (account) => encodeTextCursor(account.accountId)
      )
    )
  })

/**
 * The handlers of `GET /accounts` and `GET /accounts/{accountId}` behind the admin guard, for the
 * declared `events` group (`Events.group`).
 */
export const listAccountsRoute = guarded(adminOrDeveloper)(listAccounts)
/** `GET /accounts/{accountId}`: one account's profile, for an admin or `developer:read` key. */
export const getAccountRoute = guarded(adminOrDeveloper)(getAccount)
