/**
 * What arrived, for people and tools (spec "Settings > Integrations > Direct API and the Events view
 * show it"), and the feature gates awaiting access evidence. Under
 * `/api/admin/v1/workspaces/{workspaceId}`:
 *
 * - `GET /events?account_id&event_name&from&to&cursor&limit`: newest first, cursor pagination;
 * - `GET /accounts/{accountId}`: the profile's facts, each with the event that set it
 *   (`sourceEvent: { id, event_name, event_id, timestamp }`), the active-user counts as of the
 *   read, and the account's feature gates;
 * - `POST /feature-gates`, `GET /feature-gates/{id}`: a gate `checking` until an `entitlement_active`
 *   event for the same account, journey, version and feature, timed after the journey began and sent
 *   with a server ingest key, unlocks it. Every read of a checking gate settles it against the
 *   evidence committed so far (`GateEvidence.settleGate`).
 *
 * Reads accept an `admin` or a `developer:read` key of the workspace; creating a gate needs `admin`.
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { AccountProfileStore } from "../../../core/ports/AccountProfileStore.ts"
import type { ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import { randomUuid } from "../../../core/protocol/Uuid.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import { EventStore, type StoredEvent } from "../../../core/ports/EventStore.ts"
import { type FeatureGate, FeatureGateStore } from "../../../core/ports/FeatureGateStore.ts"
import { settleGate } from "../../../core/ingest/GateEvidence.ts"
import { readActiveUsers } from "../../../core/ingest/Profile.ts"
import { Uuid } from "../../../core/protocol/Uuid.ts"
import { formatTimestamp, parseTimestamp } from "../../../core/protocol/Timestamp.ts"
import { authorizeWorkspace, storageUnavailable } from "../Auth.ts"
import { readJson } from "../Body.ts"
import { adminPrefix } from "../Paths.ts"
import * as Problem from "../Problem.ts"
import { jsonResponse as json } from "../Answer.ts"

/**
 * @since 0.1.0
 */
export type InsightsServices = ApiKeyStore | Crypto | EventStore | AccountProfileStore | FeatureGateStore

/**
 * Page size bounds of `GET /events`.
 *
 * @since 0.1.0
 */
export const defaultPageSize = 50
/**
 * @since 0.1.0
 */
export const maxPageSize = 200


const allowing = authorizeWorkspace

const eventView = (event: StoredEvent) => ({
  id: event.id,
  received_at: formatTimestamp(event.receivedAt),
  ...(event.body as object)
})

const encodeCursor = (event: StoredEvent): string => btoa(`${event.occurredAt}:${event.id}`).replaceAll("=", "")

const decodeCursor = (cursor: string): Option.Option<{ occurredAt: number; id: string }> => {
  try {
    const [at, id] = atob(cursor).split(":")
    const occurredAt = Number(at)
    return Number.isSafeInteger(occurredAt) && id !== undefined && id.length > 0 ? Option.some({ occurredAt, id }) : Option.none()
  } catch {
    return Option.none()
  }
}

const listEvents = Effect.gen(function*() {
  const workspaceId = yield* allowing(["admin", "developer:read"])
  const query = (yield* HttpServerRequest.HttpServerRequest).url
  const params = new URL(query, "http://localhost").searchParams
  const errors: Array<{ path: string; message: string }> = []
  const time = (name: string) => {
    const value = params.get(name)
    if (value === null) return undefined
    const parsed = parseTimestamp(value)
    if (parsed === undefined) errors.push({ path: name, message: "must be an RFC 3339 timestamp" })
    return parsed
  }
  const from = time("from")
  const to = time("to")
  const limitText = params.get("limit")
  const limit = limitText === null ? defaultPageSize : Number(limitText)
  if (!Number.isInteger(limit) || limit < 1 || limit > maxPageSize) {
    errors.push({ path: "limit", message: `must be an integer from 1 to ${maxPageSize}` })
  }
  const cursorText = params.get("cursor")
  const after = cursorText === null ? Option.none() : decodeCursor(cursorText)
  if (cursorText !== null && Option.isNone(after)) errors.push({ path: "cursor", message: "is not a cursor from this API" })
  if (errors.length > 0) return yield* Problem.badRequest("invalid_query", "the query has invalid parameters", errors)
  const accountId = params.get("account_id")
  const eventName = params.get("event_name")
  const page = yield* (yield* EventStore).list({
    workspaceId,
    limit: limit + 1,
    ...(accountId !== null ? { accountId } : {}),
    ...(eventName !== null ? { eventName } : {}),
    ...(from !== undefined ? { from } : {}),
    ...(to !== undefined ? { to } : {}),
    ...(Option.isSome(after) ? { after: after.value } : {})
  }).pipe(Effect.mapError(storageUnavailable))
  const data = page.slice(0, limit)
  return json({ data: data.map(eventView), nextCursor: page.length > limit ? encodeCursor(data[data.length - 1]!) : null })
})

