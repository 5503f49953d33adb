/**
 * ActionLedger in memory, sharing its table with the memory outbox so that creating an action and
 * enqueuing its work is one atomic step, as in SQL.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { completionIdentity } from "../../core/connector/CompletionIdentity.ts"
import {
  ActionLedger,
  type ActionLedgerService,
  actorSubjectOf,
  type ActionRecord,
  claimRefused,
  type CompletionClaim,
  type CreateResult,
  type HistoryEntry,
  type IntakeKeyClaim,
  newestFirst,
  notCountedForFrequency,
  type RedactResult,
  redactedRequest,
  type TransitionResult
} from "../../core/ports/ActionLedger.ts"
import type { NonceStore, NonceStoreSync, NonceStoreSyncService } from "../../core/ports/NonceStore.ts"
import { makeUsedNonces, usedNoncesContext } from "../../core/protocol/UsedNonces.ts"
import { MemoryOutboxTable } from "./Outbox.ts"
import { type NewOutboxItem, Outbox, type OutboxItem } from "../../core/ports/Outbox.ts"

/**
 * An in-memory ledger sharing its table with an in-memory outbox, so that creating an action and
 * enqueuing its work is one atomic step, as in SQL. A create's `nonce` is recorded in `nonces`
 * (this process's used nonces, claimed synchronously), its own record unless one is given.
 */
