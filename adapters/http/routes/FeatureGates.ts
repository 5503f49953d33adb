/**
 * Feature gates awaiting access evidence, relative to `/api/admin/v1/workspaces/{workspaceId}`:
 * `POST /feature-gates` (admin keys), `GET /feature-gates?account_id&state&cursor&limit` (newest
 * first) and `GET /feature-gates/{id}` (admin or developer:read keys).
 * A gate stays `checking` until an `entitlement_active` event for the same account, journey,
 * version and feature, timed after the journey began and sent with a server ingest key, unlocks
 * it. Every read of a checking gate settles it against the evidence committed so far
 * (`GateEvidence.settleGate`); creating and reading one gate are `core/ingest/FeatureGates.ts`.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as FeatureGates from "../../../core/ingest/FeatureGates.ts"
import { settleGate } from "../../../core/ingest/GateEvidence.ts"
import type { ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import type { EventStore } from "../../../core/ports/EventStore.ts"
import { type FeatureGate, FeatureGateStore } from "../../../core/ports/FeatureGateStore.ts"
import { formatTimestamp, parseTimestamp } from "../../../core/protocol/Timestamp.ts"
import * as FeatureGatesApi from "../api/FeatureGatesApi.ts"
import { jsonResponse as json } from "../Answer.ts"
import { adminOnly, adminOrDeveloper, guarded } from "../Auth.ts"
import { readJson } from "../Body.ts"
import * as Api from "../api/Api.ts"
import { encodeTimeCursor, listQuery, oneOf, pageOf, timeCursor, validQuery } from "../Paging.ts"

/**
 * What the feature-gate routes need: key authentication, events (the evidence a gate settles on)
 * and the gate store.
 */
export type FeatureGatesServices = ApiKeyStore | Crypto | EventStore | FeatureGateStore

/**
 * A gate as answered, here and in the account profile.
 */
export const gateView = (gate: FeatureGate) => ({
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

const gateMessages = {
  featureKey: "must be a lower-case code of 1 to 64 characters",
  startedAt: "must be an RFC 3339 timestamp"
}

const createGate = (maxBodyBytes: number) => (workspaceId: string) =>
  Effect.gen(function* () {
    const body = yield* readJson(FeatureGatesApi.CreateGateBody, maxBodyBytes, gateMessages)
    const gate = yield* FeatureGates.createGate({
      workspaceId,
      accountId: body.accountId,
      journeyId: body.journeyId,
      versionId: body.versionId,
      featureKey: body.featureKey,
      startedAt: parseTimestamp(body.startedAt)!
    })
    return json(gateView(gate), 201)
  })

const getGate = (workspaceId: string) =>
  Effect.flatMap(HttpRouter.params, (params) =>
    Effect.map(FeatureGates.getGate(workspaceId, params["id"] ?? ""), (gate) => json(gateView(gate)))
  )

const listGates = (workspaceId: string) =>
  Effect.gen(function* () {
    const query = yield* listQuery
    const state = oneOf(query, "state", ["checking", "unlocked"] as const)
    const after = timeCursor(query)
    yield* validQuery(query)
    const accountId = query.params.get("account_id")
    const rows = yield* (yield* FeatureGateStore).list({
      workspaceId,
      limit: query.limit + 1,
      ...(accountId !== null ? { accountId } : {}),
      ...(state !== undefined ? { state } : {}),
      ...(Option.isSome(after) ? { after: { createdAt: after.value.at, id: after.value.id } } : {})
    })
    // every listed gate settled, as every other read of a gate is
    const settled = yield* Effect.forEach(rows.slice(0, query.limit), settleGate)
    return json(
      pageOf([...settled, ...rows.slice(query.limit)], query.limit, gateView, (gate) =>
        encodeTimeCursor(gate.createdAt, gate.id)
      )
    )
  })

/**
 * The group's handlers, bound to the declaration (`api/FeatureGatesApi.ts`). Raw: bodies are read
 * by `Body.readJson`, and the list reads its query itself, after the guard.
 */
export const group = (maxBodyBytes: number) =>
  HttpApiBuilder.group(Api.api, "featureGates", (handlers) =>
    handlers
      .handleRaw("createFeatureGate", () => guarded(adminOnly)(createGate(maxBodyBytes)))
      .handleRaw("listFeatureGates", () => guarded(adminOrDeveloper)(listGates))
      .handleRaw("getFeatureGate", () => guarded(adminOrDeveloper)(getGate))
  )
