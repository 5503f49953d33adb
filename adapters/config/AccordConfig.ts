/**
 * The server's configuration, read once at start with Effect `Config` (so tests swap the
 * `ConfigProvider`) and validated here, so a bad value stops the server with one clear line per
 * problem naming the variable and what it expects. Messages never contain a secret or a received
 * value: at most a length ("got 31 bytes").
 *
 * Variables: `PORT` (8787), `HOST` (127.0.0.1), `ACCORD_DATA_DIR` (./.accord-data), `DATABASE_URL`,
 * `ACCORD_MASTER_KEY`, `ACCORD_ALLOW_INSECURE_ENDPOINTS` (false), `ACCORD_BOOTSTRAP_WORKSPACE_ID`,
 * `ACCORD_BOOTSTRAP_ADMIN_KEY`, `LOG_LEVEL` (Info), `ACCORD_MAX_BODY_BYTES` (65536),
 * `ACCORD_INGEST_RATE_LIMIT` (1000), `ACCORD_RECONCILIATION_WINDOW` (30d),
 * `ACCORD_DISPATCH_CONCURRENCY` (32), `ACCORD_STORAGE_TIMEOUT` (5s), `ACCORD_DATABASE_WAIT` (0),
 * `ACCORD_MAX_CONNECTIONS` (1024), `ACCORD_SHUTDOWN_TIMEOUT` (10s), `ACCORD_METRICS_TOKEN`, `OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_SERVICE_NAME` (accord), and the runtime routes' abuse limits: `ACCORD_RUNTIME_SESSION_RATE_LIMIT`
 * (120 a minute), `ACCORD_RUNTIME_ADDRESS_RATE_LIMIT` (600 a minute),
 * `ACCORD_APPROVAL_PENDING_PER_ACCOUNT` (50), `ACCORD_APPROVAL_PENDING_PER_ACTION` (10),
 * `ACCORD_APPROVAL_PENDING_PER_SUBJECT` (20), `ACCORD_APPROVAL_MAX_WRONG_TOKENS` (5). An empty value counts as unset. The list `--help` prints is
 * `Environment.ts`.
 */
import { chmod, mkdir, open, readFile, stat } from "node:fs/promises"
import { join, resolve } from "node:path"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { type Cipher, layerAesGcm } from "../../core/protocol/Cipher.ts"
import { type ApprovalLimitsService, defaultApprovalLimits } from "../../core/approval/Limits.ts"
import { defaultRuntimeLimits, type RuntimeLimits } from "../http/RuntimeGuard.ts"
import { defaultReconciliationWindowMillis } from "../../core/connector/ConnectionMaintenance.ts"
import { defaultPoolSize, defaultStorageTimeoutMillis } from "../sql/SqlSupport.ts"
import { Crypto } from "../../core/ports/Crypto.ts"
import { canonicalUuid } from "../../core/protocol/Uuid.ts"
import type { Retention } from "../../core/ports/EventStore.ts"
import { defaultRetentionDays, maxRetentionDays, parseRetention } from "../../core/ingest/Retention.ts"

/**
 * The workspace and administrator key created at start when both bootstrap variables are set.
 */
export interface Bootstrap {
  readonly workspaceId: string
  readonly adminKey: Redacted.Redacted<string>
  /** `ACCORD_BOOTSTRAP_INGEST_KEY`: an ingest key of the workspace, for a backend configured with it. */
  readonly ingestKey: Option.Option<Redacted.Redacted<string>>
}

/**
 * The server's configuration, read once from the environment by `load` (variables in
 * `Environment.ts`).
 */