export const make = (
  outbox: MemoryOutboxTable,
  nonces: NonceStoreSyncService = makeUsedNonces()
): ActionLedgerService => {
  const claimNonce = nonces.claim
  const records = new Map<string, ActionRecord>()
  const byKey = new Map<string, string>()
  const histories = new Map<string, Array<HistoryEntry>>()
  const completions = new Map<string, CompletionClaim>()
  const intakeKeys = new Map<string, IntakeKeyClaim>()
  const intakeKeyId = (workspaceId: string, key: string) => workspaceId + "\u0000" + key
  const liveIntakeKey = (workspaceId: string, idempotencyKey: string, liveSince: number) => {
    const claim = intakeKeys.get(intakeKeyId(workspaceId, idempotencyKey))
    return claim !== undefined && claim.createdAt >= liveSince ? claim : undefined
  }
  /** The action an outbox item's payload names (`actionRequestId`), if stored. */
  const actionOf = (item: OutboxItem) =>
    records.get((item.payload as { readonly actionRequestId?: string } | null)?.actionRequestId ?? "")
  const canEnqueue = (item: NewOutboxItem | undefined) =>
    item === undefined || (!outbox.items.has(item.id) && !outbox.byKey.has(item.kind + "\u0000" + item.dedupeKey))
  return {
    create: ({ history, intakeKey, nonce, outbox: item, outboxLease, record }) =>
      Effect.sync((): CreateResult => {
        if (nonce !== undefined && intakeKey !== undefined)
          throw new Error("a create's nonce is not combined with an intake key")
        if (nonce !== undefined && !claimNonce(nonce)) return "replayed_nonce"
        const taken =
          intakeKey && liveIntakeKey(intakeKey.claim.workspaceId, intakeKey.claim.idempotencyKey, intakeKey.liveSince)
        if (taken) return { _tag: "IntakeKeyTaken", claim: taken }
        if (records.has(record.actionRequestId) || byKey.has(record.providerIdempotencyKey) || !canEnqueue(item)) {
          return "duplicate"
        }
        records.set(record.actionRequestId, { ...record, updatedAt: record.createdAt, version: 1 })
        byKey.set(record.providerIdempotencyKey, record.actionRequestId)
        histories.set(record.actionRequestId, [{ seq: 1, ...history, fromState: null, toState: record.state }])
        if (item !== undefined) {
          outbox.enqueue(item)
          if (outboxLease !== undefined) {
            outbox.items.set(item.id, {
              ...outbox.items.get(item.id)!,
              leaseOwner: outboxLease.owner,
              leaseExpiresAt: outboxLease.expiresAt
            })
          }
        }
        if (intakeKey !== undefined) {
          intakeKeys.set(intakeKeyId(intakeKey.claim.workspaceId, intakeKey.claim.idempotencyKey), intakeKey.claim)
        }
        return "created"
      }),
    findIntakeKey: ({ idempotencyKey, liveSince, workspaceId }) =>
      Effect.sync(() => Option.fromNullable(liveIntakeKey(workspaceId, idempotencyKey, liveSince))),
    get: (id) => Effect.sync(() => Option.fromNullable(records.get(id))),
    getByIdempotencyKey: (key) =>
      Effect.sync(() => {
        const id = byKey.get(key)
        return Option.fromNullable(id === undefined ? undefined : records.get(id))
      }),
    transition: (options) =>
      Effect.sync((): TransitionResult => {
        if (options.completion !== undefined) {
          const existing = completions.get(options.completion.completionId)
          const identity = completionIdentity(existing, options.completion)
          if (identity !== "new") return claimRefused(identity, existing!)
        }
        const current = records.get(options.actionRequestId)
        if (current === undefined || current.version !== options.expectedVersion || !canEnqueue(options.outbox)) {
          return { _tag: "Stale" }
        }
        const record: ActionRecord = {
          ...current,
          state: options.toState,
          updatedAt: options.at,
          version: current.version + 1,
          ...(options.acknowledgement !== undefined ? { acknowledgement: options.acknowledgement } : {}),
          ...(options.sealedContinuation !== undefined ? { sealedContinuation: options.sealedContinuation } : {})
        }
        records.set(record.actionRequestId, record)
        const entries = histories.get(record.actionRequestId)!
        entries.push({
          seq: entries.length + 1,
          ...options.history,
          fromState: current.state,
          toState: options.toState
        })
        if (options.completion !== undefined) completions.set(options.completion.completionId, options.completion)
        if (options.outbox !== undefined) outbox.enqueue(options.outbox)
        if (options.completeOutboxItem !== undefined) {
          outbox.complete(options.completeOutboxItem.id, options.completeOutboxItem.owner, options.at)
        }
        return { _tag: "Applied", record }
      }),
    leaseWithActions: (request) =>
      Effect.sync(() =>
        outbox.lease(request).map((item) => ({
          item,
          action: Option.fromNullable(actionOf(item))
        }))
      ),
    expediteRetries: ({ connectionId, errors, kinds, limit, now, revision }) =>
      Effect.sync(() => {
        const waiting = [...outbox.items.values()]
          .filter((item) => {
            if (
              item.completedAt !== null ||
              item.nextAttemptAt <= now ||
              !kinds.includes(item.kind) ||
              item.lastError === null ||
              !errors.includes(item.lastError) ||
              (item.leaseExpiresAt !== null && item.leaseExpiresAt > now)
            )
              return false
            const action = actionOf(item)
            return action !== undefined && action.connectionId === connectionId && action.revision === revision
          })
          .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || a.createdAt - b.createdAt)
        const made = limit === undefined ? waiting : waiting.slice(0, limit)
        for (const item of made) outbox.items.set(item.id, { ...item, nextAttemptAt: now })
        return made.length
      }),
    history: (id) => Effect.sync(() => [...(histories.get(id) ?? [])]),
    findCompletion: (completionId) => Effect.sync(() => Option.fromNullable(completions.get(completionId))),
    lastActivityOnRevision: (connectionId, revision) =>
      Effect.sync(() => {
        let latest: number | undefined
        for (const r of records.values()) {
          if (
            r.connectionId === connectionId &&
            r.revision === revision &&
            (latest === undefined || r.updatedAt > latest)
          ) {
            latest = r.updatedAt
          }
        }
        return Option.fromNullable(latest)
      }),
    unfinishedOnRevision: ({ connectionId, revision, work }) =>
      Effect.sync(() => {
        const unfinished = new Set<string>()
        for (const item of outbox.items.values()) {
          const id = (item.payload as { readonly actionRequestId?: unknown } | null)?.actionRequestId
          const record = typeof id === "string" ? records.get(id) : undefined
          if (item.completedAt !== null || record === undefined) continue
          if (record.connectionId !== connectionId || record.revision !== revision) continue
          if (work.some((w) => w.kind === item.kind && (w.whileIn === undefined || w.whileIn.includes(record.state)))) {
            unfinished.add(record.actionRequestId)
          }
        }
        return unfinished.size
      }),
    countForFrequency: ({ accountId, actionId, before, since, workspaceId }) =>
      Effect.sync(() => {
        let n = 0
        for (const r of records.values()) {
          if (r.workspaceId !== workspaceId || r.accountId !== accountId || r.createdAt < since) continue
          if (notCountedForFrequency.includes(r.state)) continue
          if ((r.request as { readonly action?: { readonly id?: unknown } } | null)?.action?.id !== actionId) continue
          if (
            before !== undefined &&
            !(
              r.createdAt < before.createdAt ||
              (r.createdAt === before.createdAt && r.actionRequestId < before.actionRequestId)
            )
          )
            continue
          n++
        }
        return n
      }),
    list: ({ accountId, after, limit, state, workspaceId }) =>
      Effect.sync(() => {
        const key = (r: ActionRecord) => ({ createdAt: r.createdAt, id: r.actionRequestId })
        const cursor = after === undefined ? undefined : { createdAt: after.createdAt, id: after.actionRequestId }
        return [...records.values()]
          .filter(
            (r) =>
              r.workspaceId === workspaceId &&
              (state === undefined || r.state === state) &&
              (accountId === undefined || r.accountId === accountId) &&
              (cursor === undefined || newestFirst(cursor, key(r)) < 0)
          )
          .sort((a, b) => newestFirst(key(a), key(b)))
          .slice(0, limit)
      }),
    redactSubject: ({ openStates, pseudonym, subject, workspaceId }) =>
      Effect.sync((): RedactResult => {
        const mine = [...records.values()].filter(
          (r) =>
            r.workspaceId === workspaceId &&
            (subject.kind === "account" ? r.accountId === subject.id : actorSubjectOf(r.request) === subject.id)
        )
        const open = mine.filter((r) => openStates.includes(r.state)).length
        if (open > 0) return { _tag: "Open", count: open }
        const redacted = new Set<string>()
        for (const r of mine) {
          records.set(r.actionRequestId, {
            ...r,
            accountId: subject.kind === "account" ? pseudonym : r.accountId,
            request: redactedRequest(r.request, subject, pseudonym),
            sealedContinuation: subject.kind === "account" ? null : r.sealedContinuation
          })
          redacted.add(r.actionRequestId)
        }
        if (subject.kind === "account") {
          for (const [k, claim] of intakeKeys) if (redacted.has(claim.actionRequestId)) intakeKeys.delete(k)
        }
        return { _tag: "Redacted", count: mine.length }
      })
  }
}

/**
 * A memory ledger and the memory outbox it writes to.
 */
export const layerMemory: Layer.Layer<ActionLedger | Outbox> = Layer.effectContext(
  Effect.sync(() => {
    const table = new MemoryOutboxTable()
    return Context.make(ActionLedger, make(table)).pipe(Context.add(Outbox, table.service()))
  })
)

/**
 * A memory ledger, the memory outbox it writes to and the memory nonce store its creates record
 * nonces in: a nonce recorded by either is used for both, as with SQL's one table.
 */
export const layerMemoryWithNonces: Layer.Layer<ActionLedger | Outbox | NonceStore | NonceStoreSync> =
  Layer.effectContext(
    Effect.sync(() => {
      const table = new MemoryOutboxTable()
      const nonces = makeUsedNonces()
      return Context.merge(
        Context.make(ActionLedger, make(table, nonces)).pipe(Context.add(Outbox, table.service())),
        usedNoncesContext(nonces)
      )
    })
  )
