/**
 * Every environment variable Accord reads, in one list: `--help` prints it, and a test checks that
 * the configuration loaders (`AccordConfig.load`, the rotation command) read exactly these names,
 * so the help cannot drift from the code.
 */

/**
 * One variable: its name, its default when unset (if any), what it does, and who reads it.
 */
export interface Variable {
  readonly name: string
  readonly defaultValue?: string
  readonly description: string
  /** `server`: `AccordConfig.load`; `rotation`: only `npm run rotate-master-key`. */
  readonly readBy: "server" | "rotation"
}

export const variables: ReadonlyArray<Variable> = [
  { name: "PORT", defaultValue: "8787", description: "TCP port to listen on (0 picks a free one)", readBy: "server" },
  {
    name: "HOST",
    defaultValue: "127.0.0.1",
    description: "address to listen on (0.0.0.0 in a container)",
    readBy: "server"
  },
  {
    name: "ACCORD_DATA_DIR",
    defaultValue: "./.accord-data",
    description: "embedded database and master-key file; memory:// keeps both in memory",
    readBy: "server"
  },
  {
    name: "DATABASE_URL",
    description: "PostgreSQL URL (postgres://...); replaces the embedded database",
    readBy: "server"
  },
  {
    name: "ACCORD_STORAGE_TIMEOUT",
    defaultValue: "5s",
    description: "longest wait for PostgreSQL (a connection, a statement, a lock); then 503 with Retry-After",
    readBy: "server"
  },
  {
    name: "ACCORD_PGLITE_DURABILITY",
    defaultValue: "full",
    description:
      "the embedded database's commits: full (each waits for fsync, power-loss safe) or relaxed (no fsync: faster, survives a killed process but not a power loss)",
    readBy: "server"
  },
  {
    name: "ACCORD_DATABASE_WAIT",
    defaultValue: "0",
    description: "how long the start keeps trying to reach PostgreSQL, a line per attempt (0: fail at once)",
    readBy: "server"
  },
  {
    name: "ACCORD_DATABASE_POOL_SIZE",
    defaultValue: "10",
    description: "the most connections the process opens to PostgreSQL at once; more requests wait for one",
    readBy: "server"
  },
  {
    name: "ACCORD_MASTER_KEY",
    description: "base64 of 32 bytes that encrypts stored secrets; default: <ACCORD_DATA_DIR>/master.key",
    readBy: "server"
  },
  {
    name: "ACCORD_ALLOW_INSECURE_ENDPOINTS",
    defaultValue: "false",
    description: "accept http:// and loopback connector endpoints (local development and tests only)",
    readBy: "server"
  },
  {
    name: "ACCORD_BOOTSTRAP_WORKSPACE_ID",
    description: "UUID of a workspace to create at start (with the next)",
    readBy: "server"
  },
  {
    name: "ACCORD_BOOTSTRAP_ADMIN_KEY",
    description: "its administrator key, at least 32 characters",
    readBy: "server"
  },
  {
    name: "ACCORD_BOOTSTRAP_INGEST_KEY",
    description: "optional: an ingest key of that workspace, at least 32 characters (for a backend given the same)",
    readBy: "server"
  },
  {
    name: "LOG_LEVEL",
    defaultValue: "Info",
    description: "All, Trace, Debug, Info, Warning, Error, Fatal or None",
    readBy: "server"
  },
  {
    name: "ACCORD_MAX_BODY_BYTES",
    defaultValue: "65536",
    description: "largest accepted request body",
    readBy: "server"
  },
  {
    name: "ACCORD_IMPORT_MAX_BYTES",
    defaultValue: "1073741824",
    description: "largest uncompressed body of one bulk import upload (PUT /api/events/imports/{id})",
    readBy: "server"
  },
  {
    name: "ACCORD_EVENT_RETENTION_DAYS",
    defaultValue: "400",
    description:
      "days a workspace without its own retention keeps its raw events (1-36500), or forever (also 0); workspaces older than retention keep theirs forever until set",
    readBy: "server"
  },
  {
    name: "ACCORD_MAX_CONNECTIONS",
    defaultValue: "1024",
    description: "open client connections at once; more are refused",
    readBy: "server"
  },
  {
    name: "ACCORD_SHUTDOWN_TIMEOUT",
    defaultValue: "10s",
    description: "how long a stop waits for requests in flight before closing every connection",
    readBy: "server"
  },
  {
    name: "ACCORD_INGEST_RATE_LIMIT",
    defaultValue: "1000",
    description: "ingest requests per second per key",
    readBy: "server"
  },
  {
    name: "ACCORD_RECONCILIATION_WINDOW",
    defaultValue: "30d",
    description: "how long a replaced connection revision keeps its secrets after its last activity",
    readBy: "server"
  },
  {
    name: "ACCORD_DISPATCH_CONCURRENCY",
    defaultValue: "32",
    description: "connector deliveries kept in flight",
    readBy: "server"
  },
  {
    name: "ACCORD_METRICS_TOKEN",
    description: "when set, GET /metrics requires Authorization: Bearer <token>",
    readBy: "server"
  },
  {
    name: "OTEL_EXPORTER_OTLP_ENDPOINT",
    description: "OTLP/HTTP collector base URL (http://host:4318); when set, traces and metrics are exported",
    readBy: "server"
  },
  {
    name: "OTEL_SERVICE_NAME",
    defaultValue: "accord",
    description: "service.name of exported traces and metrics",
    readBy: "server"
  },
  {
    name: "ACCORD_RUNTIME_SESSION_RATE_LIMIT",
    defaultValue: "120",
    description: "runtime-route requests per minute per runtime session",
    readBy: "server"
  },
  {
    name: "ACCORD_RUNTIME_ADDRESS_RATE_LIMIT",
    defaultValue: "600",
    description: "runtime-route requests per minute per client address",
    readBy: "server"
  },
  {
    name: "ACCORD_APPROVAL_PENDING_PER_ACCOUNT",
    defaultValue: "50",
    description: "open approval requests an account may hold",
    readBy: "server"
  },
  {
    name: "ACCORD_APPROVAL_PENDING_PER_ACTION",
    defaultValue: "10",
    description: "open approval requests an account may hold for one action",
    readBy: "server"
  },
  {
    name: "ACCORD_APPROVAL_PENDING_PER_SUBJECT",
    defaultValue: "20",
    description: "open approval requests one requester (subject) may hold in an account",
    readBy: "server"
  },
  {
    name: "ACCORD_APPROVAL_MAX_WRONG_TOKENS",
    defaultValue: "5",
    description: "wrong approval tokens after which an approval is locked (then not found)",
    readBy: "server"
  },
  {
    name: "ACCORD_NEW_MASTER_KEY",
    description: "npm run rotate-master-key only: the new master key, base64 of 32 bytes",
    readBy: "rotation"
  }
]

/**
 * The `--help` text of the server entry.
 */
export const helpText = (command: string): string => {
  const width = Math.max(...variables.map((variable) => variable.name.length))
  const lines = variables.map(
    (variable) =>
      `  ${variable.name.padEnd(width)}  ${variable.description}${
        variable.defaultValue === undefined ? "" : ` (default ${variable.defaultValue})`
      }`
  )
  return (
    [
      `Usage: ${command}`,
      "",
      "Starts the Accord server. It is configured by environment variables only (an empty value counts as unset):",
      "",
      ...lines,
      "",
      "Stop it with SIGTERM or Ctrl-C: in-flight requests are drained, then it logs `stopped`."
    ].join("\n") + "\n"
  )
}

/**
 * Whether the arguments ask for help.
 */
export const wantsHelp = (args: ReadonlyArray<string>): boolean => args.some((arg) => arg === "--help" || arg === "-h")
