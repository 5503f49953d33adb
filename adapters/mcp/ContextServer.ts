/**
 * The read-only context server for coding agents (spec `direct-api-ingestion.md`, "What the
 * service does" 4, "Authentication" 4): an MCP server on `@effect/ai`'s `McpServer`, over stdio or
 * streamable HTTP, that reads live data with a `developer:read` key (`SERVICE_API_KEY`).
 *
 * Tools, all read-only: `recent_events` (the Events view, with filters), `account_profile`,
 * `feature_gate_status`, `event_contract` (the contract, families, emission rules, never-send
 * list and classification rules from core), `validate_payload` (the ingest route's own rules,
 * offline) and `classify_candidates`. `send_test_event` exists only when the server is started for
 * setup smoke testing (`allowSendTestEvent`), and then sends with `SERVICE_INGEST_API_KEY`.
 *
 * What tools return: stored events (already screened by the ingest rules), issue paths and codes,
 * never a key and never a refused value.
 */
import { createServer } from "node:http"
import * as McpServer from "@effect/ai/McpServer"
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeSink from "@effect/platform-node/NodeSink"
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as Console from "effect/Console"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { Candidate, classificationRules, classifyFile } from "../../core/ingest/Classify.ts"
import { emissionRules, eventFamilies, eventFields, neverSend } from "../../core/ingest/EmissionRules.ts"
import { UsageError } from "../cli-support/CliError.ts"
import type { ReadFailure, ServiceReads } from "../cli-support/ServiceReads.ts"
import { validateEntries } from "../cli-support/Validation.ts"
import { type IngestEvent, make as makeDirectApi } from "../sdk/DirectApiClient.ts"
import * as HttpGuard from "./HttpGuard.ts"

/**
 * A tool's failure: a stable code and a detail, never a secret or a value.
 */
export const ToolFailure = Schema.Struct({ code: Schema.String, detail: Schema.String })

// deno-lint-ignore no-explicit-any
const readOnly = <T extends Tool.Tool<string, any, any>>(tool: T): T =>
  tool.annotate(Tool.Readonly, true).annotate(Tool.Destructive, false).annotate(Tool.Idempotent, true) as unknown as T

const RecentEvents = readOnly(
  Tool.make("recent_events", {
    description:
      "Recent events of the workspace, newest first (the Events view). Filters: account_id, event_name, " +
      "from and to (RFC 3339), limit (1-200), cursor (nextCursor of a previous page).",
    parameters: {
      account_id: Schema.optional(Schema.String),
      event_name: Schema.optional(Schema.String),
      from: Schema.optional(Schema.String),
      to: Schema.optional(Schema.String),
      limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 200))),
      cursor: Schema.optional(Schema.String)
    },
    success: Schema.Unknown,
    failure: ToolFailure
  })
)

const AccountProfile = readOnly(
  Tool.make("account_profile", {
    description: "The account profile built from an account's events (signup, plan, trial, seats, logins, users).",
    parameters: { account_id: Schema.String },
    success: Schema.Unknown,
    failure: ToolFailure
  })
)

const FeatureGateStatus = readOnly(
  Tool.make("feature_gate_status", {
    description: "A feature gate's status: checking, or unlocked by a correlated entitlement_active event.",
    parameters: { gate_id: Schema.String },
    success: Schema.Unknown,
    failure: ToolFailure
  })
)

const EventContract = readOnly(
  Tool.make("event_contract", {
    description:
      "The Direct API event contract: fields, recommended names by family, emission rules, the " +
      "never-send list and the classification rules.",
    success: Schema.Unknown,
    failure: ToolFailure
  })
)

const ValidatePayload = readOnly(
  Tool.make("validate_payload", {
    description:
      "Validate events offline with the ingest route's own rules (contract, data safety, relevance) " +
      "and emission-rule warnings. Issues carry path, code and message, never the value.",
    parameters: {
      events: Schema.Array(Schema.Unknown),
      billing_source: Schema.optional(Schema.Literal("provider", "backend"))
    },
    success: Schema.Unknown,
    failure: ToolFailure
  })
)

const ClassifyCandidates = readOnly(
  Tool.make("classify_candidates", {
    description:
      "Classify event candidates as direct_api_now, existing_source or web_sdk_follow_up, with the " +
      "deciding rule. where: backend, background_job, webhook, browser, mobile or desktop.",
    parameters: {
      candidates: Schema.Array(Candidate),
      billing_provider: Schema.optional(Schema.String)
    },
    success: Schema.Unknown,
    failure: ToolFailure
  })
)

const SendTestEvent = Tool.make("send_test_event", {
  description: "Setup smoke test only: validate one event, then send it with the ingest key.",
  parameters: { event: Schema.Unknown },
  success: Schema.Unknown,
  failure: ToolFailure
})
  .annotate(Tool.Readonly, false)
  .annotate(Tool.Destructive, false)

/**
 * The read-only toolkit.
 */
export const ReadTools = Toolkit.make(
  RecentEvents,
  AccountProfile,
  FeatureGateStatus,
  EventContract,
  ValidatePayload,
  ClassifyCandidates
)

/**
 * The toolkit with `send_test_event`, for setup smoke testing.
 */
export const SetupTools = Toolkit.make(
  RecentEvents,
  AccountProfile,
  FeatureGateStatus,
  EventContract,
  ValidatePayload,
  ClassifyCandidates,
  SendTestEvent
)