const gateView = (gate: FeatureGate) => ({
  id: gate.id,
  accountId: gate.accountId,
  journeyId: gate.journeyId,
  versionId: gate.versionId,
  featureKey: gate.featureKey,
  startedAt: formatTimestamp(gate.startedAt),
  state: gate.state,
  unlockedAt: gate.unlockedAt === null ? null : formatTimestamp(gate.unlockedAt),
  unlockEventId: gate.unlockEventId
})

const sourceEventView = (event: StoredEvent) => ({
  id: event.id,
  event_name: event.eventName,
  event_id: event.eventId,
  timestamp: formatTimestamp(event.occurredAt)
})

const getAccount = Effect.gen(function*() {
  const workspaceId = yield* allowing(["admin", "developer:read"])
  const accountId = (yield* HttpRouter.params)["accountId"] ?? ""
  const events = yield* EventStore
  const profile = yield* (yield* AccountProfileStore).get(workspaceId, accountId)
  const facts = Option.match(profile, { onNone: () => [], onSome: (p) => p.facts })
  const recent = yield* events.list({ workspaceId, accountId, limit: 1 })
  const gates = yield* Effect.forEach(yield* (yield* FeatureGateStore).listByAccount(workspaceId, accountId), settleGate)
  if (Option.isNone(profile) && recent.length === 0 && gates.length === 0) {
    return yield* Problem.notFound("no events have arrived for this account")
  }
  const sources = new Map(
    (yield* events.getByIds(workspaceId, [...new Set(facts.map((fact) => fact.sourceEventId))])).map((event) => [event.id, event])
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
}).pipe(Effect.catchTag("StorageError", (error) => Effect.fail(storageUnavailable(error))))

/**
 * `POST /feature-gates` body.
 *
 * @since 0.1.0
 */
export const CreateGateBody = Schema.Struct({
  accountId: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256)),
  journeyId: Uuid,
  versionId: Uuid,
  featureKey: Schema.String.pipe(Schema.pattern(/^[a-z][a-z0-9_.:-]{0,63}$/)),
  startedAt: Schema.String.pipe(Schema.filter((s) => parseTimestamp(s) !== undefined || "an RFC 3339 timestamp"))
})

const gateMessages = {
  featureKey: "must be a lower-case code of 1 to 64 characters",
  startedAt: "must be an RFC 3339 timestamp"
}

const createGate = (maxBodyBytes: number) =>
  Effect.gen(function*() {
    const workspaceId = yield* allowing(["admin"])
    const body = yield* readJson(CreateGateBody, maxBodyBytes, gateMessages)
    const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
    const gates = yield* FeatureGateStore
    const id = yield* randomUuid
    yield* gates.create({
      id,
      workspaceId,
      accountId: body.accountId,
      journeyId: body.journeyId.toLowerCase(),
      versionId: body.versionId.toLowerCase(),
      featureKey: body.featureKey,
      startedAt: parseTimestamp(body.startedAt)!,
      createdAt: now
    }).pipe(Effect.mapError(storageUnavailable))
    // evidence committed before (or while) the gate was created unlocks it now
    const created = yield* gates.get(workspaceId, id).pipe(Effect.mapError(storageUnavailable))
    const gate = yield* settleGate(Option.getOrThrow(created)).pipe(Effect.mapError(storageUnavailable))
    return json(gateView(gate), 201)
  })

const getGate = Effect.gen(function*() {
  const workspaceId = yield* allowing(["admin", "developer:read"])
  const id = (yield* HttpRouter.params)["id"] ?? ""
  const gate = yield* (yield* FeatureGateStore).get(workspaceId, id).pipe(Effect.mapError(storageUnavailable))
  if (Option.isNone(gate)) return yield* Problem.notFound("no such feature gate in this workspace")
  return json(gateView(yield* settleGate(gate.value).pipe(Effect.mapError(storageUnavailable))))
})

/**
 * Adds the routes (under the admin prefix) to a router.
 *
 * @since 0.1.0
 */
export const routes = (maxBodyBytes: number) =>
<E, R>(router: HttpRouter.HttpRouter<E, R>) =>
  router.pipe(
    HttpRouter.get(`${adminPrefix}/:workspaceId/events`, listEvents),
    HttpRouter.get(`${adminPrefix}/:workspaceId/accounts/:accountId`, getAccount),
    HttpRouter.post(`${adminPrefix}/:workspaceId/feature-gates`, createGate(maxBodyBytes)),
    HttpRouter.get(`${adminPrefix}/:workspaceId/feature-gates/:id`, getGate)
  )