export interface AccordConfig {
  readonly port: number
  readonly host: string
  readonly dataDir: string
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  /** From `ACCORD_MASTER_KEY`; when absent, `resolveMasterKey` uses `<dataDir>/master.key`. */
  readonly masterKey: Option.Option<Redacted.Redacted<Uint8Array>>
  readonly allowInsecureEndpoints: boolean
  readonly bootstrap: Option.Option<Bootstrap>
  readonly logLevel: LogLevel.LogLevel
  readonly maxBodyBytes: number
  /** `ACCORD_IMPORT_MAX_BYTES`: the largest uncompressed body of one bulk import upload. */
  readonly importMaxBytes: number
  /**
   * `ACCORD_EVENT_RETENTION_DAYS`: how long a workspace that set none keeps its raw events (days,
   * or `forever`/`0`; default 400).
   */
  readonly eventRetention: Retention
  /** `ACCORD_INGEST_RATE_LIMIT`: ingest requests per second per key. */
  readonly rateLimitPerSecond: number
  /**
   * `ACCORD_RECONCILIATION_WINDOW`: how long after the last activity of its actions a replaced
   * connection revision keeps its secrets before they are retired.
   */
  readonly reconciliationWindowMillis: number
  /** `ACCORD_DISPATCH_CONCURRENCY`: deliveries the dispatcher keeps in flight. */
  readonly dispatchConcurrency: number
  /** `ACCORD_MAX_CONNECTIONS`: open client connections at once; more are refused at accept. */
  readonly maxConnections: number
  /** `ACCORD_SHUTDOWN_TIMEOUT`: how long a stop waits for requests in flight before closing anyway. */
  readonly shutdownTimeoutMillis: number
  /** `ACCORD_STORAGE_TIMEOUT`: the longest one wait for PostgreSQL (a connection, a statement). */
  readonly storageTimeoutMillis: number
  /** `ACCORD_DATABASE_WAIT`: how long the start keeps trying to reach PostgreSQL (0: once). */
  readonly databaseWaitMillis: number
  /** `ACCORD_DATABASE_POOL_SIZE`: the most connections this process opens to PostgreSQL at once. */
  readonly databasePoolSize: number
  /** `ACCORD_PGLITE_DURABILITY`: `full` (default, each commit waits for fsync) or `relaxed`. */
  readonly pgliteDurability: "full" | "relaxed"
  /** `ACCORD_METRICS_TOKEN`: when set, the bearer token `GET /metrics` requires. */
  readonly metricsToken: Option.Option<Redacted.Redacted<string>>
  /** `OTEL_EXPORTER_OTLP_ENDPOINT` and `OTEL_SERVICE_NAME`: OTLP/HTTP export of traces and metrics. */
  readonly otlp: Option.Option<{ readonly endpoint: string; readonly serviceName: string }>
  /** `ACCORD_RUNTIME_SESSION_RATE_LIMIT`, `ACCORD_RUNTIME_ADDRESS_RATE_LIMIT`: runtime requests per minute. */
  readonly runtimeLimits: RuntimeLimits
  /** `ACCORD_APPROVAL_PENDING_PER_*` and `ACCORD_APPROVAL_MAX_WRONG_TOKENS`. */
  readonly approvalLimits: ApprovalLimitsService
}

/**
 * Configuration the server cannot start with; one entry per problem.
 */
export class InvalidConfig extends Schema.TaggedError<InvalidConfig>()("InvalidConfig", {
  problems: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return this.problems.join("\n")
  }
}

/**
 * The values `load` uses for each setting whose variable is unset (port 8787, host 127.0.0.1,
 * `./.accord-data`, …).
 */
export const defaults: {
  readonly port: number
  readonly host: string
  readonly dataDir: string
  readonly logLevel: LogLevel.LogLevel
  readonly maxBodyBytes: number
  readonly importMaxBytes: number
  readonly rateLimitPerSecond: number
  readonly reconciliationWindowMillis: number
  readonly dispatchConcurrency: number
  readonly maxConnections: number
  readonly shutdownTimeoutMillis: number
  readonly storageTimeoutMillis: number
  readonly databaseWaitMillis: number
  readonly databasePoolSize: number
} = {
  port: 8787,
  host: "127.0.0.1",
  dataDir: "./.accord-data",
  logLevel: LogLevel.Info,
  maxBodyBytes: 65536,
  importMaxBytes: 1024 * 1024 * 1024,
  rateLimitPerSecond: 1000,
  reconciliationWindowMillis: defaultReconciliationWindowMillis,
  dispatchConcurrency: 32,
  maxConnections: 1024,
  shutdownTimeoutMillis: 10_000,
  storageTimeoutMillis: defaultStorageTimeoutMillis,
  databaseWaitMillis: 0,
  databasePoolSize: defaultPoolSize
}

