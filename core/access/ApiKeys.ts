/**
 * Issuing API keys (stored as SHA-256 hashes, the secret shown once) and the idempotent
 * bootstrap of a workspace's first administrator key (`ACCORD_BOOTSTRAP_*`, `accord workspace
 * create`). Shared by the admin HTTP routes, the server start and the CLI.
 *
 * A secret is `acc_<scope-tag>_` followed by 32 CSPRNG bytes in base64url (43 characters), e.g.
 * `acc_ingest_…`: the prefix lets secret scanners and humans recognise an Accord key and its scope;
 * the 256 random bits are what make it secret. Keys supplied by an operator (the bootstrap key)
 * need not follow the format: lookups are by hash only.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { type ApiKeyRecord, type ApiKeyScope, ApiKeyStore } from "../ports/ApiKeyStore.ts"
import { Crypto } from "../ports/Crypto.ts"
import { sha256HexWith } from "../protocol/Digest.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { randomUuid } from "../protocol/Uuid.ts"

/**
 * The tag in a secret's prefix for each scope.
 */
export const scopeTags: Readonly<Record<ApiKeyScope, string>> = {
  ingest: "ingest",
  "developer:read": "read",
  admin: "admin"
}

/**
 * Random bytes in a secret.
 */
export const secretBytes: number = 32

const table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

const base64url = (bytes: Uint8Array): string => {
  let out = ""
  let i = 0
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!
    out += table[n >> 18]! + table[(n >> 12) & 63]! + table[(n >> 6) & 63]! + table[n & 63]!
  }
  const rest = bytes.length - i
  if (rest === 1) {
    const n = bytes[i]! << 16
    out += table[n >> 18]! + table[(n >> 12) & 63]!
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8)
    out += table[n >> 18]! + table[(n >> 12) & 63]! + table[(n >> 6) & 63]!
  }
  return out
}

/**
 * A fresh bearer token: `prefix` and 32 random bytes in base64url (API keys, runtime session and
 * approval tokens alike).
 */
export const mintToken = (prefix: string): Effect.Effect<Redacted.Redacted<string>, never, Crypto> =>
  Effect.flatMap(Crypto, (crypto) =>
    Effect.map(crypto.randomBytes(secretBytes), (bytes) => Redacted.make(`${prefix}${base64url(bytes)}`))
  )

/**
 * A fresh secret for a key of `scope`.
 */
export const mintSecret = (scope: ApiKeyScope): Effect.Effect<Redacted.Redacted<string>, never, Crypto> =>
  mintToken(`acc_${scopeTags[scope]}_`)

/**
 * What is stored and looked up: lowercase hex SHA-256 of the secret's UTF-8 bytes.
 */
export const hashSecret = (secret: Redacted.Redacted<string>): Effect.Effect<string, never, Crypto> =>
  Effect.flatMap(Crypto, (crypto) => sha256HexWith(crypto, Redacted.value(secret)))

/**
 * A key just issued: its stored record and the secret, which exists only here.
 */
export interface IssuedApiKey {
  readonly record: ApiKeyRecord
  readonly secret: Redacted.Redacted<string>
}

/**
 * Issues a new key in a workspace (which must exist).
 */
export const issue = (input: {
  readonly workspaceId: string
  readonly scope: ApiKeyScope
  readonly name: string | null
}): Effect.Effect<IssuedApiKey, StorageError, ApiKeyStore | Crypto> =>
  Effect.gen(function* () {
    const store = yield* ApiKeyStore
    const secret = yield* mintSecret(input.scope)
    const record: ApiKeyRecord = {
      id: yield* randomUuid,
      workspaceId: input.workspaceId,
      scope: input.scope,
      name: input.name,
      secretHash: yield* hashSecret(secret),
      createdAt: yield* Clock.currentTimeMillis,
      revokedAt: null
    }
    // 128 random bits of id and 256 of secret: a collision means a broken generator, not bad luck.
    if (!(yield* store.create(record))) return yield* Effect.dieMessage("API key id or secret collision")
    return { record, secret }
  })

/** The scopes a key can be bootstrapped with: the administrator's, and one ingest key for a backend. */
export type BootstrapScope = "admin" | "ingest"

/**
 * A bootstrap key's secret is already used by a different key (another workspace or scope).
 */
export class BootstrapKeyConflict extends Schema.TaggedError<BootstrapKeyConflict>()("BootstrapKeyConflict", {
  scope: Schema.Literal("admin", "ingest")
}) {
  override get message(): string {
    return `ACCORD_BOOTSTRAP_${this.scope.toUpperCase()}_KEY is already registered as a different key (another workspace or scope)`
  }
}

/**
 * What bootstrapping did with a key: `created` it, found it `present`, or found it `revoked` (a
 * revoked key is never brought back by a restart: an administrator revoked it on purpose).
 */
export type BootstrapKeyOutcome = "created" | "present" | "revoked"

/**
 * What bootstrapping did; `ingestKey` only when one was asked for.
 */
export interface BootstrapOutcome {
  readonly workspaceCreated: boolean
  readonly adminKey: BootstrapKeyOutcome
  readonly ingestKey?: BootstrapKeyOutcome
}

/** Ensures `secret` is a key of `scope` in the workspace, by hash. */
const bootstrapKey = (
  workspaceId: string,
  secret: Redacted.Redacted<string>,
  scope: BootstrapScope,
  now: number
): Effect.Effect<BootstrapKeyOutcome, StorageError | BootstrapKeyConflict, ApiKeyStore | Crypto> =>
  Effect.gen(function* () {
    const store = yield* ApiKeyStore
    const secretHash = yield* hashSecret(secret)
    const judge = (found: Option.Option<ApiKeyRecord>) =>
      Option.isSome(found) && found.value.workspaceId === workspaceId && found.value.scope === scope
        ? Effect.succeed(found.value.revokedAt === null ? ("present" as const) : ("revoked" as const))
        : Effect.fail(new BootstrapKeyConflict({ scope }))
    const existing = yield* store.findByHash(secretHash)
    if (Option.isSome(existing)) return yield* judge(existing)
    const record: ApiKeyRecord = {
      id: yield* randomUuid,
      workspaceId,
      scope,
      name: "bootstrap",
      secretHash,
      createdAt: now,
      revokedAt: null
    }
    if (yield* store.create(record)) return "created" as const
    // Another process bootstrapped concurrently with the same key: judge what it stored.
    return yield* judge(yield* store.findByHash(secretHash))
  })

/**
 * Ensures the workspace exists, that `adminKey` is one of its administrator keys and, when given,
 * that `ingestKey` is one of its ingest keys, by hash. Idempotent: running it again changes nothing.
 */
export const bootstrapWorkspace = (
  workspaceId: string,
  adminKey: Redacted.Redacted<string>,
  ingestKey?: Redacted.Redacted<string>
): Effect.Effect<BootstrapOutcome, StorageError | BootstrapKeyConflict, ApiKeyStore | Crypto> =>
  Effect.gen(function* () {
    const store = yield* ApiKeyStore
    const now = yield* Clock.currentTimeMillis
    const workspaceCreated = yield* store.ensureWorkspace(workspaceId, now)
    const admin = yield* bootstrapKey(workspaceId, adminKey, "admin", now)
    if (ingestKey === undefined) return { workspaceCreated, adminKey: admin }
    return { workspaceCreated, adminKey: admin, ingestKey: yield* bootstrapKey(workspaceId, ingestKey, "ingest", now) }
  })