const failure = (f: ReadFailure) => ({ code: f.code, detail: f.detail })

/**
 * The contract document of `event_contract`.
 */
export const contract = {
  endpoint: "POST /api/events/ingest (Authorization: Bearer $SERVICE_INGEST_API_KEY, server-only)",
  fields: eventFields,
  families: eventFamilies.map(({ family, names, note }) => ({ family, names, ...(note ? { note } : {}) })),
  emission_rules: emissionRules,
  never_send: neverSend,
  classification_rules: classificationRules
}

const readHandlers = (reads: ServiceReads) => ({
  recent_events: (params: { readonly [k: string]: unknown }) =>
    Effect.mapError(reads.get(["events"], params as Record<string, string | number | undefined>), failure),
  account_profile: ({ account_id }: { readonly account_id: string }) =>
    Effect.mapError(reads.get(["accounts", account_id]), failure),
  feature_gate_status: ({ gate_id }: { readonly gate_id: string }) =>
    Effect.mapError(reads.get(["feature-gates", gate_id]), failure),
  event_contract: () => Effect.succeed(contract),
  validate_payload: ({
    billing_source,
    events
  }: {
    readonly events: ReadonlyArray<unknown>
    readonly billing_source?: "provider" | "backend" | undefined
  }) =>
    Effect.map(Clock.currentTimeMillis, (now) =>
      validateEntries(
        events.map((value) => ({ value })),
        now,
        { billingSource: billing_source }
      )
    ),
  classify_candidates: ({
    billing_provider,
    candidates
  }: {
    readonly candidates: ReadonlyArray<Candidate>
    readonly billing_provider?: string | undefined
  }) => Effect.succeed({ candidates: classifyFile({ candidates, billing_provider: billing_provider ?? null }) })
})

/**
 * What the server needs: the reads, and for setup smoke testing the ingest side.
 */
export interface ContextServerOptions {
  readonly reads: ServiceReads
  readonly version: string
  /** Present only when started with the explicit flag: enables `send_test_event`. */
  readonly sendTestEvent?: { readonly serviceUrl: string; readonly ingestKey: Redacted.Redacted<string> } | undefined
}

const sendHandler =
  (send: NonNullable<ContextServerOptions["sendTestEvent"]>) =>
  ({ event }: { readonly event: unknown }) =>
    Effect.gen(function* () {
      const report = validateEntries([{ value: event }], yield* Clock.currentTimeMillis)
      if (!report.ok)
        return yield* Effect.fail({
          code: "invalid_event_not_sent",
          detail: JSON.stringify(report.events[0]?.issues ?? [])
        })
      const result = yield* Effect.either(
        makeDirectApi({ baseUrl: send.serviceUrl, apiKey: send.ingestKey, maxAttempts: 3 }).ingest(event as IngestEvent)
      )
      if (Either.isRight(result)) return result.right
      const error = result.left
      return yield* Effect.fail(
        error._tag === "IngestRejected"
          ? { code: error.code, detail: error.detail }
          : { code: "service_unavailable", detail: error.reason }
      )
    })

/**
 * The tools as a layer over an `McpServer`.
 */
export const toolsLayer = (options: ContextServerOptions): Layer.Layer<never, never, McpServer.McpServer> => {
  const handlers = readHandlers(options.reads)
  return options.sendTestEvent === undefined
    ? McpServer.toolkit(ReadTools).pipe(Layer.provide(ReadTools.toLayer(handlers)))
    : McpServer.toolkit(SetupTools).pipe(
        Layer.provide(SetupTools.toLayer({ ...handlers, send_test_event: sendHandler(options.sendTestEvent) }))
      )
}

/**
 * The server's name in the MCP handshake.
 */
export const serverName = "accord-context"

/**
 * Serves the tools until the process ends: over stdio, or streamable HTTP on `127.0.0.1:port` at
 * `/mcp` behind {@link HttpGuard.guard} (the address is printed on stderr once listening is set up,
 * and the token too when it was generated here rather than passed in).
 */
export const serve = (
  options: ContextServerOptions & {
    readonly http?: (HttpGuard.Bound & { readonly printToken: boolean }) | undefined
  }
): Effect.Effect<never, UsageError> => {
  const info = { name: serverName, version: options.version }
  const tools = toolsLayer(options)
  if (options.http === undefined) {
    return Layer.launch(
      tools.pipe(Layer.provide(McpServer.layerStdio({ ...info, stdin: NodeStream.stdin, stdout: NodeSink.stdout })))
    )
  }
  const { port, token, printToken } = options.http
  const server = Layer.mergeAll(tools, HttpRouter.Default.serve(HttpGuard.guard({ port, token }))).pipe(
    Layer.provide(McpServer.layerHttp({ ...info, path: "/mcp" })),
    Layer.provide(NodeHttpServer.layer(createServer, { port, host: "127.0.0.1" }))
  )
  return Effect.zipRight(
    Console.error(
      `accord context server: http://127.0.0.1:${port}/mcp` +
        (printToken ? `\naccord context server: bearer token ${Redacted.value(token)}` : "")
    ),
    Layer.launch(server).pipe(Effect.catchAll(() => new UsageError({ message: `cannot listen on 127.0.0.1:${port}` })))
  )
}