const durationUnits: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/**
 * A duration such as `30d`, `12h`, `90m` or `3600s` in milliseconds; `undefined` when malformed.
 */
export const parseDuration = (value: string): number | undefined => {
  const match = /^(\d{1,9})\s*([smhd])$/.exec(value.trim().toLowerCase())
  return match === null ? undefined : Number(match[1]) * durationUnits[match[2]!]!
}

const maxReconciliationWindowMillis = 3650 * 86_400_000

const maxBodyBytesLimit = 16 * 1024 * 1024

const text = (name: string): Config.Config<Option.Option<string>> =>
  Config.option(Config.string(name)).pipe(Config.map(Option.filter((value) => value.trim() !== "")))

const secret = (name: string): Config.Config<Option.Option<Redacted.Redacted<string>>> =>
  Config.option(Config.redacted(name)).pipe(Config.map(Option.filter((value) => Redacted.value(value).trim() !== "")))

const raw = Config.all({
  port: text("PORT"),
  host: text("HOST"),
  dataDir: text("ACCORD_DATA_DIR"),
  databaseUrl: secret("DATABASE_URL"),
  masterKey: secret("ACCORD_MASTER_KEY"),
  allowInsecureEndpoints: text("ACCORD_ALLOW_INSECURE_ENDPOINTS"),
  bootstrapWorkspaceId: text("ACCORD_BOOTSTRAP_WORKSPACE_ID"),
  bootstrapAdminKey: secret("ACCORD_BOOTSTRAP_ADMIN_KEY"),
  bootstrapIngestKey: secret("ACCORD_BOOTSTRAP_INGEST_KEY"),
  logLevel: text("LOG_LEVEL"),
  maxBodyBytes: text("ACCORD_MAX_BODY_BYTES"),
  importMaxBytes: text("ACCORD_IMPORT_MAX_BYTES"),
  eventRetention: text("ACCORD_EVENT_RETENTION_DAYS"),
  rateLimitPerSecond: text("ACCORD_INGEST_RATE_LIMIT"),
  reconciliationWindow: text("ACCORD_RECONCILIATION_WINDOW"),
  dispatchConcurrency: text("ACCORD_DISPATCH_CONCURRENCY"),
  maxConnections: text("ACCORD_MAX_CONNECTIONS"),
  shutdownTimeout: text("ACCORD_SHUTDOWN_TIMEOUT"),
  storageTimeout: text("ACCORD_STORAGE_TIMEOUT"),
  databaseWait: text("ACCORD_DATABASE_WAIT"),
  databasePoolSize: text("ACCORD_DATABASE_POOL_SIZE"),
  pgliteDurability: text("ACCORD_PGLITE_DURABILITY"),
  metricsToken: secret("ACCORD_METRICS_TOKEN"),
  otlpEndpoint: text("OTEL_EXPORTER_OTLP_ENDPOINT"),
  otlpServiceName: text("OTEL_SERVICE_NAME"),
  runtimeSessionRate: text("ACCORD_RUNTIME_SESSION_RATE_LIMIT"),
  runtimeAddressRate: text("ACCORD_RUNTIME_ADDRESS_RATE_LIMIT"),
  pendingPerAccount: text("ACCORD_APPROVAL_PENDING_PER_ACCOUNT"),
  pendingPerAction: text("ACCORD_APPROVAL_PENDING_PER_ACTION"),
  pendingPerSubject: text("ACCORD_APPROVAL_PENDING_PER_SUBJECT"),
  maxWrongTokens: text("ACCORD_APPROVAL_MAX_WRONG_TOKENS")
})

/**
 * Decodes standard or URL-safe base64, padded or not; `undefined` when it is not base64.
 */
export const decodeBase64 = (input: string): Uint8Array | undefined => {
  const normalized = input.trim().replaceAll("-", "+").replaceAll("_", "/")
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(normalized)) return undefined
  const unpadded = normalized.replace(/=+$/, "")
  if (unpadded.length % 4 === 1 || (normalized.length !== unpadded.length && normalized.length % 4 !== 0)) {
    return undefined
  }
  try {
    return Uint8Array.from(atob(unpadded + "=".repeat((4 - (unpadded.length % 4)) % 4)), (c) => c.charCodeAt(0))
  } catch {
    return undefined
  }
}

const encodeBase64 = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes))

/** The master-key problem for a value, or the key; `what` names the variable or the file. */
const masterKeyFrom = (what: string, value: string): Uint8Array | string => {
  const bytes = decodeBase64(value)
  if (bytes === undefined) return `${what} must be base64 of exactly 32 bytes (it is not valid base64)`
  if (bytes.length !== 32) return `${what} must be base64 of exactly 32 bytes (got ${bytes.length} bytes)`
  return bytes
}

/**
 * A non-negative integer of at most 15 digits (surrounding whitespace allowed); `undefined` otherwise.
 */
export const parseInteger = (value: string): number | undefined =>
  /^\d{1,15}$/.test(value.trim()) ? Number(value.trim()) : undefined

/**
 * `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`, any case; `undefined` otherwise.
 */
export const parseBoolean = (value: string): boolean | undefined => {
  const normalized = value.trim().toLowerCase()
  if (["1", "true", "yes", "on"].includes(normalized)) return true
  if (["0", "false", "no", "off"].includes(normalized)) return false
  return undefined
}

const parseLogLevel = (value: string): LogLevel.LogLevel | undefined => {
  const normalized = value.trim().toLowerCase()
  return LogLevel.allLevels.find(
    (level) => level._tag.toLowerCase() === normalized || level.label.toLowerCase() === normalized
  )
}

/**
 * Reads and validates the configuration from the current `ConfigProvider` (the environment by
 * default). Fails with every problem found, not just the first.
 */
export const load: Effect.Effect<AccordConfig, InvalidConfig> = Effect.gen(function* () {
  const input = yield* Effect.mapError(
    raw,
    () => new InvalidConfig({ problems: ["the configuration could not be read"] })
  )
  const problems: Array<string> = []

  /** A number variable: its default when unset, else its parsed value within bounds, else a problem. */
  const bounded = (
    value: Option.Option<string>,
    fallback: number,
    parse: (value: string) => number | undefined,
    [min, max]: readonly [number, number],
    problem: string
  ): number =>
    Option.match(value, {
      onNone: () => fallback,
      onSome: (text) => {
        const parsed = parse(text)
        if (parsed !== undefined && parsed >= min && parsed <= max) return parsed
        problems.push(problem)
        return fallback
      }
    })

  const port = bounded(input.port, defaults.port, parseInteger, [0, 65535], "PORT must be an integer from 0 to 65535")
  const importMaxBytes = bounded(
    input.importMaxBytes,
    defaults.importMaxBytes,
    parseInteger,
    [1, Number.MAX_SAFE_INTEGER],
    "ACCORD_IMPORT_MAX_BYTES must be a positive integer"
  )
  const eventRetention = Option.match(input.eventRetention, {
    onNone: (): Retention => defaultRetentionDays,
    onSome: (value) => {
      const parsed = parseRetention(value)
      if (parsed !== undefined) return parsed
      problems.push(
        `ACCORD_EVENT_RETENTION_DAYS must be a whole number of days from 1 to ${maxRetentionDays}, or forever (or 0)`
      )
      return defaultRetentionDays
    }
  })
  const maxBodyBytes = bounded(
    input.maxBodyBytes,
    defaults.maxBodyBytes,
    parseInteger,
    [1, maxBodyBytesLimit],
    `ACCORD_MAX_BODY_BYTES must be an integer from 1 to ${maxBodyBytesLimit}`
  )
  const rateLimitPerSecond = bounded(
    input.rateLimitPerSecond,
    defaults.rateLimitPerSecond,
    parseInteger,
    [1, 1_000_000],
    "ACCORD_INGEST_RATE_LIMIT must be an integer from 1 to 1000000 (requests per second per key)"
  )
  const dispatchConcurrency = bounded(
    input.dispatchConcurrency,
    defaults.dispatchConcurrency,
    parseInteger,
    [1, 1024],
    "ACCORD_DISPATCH_CONCURRENCY must be an integer from 1 to 1024 (deliveries in flight)"
  )
  const maxConnections = bounded(
    input.maxConnections,
    defaults.maxConnections,
    parseInteger,
    [1, 1_000_000],
    "ACCORD_MAX_CONNECTIONS must be an integer from 1 to 1000000 (open client connections)"
  )
  const shutdownTimeoutMillis = bounded(
    input.shutdownTimeout,
    defaults.shutdownTimeoutMillis,
    parseDuration,
    [1_000, 600_000],
    "ACCORD_SHUTDOWN_TIMEOUT must be a duration from 1s to 10m, such as 10s"
  )
  const reconciliationWindowMillis = bounded(
    input.reconciliationWindow,
    defaults.reconciliationWindowMillis,
    parseDuration,
    [60_000, maxReconciliationWindowMillis],
    "ACCORD_RECONCILIATION_WINDOW must be a duration from 1m to 3650d, such as 30d, 12h or 90m"
  )

  const perMinute = (value: Option.Option<string>, fallback: number, name: string) =>
    bounded(
      value,
      fallback,
      parseInteger,
      [1, 1_000_000],
      `${name} must be an integer from 1 to 1000000 (requests per minute)`
    )
  const runtimeLimits: RuntimeLimits = {
    sessionPerMinute: perMinute(
      input.runtimeSessionRate,
      defaultRuntimeLimits.sessionPerMinute,
      "ACCORD_RUNTIME_SESSION_RATE_LIMIT"
    ),
    addressPerMinute: perMinute(
      input.runtimeAddressRate,
      defaultRuntimeLimits.addressPerMinute,
      "ACCORD_RUNTIME_ADDRESS_RATE_LIMIT"
    )
  }
  const cap = (value: Option.Option<string>, fallback: number, name: string) =>
    bounded(value, fallback, parseInteger, [1, 100_000], `${name} must be an integer from 1 to 100000 (open approvals)`)
  const approvalLimits: ApprovalLimitsService = {
    pendingCaps: {
      account: cap(
        input.pendingPerAccount,
        defaultApprovalLimits.pendingCaps.account,
        "ACCORD_APPROVAL_PENDING_PER_ACCOUNT"
      ),
      action: cap(
        input.pendingPerAction,
        defaultApprovalLimits.pendingCaps.action,
        "ACCORD_APPROVAL_PENDING_PER_ACTION"
      ),
      subject: cap(
        input.pendingPerSubject,
        defaultApprovalLimits.pendingCaps.subject,
        "ACCORD_APPROVAL_PENDING_PER_SUBJECT"
      )
    },
    maxWrongTokens: bounded(
      input.maxWrongTokens,
      defaultApprovalLimits.maxWrongTokens,
      parseInteger,
      [1, 1000],
      "ACCORD_APPROVAL_MAX_WRONG_TOKENS must be an integer from 1 to 1000 (wrong approval tokens before the lockout)"
    )
  }
  const storageTimeoutMillis = bounded(
    input.storageTimeout,
    defaults.storageTimeoutMillis,
    parseDuration,
    [1_000, 600_000],
    "ACCORD_STORAGE_TIMEOUT must be a duration from 1s to 10m, such as 5s"
  )
  const databaseWaitMillis = bounded(
    input.databaseWait,
    defaults.databaseWaitMillis,
    (value) => (value.trim() === "0" ? 0 : parseDuration(value)),
    [0, 86_400_000],
    "ACCORD_DATABASE_WAIT must be 0 or a duration up to 1d, such as 30s or 5m"
  )
  const databasePoolSize = bounded(
    input.databasePoolSize,
    defaults.databasePoolSize,
    parseInteger,
    [1, 1000],
    "ACCORD_DATABASE_POOL_SIZE must be an integer from 1 to 1000 (connections to PostgreSQL at once)"
  )

  const allowInsecureEndpoints = Option.match(input.allowInsecureEndpoints, {
    onNone: () => false,
    onSome: (value) => {
      const flag = parseBoolean(value)
      if (flag !== undefined) return flag
      problems.push("ACCORD_ALLOW_INSECURE_ENDPOINTS must be true or false (or 1 or 0)")
      return false
    }
  })

  const logLevel = Option.match(input.logLevel, {
    onNone: () => defaults.logLevel,
    onSome: (value) => {
      const level = parseLogLevel(value)
      if (level !== undefined) return level
      problems.push("LOG_LEVEL must be one of All, Trace, Debug, Info, Warning, Error, Fatal, None")
      return defaults.logLevel
    }
  })

  const databaseUrl = Option.filter(input.databaseUrl, (url) => {
    if (/^postgres(ql)?:\/\//i.test(Redacted.value(url).trim())) return true
    problems.push("DATABASE_URL must be a postgres:// or postgresql:// URL")
    return false
  })

  const masterKey = Option.flatMap(input.masterKey, (value) => {
    const key = masterKeyFrom("ACCORD_MASTER_KEY", Redacted.value(value))
    if (typeof key === "string") {
      problems.push(key)
      return Option.none()
    }
    return Option.some(Redacted.make(key))
  })

  const workspaceId = Option.flatMap(input.bootstrapWorkspaceId, (id) => {
    const canonical = canonicalUuid(id.trim())
    if (Option.isNone(canonical)) problems.push("ACCORD_BOOTSTRAP_WORKSPACE_ID must be a UUID (8-4-4-4-12 hex digits)")
    return canonical
  })

  /** A bootstrap key's secret: 32–512 visible ASCII characters. */
  const bootstrapSecret = (name: string, given: Option.Option<Redacted.Redacted<string>>) =>
    Option.filter(given, (key) => {
      const value = Redacted.value(key)
      if (value.length < 32) {
        problems.push(`${name} must be at least 32 characters (got ${value.length})`)
        return false
      }
      if (!/^[\x21-\x7e]{32,512}$/.test(value)) {
        problems.push(`${name} must be at most 512 visible ASCII characters (no spaces)`)
        return false
      }
      return true
    })
  const adminKey = bootstrapSecret("ACCORD_BOOTSTRAP_ADMIN_KEY", input.bootstrapAdminKey)
  const ingestKey = bootstrapSecret("ACCORD_BOOTSTRAP_INGEST_KEY", input.bootstrapIngestKey)

  if (Option.isSome(input.bootstrapWorkspaceId) !== Option.isSome(input.bootstrapAdminKey)) {
    problems.push("ACCORD_BOOTSTRAP_WORKSPACE_ID and ACCORD_BOOTSTRAP_ADMIN_KEY must be set together")
  }
  if (Option.isSome(input.bootstrapIngestKey) && Option.isNone(input.bootstrapWorkspaceId)) {
    problems.push("ACCORD_BOOTSTRAP_INGEST_KEY needs ACCORD_BOOTSTRAP_WORKSPACE_ID and ACCORD_BOOTSTRAP_ADMIN_KEY")
  }
  if (
    Option.isSome(ingestKey) &&
    Option.isSome(adminKey) &&
    Redacted.value(ingestKey.value) === Redacted.value(adminKey.value)
  ) {
    problems.push("ACCORD_BOOTSTRAP_INGEST_KEY must differ from ACCORD_BOOTSTRAP_ADMIN_KEY")
  }

  const pgliteDurability = Option.match(input.pgliteDurability, {
    onNone: () => "full" as const,
    onSome: (value) => {
      const chosen = value.trim().toLowerCase()
      if (chosen === "full" || chosen === "relaxed") return chosen
      problems.push("ACCORD_PGLITE_DURABILITY must be full or relaxed")
      return "full" as const
    }
  })

  const otlpEndpoint = Option.filter(input.otlpEndpoint, (endpoint) => {
    if (/^https?:\/\/[^\s/]+/i.test(endpoint.trim()) && URL.canParse(endpoint.trim())) return true
    problems.push(
      "OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL (the collector's OTLP/HTTP base, e.g. http://localhost:4318)"
    )
    return false
  })

  if (problems.length > 0) return yield* new InvalidConfig({ problems })
  return {
    port,
    host: Option.getOrElse(input.host, () => defaults.host).trim(),
    dataDir: Option.getOrElse(input.dataDir, () => defaults.dataDir).trim(),
    databaseUrl,
    masterKey,
    allowInsecureEndpoints,
    bootstrap: Option.zipWith(workspaceId, adminKey, (workspaceId, adminKey) => ({ workspaceId, adminKey, ingestKey })),
    logLevel,
    maxBodyBytes,
    importMaxBytes,
    eventRetention,
    rateLimitPerSecond,
    reconciliationWindowMillis,
    dispatchConcurrency,
    maxConnections,
    shutdownTimeoutMillis,
    storageTimeoutMillis,
    databaseWaitMillis,
    databasePoolSize,
    pgliteDurability,
    metricsToken: input.metricsToken,
    otlp: Option.map(otlpEndpoint, (endpoint) => ({
      endpoint: endpoint.trim().replace(/\/+$/, ""),
      serviceName: Option.getOrElse(input.otlpServiceName, () => "accord").trim()
    })),
    runtimeLimits,
    approvalLimits
  }
})

/**
 * The master key and where it came from, for the start log (never the key itself).
 */
export interface MasterKey {
  readonly key: Redacted.Redacted<Uint8Array>
  /** `environment`: ACCORD_MASTER_KEY; `file`/`created`: `path`; `ephemeral`: in-memory data dir. */
  readonly source: "environment" | "file" | "created" | "ephemeral"
  readonly path: string | undefined
  /** Set when the key file is readable by others (its mode is wider than 0600). */
  readonly warning: string | undefined
}

const errorCode = (error: unknown): string =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : "unknown error"

/**
 * The name of the key file in the data directory.
 */
export const masterKeyFile: string = "master.key"

/**
 * Makes `dir` private before anything is written in it: the process umask becomes 077 (files and
 * directories created from here on are the owner's only), the directory is created with mode 0700
 * or, when it exists, must belong to this user and is tightened to 0700. A directory of another
 * user, or one whose mode cannot be tightened, refuses the start with the fix. With the directory
 * 0700, files inside that an earlier run left wider are unreachable to other users too.
 */
export const securePrivateDirectory = (dir: string): Effect.Effect<void, InvalidConfig> =>
  Effect.gen(function* () {
    const path = resolve(dir)
    const refuse = (problem: string) => new InvalidConfig({ problems: [`ACCORD_DATA_DIR: ${problem}`] })
    if (process.platform === "win32") {
      yield* Effect.tryPromise({
        try: () => mkdir(path, { recursive: true }),
        catch: (error) => refuse(`cannot create ${path} (${errorCode(error)})`)
      })
      return
    }
    process.umask(0o077)
    yield* Effect.tryPromise({
      try: () => mkdir(path, { recursive: true, mode: 0o700 }),
      catch: (error) => refuse(`cannot create ${path} (${errorCode(error)})`)
    })
    const stats = yield* Effect.tryPromise({
      try: () => stat(path),
      catch: (error) => refuse(`cannot read ${path} (${errorCode(error)})`)
    })
    const uid = process.getuid?.()
    if (uid !== undefined && stats.uid !== uid)
      return yield* refuse(
        `${path} belongs to another user (uid ${stats.uid}, this process runs as ${uid}); ` +
          "use a directory this user owns, or run as its owner"
      )
    if ((stats.mode & 0o077) !== 0)
      yield* Effect.tryPromise({
        try: () => chmod(path, 0o700),
        catch: (error) =>
          refuse(
            `${path} is open to other users and cannot be made private (${errorCode(error)}); run: chmod 700 ${path}`
          )
      })
  })

/**
 * `ACCORD_MASTER_KEY` when set; otherwise (the embedded default) `<dataDir>/master.key`. A missing
 * file gets a new key of 32 CSPRNG bytes, returned with source `created` but not yet written:
 * {@link persistMasterKey} writes it once every start check has passed, so a refused start leaves
 * no key file behind for a later start (or a rotation) to pick up. A `memory://` data directory gets
 * a key that lives as long as the process, like its data.
 */
export const resolveMasterKey = (config: AccordConfig): Effect.Effect<MasterKey, InvalidConfig, Crypto> =>
  Effect.gen(function* () {
    if (Option.isSome(config.masterKey)) {
      return { key: config.masterKey.value, source: "environment", path: undefined, warning: undefined } as const
    }
    const crypto = yield* Crypto
    if (config.dataDir.startsWith("memory://")) {
      const key = yield* crypto.randomBytes(32)
      return { key: Redacted.make(key), source: "ephemeral", path: undefined, warning: undefined } as const
    }
    yield* securePrivateDirectory(config.dataDir)
    const path = join(resolve(config.dataDir), masterKeyFile)
    const existing = yield* readKeyFile(path)
    if (existing !== undefined) return existing
    const key = yield* crypto.randomBytes(32)
    return { key: Redacted.make(key), source: "created", path, warning: undefined } as const
  })

const keyFileFailure = (path: string, action: string) => (error: unknown) =>
  new InvalidConfig({ problems: [`ACCORD_DATA_DIR: cannot ${action} ${path} (${errorCode(error)})`] })

/** The key in the file at `path`, or `undefined` when there is no file. */
const readKeyFile = (path: string): Effect.Effect<MasterKey | undefined, InvalidConfig> =>
  Effect.gen(function* () {
    const text = yield* Effect.tryPromise({
      try: () =>
        readFile(path, "utf8").catch((error: unknown) => {
          if (errorCode(error) === "ENOENT") return undefined
          throw error
        }),
      catch: keyFileFailure(path, "read")
    })
    if (text === undefined) return undefined
    const key = masterKeyFrom(path, text)
    if (typeof key === "string") return yield* new InvalidConfig({ problems: [key] })
    const mode = yield* Effect.tryPromise({ try: () => stat(path), catch: keyFileFailure(path, "read") }).pipe(
      Effect.map((stats) => stats.mode & 0o777)
    )
    const warning =
      process.platform !== "win32" && (mode & 0o077) !== 0
        ? `${path} is readable by other users (mode ${mode.toString(8)}); run: chmod 600 ${path}`
        : undefined
    return { key: Redacted.make(key), source: "file", path, warning } as const
  })

/**
 * Writes a key `resolveMasterKey` created to its file (mode 0600, synced); nothing for any other
 * source. `wx`: exactly one process creates the file. One that finds the file already written by
 * another start accepts it only when it holds the same key, and otherwise refuses with the fix.
 */
export const persistMasterKey = (masterKey: MasterKey): Effect.Effect<void, InvalidConfig> => {
  if (masterKey.source !== "created" || masterKey.path === undefined) return Effect.void
  const path = masterKey.path
  return Effect.gen(function* () {
    const written = yield* Effect.tryPromise({
      try: async () => {
        let file: Awaited<ReturnType<typeof open>>
        try {
          file = await open(path, "wx", 0o600)
        } catch (error) {
          if (errorCode(error) === "EEXIST") return false
          throw error
        }
        try {
          await file.writeFile(encodeBase64(Redacted.value(masterKey.key)) + "\n", "utf8")
          await file.sync()
        } finally {
          await file.close()
        }
        await chmod(path, 0o600) // in case a umask widened or narrowed the requested mode
        return true
      },
      catch: keyFileFailure(path, "write")
    })
    if (written) return
    const other = yield* readKeyFile(path)
    if (other === undefined || !sameKey(Redacted.value(other.key), Redacted.value(masterKey.key)))
      return yield* new InvalidConfig({
        problems: [`ACCORD_DATA_DIR: another process created ${path} while this one started; start again`]
      })
  })
}

const sameKey = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((byte, i) => byte === b[i])

/**
 * The `Cipher` (AES-256-GCM; docs/decisions.md, "Secret handling") under a resolved master key.
 */
export const layerCipher = (masterKey: MasterKey): Layer.Layer<Cipher> => layerAesGcm(masterKey.key)
