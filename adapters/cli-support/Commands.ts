/**
 * The `accord` command tree on `@effect/cli`: every command has `--help`, typed options, and the
 * built-in `--version`, `--completions` and `--wizard`. Handlers print their result and fail with
 * `FindingsReported` (exit 1) or `UsageError` (exit 2); `run` turns that into an exit code.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import { randomBytes } from "node:crypto"
import { stripVTControlCharacters } from "node:util"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { parseInteger } from "../config/AccordConfig.ts"
import { formatReport as formatDoctorReport, paymentOptionsFromEnv, runDoctor } from "../doctor/CustomerDoctor.ts"
import { CandidateFile, classifyFile } from "../../core/ingest/Classify.ts"
import { exitCodes, FindingsReported, oneLine, UsageError } from "./CliError.ts"
import * as Environment from "./Environment.ts"
import { readEntries, readJson } from "./EventFile.ts"
import { formatReport as formatValidation, validateEntries } from "./Validation.ts"
import { actions } from "./Actions.ts"
import * as Backfill from "./Backfill.ts"
import * as BulkImport from "./BulkImport.ts"
import * as Handoff from "./Handoff.ts"
import * as ServiceReads from "./ServiceReads.ts"
import { send as sendTestEvent } from "./SendTestEvent.ts"
import { createKey, createWorkspace, type StorageFor, sweepEvents } from "./Workspaces.ts"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import type { IngestEvent } from "../sdk/DirectApiClient.ts"

const json = Options.boolean("json").pipe(Options.withDescription("print one machine-readable JSON document"))

const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

const findingsIf = (failed: boolean) => (failed ? Effect.fail(new FindingsReported()) : Effect.void)

// ---------------------------------------------------------------------------------------------
// accord customer doctor
// ---------------------------------------------------------------------------------------------

const doctor = Command.make(
  "doctor",
  {
    endpoint: Options.text("endpoint").pipe(Options.withDescription("the customer backend's connector endpoint URL")),
    revision: Options.integer("revision").pipe(
      Options.withDescription("connection revision of the secrets (default ACCORD_CONNECTION_REVISION, else 0)"),
      Options.optional
    ),
    withExecution: Options.boolean("with-execution").pipe(
      Options.withDescription("also send one signed execution and its duplicate (the backend may perform it)")
    ),
    json
  },
  (options) =>
    Effect.gen(function* () {
      const revisionText = Option.isSome(options.revision)
        ? String(options.revision.value)
        : Option.getOrElse(yield* Environment.optional("ACCORD_CONNECTION_REVISION"), () => "0")
      const revision = parseInteger(revisionText)
      if (revision === undefined) {
        return yield* new UsageError({
          message: "--revision (or ACCORD_CONNECTION_REVISION) must be a non-negative integer"
        })
      }
      const workspaceId = yield* Environment.required("ACCORD_WORKSPACE_ID")
      const actionSigningSecret = yield* Environment.required("ACCORD_ACTION_SIGNING_SECRET")
      const completionSecret = yield* Environment.required("ACCORD_COMPLETION_SECRET")
      const payments = paymentOptionsFromEnv(process.env)
      const report = yield* Effect.promise(() =>
        runDoctor({
          endpoint: options.endpoint,
          workspaceId,
          actionSigningSecret,
          completionSecret,
          revision,
          withExecution: options.withExecution,
          // The Stripe installation values, when set (STRIPE_* names): installation checks 1-6.
          ...(payments === undefined ? {} : { payments })
        })
      )
      yield* options.json ? printJson(report) : Console.log(formatDoctorReport(report))
      yield* findingsIf(!report.ok)
    })
).pipe(
  Command.withDescription(
    "run the installation checks against a customer endpoint (secrets from ACCORD_ACTION_SIGNING_SECRET, " +
      "ACCORD_COMPLETION_SECRET, workspace from ACCORD_WORKSPACE_ID)"
  )
)

const customer = Command.make("customer").pipe(
  Command.withDescription("tools for the customer backend side of the connector"),
  Command.withSubcommands([doctor])
)

// ---------------------------------------------------------------------------------------------
// accord validate
// ---------------------------------------------------------------------------------------------

const file = Args.text({ name: "FILE" })

const validate = Command.make(
  "validate",
  {
    file: file.pipe(Args.withDescription("one event, a JSON array of events, or JSON Lines")),
    source: Options.choice("source", ["direct"]).pipe(
      Options.withDescription("where the events will be sent: direct (the Direct API)"),
      Options.withDefault("direct" as const)
    ),
    billingSource: Options.choice("billing-source", ["provider", "backend"]).pipe(
      Options.withDescription("who is the billing source of truth; provider warns on billing events"),
      Options.optional
    ),
    json
  },
  (options) =>
    Effect.gen(function* () {
      const entries = yield* readEntries(options.file)
      const report = validateEntries(entries, yield* Clock.currentTimeMillis, {
        billingSource: Option.getOrUndefined(options.billingSource)
      })
      yield* options.json ? printJson(report) : Console.log(formatValidation(report))
      yield* findingsIf(!report.ok)
    })
).pipe(
  Command.withDescription(
    "validate events offline with the service's own contract, data-safety and relevance rules, and warn on emission-rule smells"
  )
)

// ---------------------------------------------------------------------------------------------
// accord classify
// ---------------------------------------------------------------------------------------------

const classify = Command.make(
  "classify",
  {
    file: file.pipe(
      Args.withDescription(
        "a JSON array of candidates { name, where, confirmed_by?, covered_by?, event_kind? }, or { billing_provider?, candidates }"
      )
    ),
    json
  },
  (options) =>
    Effect.gen(function* () {
      const raw = yield* readJson(options.file)
      const decoded = Schema.decodeUnknownEither(CandidateFile)(raw)
      if (Either.isLeft(decoded)) {
        return yield* new UsageError({
          message: `${options.file}: not a candidate file; expected a list of { name, where: backend|background_job|webhook|browser|mobile|desktop, confirmed_by?, covered_by? }`
        })
      }
      const verdicts = classifyFile(decoded.right)
      if (options.json) return yield* printJson({ candidates: verdicts })
      for (const v of verdicts) {
        yield* Console.log(`${v.classification.padEnd(17)} ${v.name}  [${v.rule}] ${v.reason}`)
        if (v.nameProblem !== undefined) yield* Console.log(`${"".padEnd(17)} name: ${v.nameProblem}`)
      }
    })
).pipe(
  Command.withDescription(
    "classify event candidates: direct_api_now, existing_source or web_sdk_follow_up, with the deciding rule"
  )
)

// ---------------------------------------------------------------------------------------------
// accord send-test-event
// ---------------------------------------------------------------------------------------------

const sendTest = Command.make(
  "send-test-event",
  { file: file.pipe(Args.withDescription("a file holding one event")), json },
  (options) =>
    Effect.gen(function* () {
      const entries = yield* readEntries(options.file)
      if (entries.length !== 1) {
        return yield* new UsageError({
          message: `${options.file}: send-test-event sends one event; the file holds ${entries.length}`
        })
      }
      const serviceUrl = yield* Environment.serviceUrl
      const apiKey = yield* Environment.secret("SERVICE_INGEST_API_KEY", "an ingest key, server-side only")
      const report = validateEntries(entries, yield* Clock.currentTimeMillis)
      if (!report.ok) {
        yield* options.json
          ? printJson(report)
          : Console.log(`${formatValidation(report)}\nnot sent: fix the refused event first`)
        return yield* new FindingsReported()
      }
      const result = yield* sendTestEvent({
        serviceUrl,
        apiKey,
        workspaceId: yield* Environment.optional("ACCORD_WORKSPACE_ID"),
        event: entries[0]!.value as IngestEvent,
        print: (lines) => Console.log(lines.join("\n"))
      })
      if (options.json) return yield* printJson(result)
      yield* Console.log(
        `${result.status}: event_id ${result.eventId} for account ${result.accountId}\n` +
          `see it in the Events view: GET ${result.eventsView} (a developer:read or admin key)`
      )
    })
).pipe(
  Command.withDescription(
    "validate one event, then send it with SERVICE_INGEST_API_KEY to ACCORD_SERVICE_URL and print the answer"
  )
)

// ---------------------------------------------------------------------------------------------
// accord workspace create, accord keys create
// ---------------------------------------------------------------------------------------------

const keyName = Options.text("name").pipe(Options.withDescription("a label for the key"), Options.optional)

const workspaceCreate = (storageFor: StorageFor) =>
  Command.make("create", { name: keyName }, (options) =>
    Effect.flatMap(createWorkspace(storageFor, Option.getOrNull(options.name)), printJson)
  ).pipe(
    Command.withDescription(
      "create a workspace and its first admin key in the configured storage (DATABASE_URL or ACCORD_DATA_DIR); " +
        "prints them once as JSON"
    )
  )

const keysCreate = (storageFor: StorageFor) =>
  Command.make(
    "create",
    {
      scope: Options.choice("scope", ["ingest", "developer:read", "admin"]).pipe(
        Options.withDescription("the key's scope")
      ),
      workspace: Options.text("workspace").pipe(
        Options.withDescription("the workspace id (default ACCORD_WORKSPACE_ID)"),
        Options.optional
      ),
      name: keyName
    },
    (options) =>
      Effect.gen(function* () {
        const workspaceId = Option.isSome(options.workspace)
          ? options.workspace.value
          : yield* Environment.required("ACCORD_WORKSPACE_ID", "or --workspace")
        yield* printJson(
          yield* createKey(storageFor, { workspaceId, scope: options.scope, name: Option.getOrNull(options.name) })
        )
      })
  ).pipe(Command.withDescription("create a key of a scope in a workspace; prints it once as JSON"))

const eventsSweep = (storageFor: StorageFor) =>
  Command.make("sweep", {}, () => Effect.flatMap(sweepEvents(storageFor), printJson)).pipe(
    Command.withDescription(
      "remove the events older than their workspace's retention now (ACCORD_EVENT_RETENTION_DAYS for a workspace " +
        "without its own) and prepare the months ahead; prints what it did as JSON"
    )
  )

// ---------------------------------------------------------------------------------------------
// accord install handoff
// ---------------------------------------------------------------------------------------------

const handoff = Command.make(
  "handoff",
  {
    target: Options.choice("target", Handoff.targets).pipe(
      Options.withDescription(
        "markdown (accord-handoff.md), agents-md (AGENTS.md) or cursor (.cursor/rules/accord.mdc)"
      )
    ),
    out: Options.text("out").pipe(Options.withDescription("where to write it (default per target)"), Options.optional),
    force: Options.boolean("force").pipe(Options.withDescription("replace an existing file"))
  },
  (options) =>
    Effect.gen(function* () {
      const out = Option.getOrElse(options.out, () => Handoff.defaultPaths[options.target])
      yield* Console.log(`wrote ${yield* Handoff.install(options.target, out, options.force)}`)
    })
).pipe(
  Command.withDescription(
    "write the agent handoff file: event contract, families, emission rules, never-send list, classification, how to validate"
  )
)

const install = Command.make("install").pipe(
  Command.withDescription("install files for coding agents"),
  Command.withSubcommands([handoff])
)

// ---------------------------------------------------------------------------------------------
// accord context-server start
// ---------------------------------------------------------------------------------------------

const contextServerStart = (version: string) =>
  Command.make(
    "start",
    {
      http: Options.integer("http").pipe(
        Options.withDescription(
          "serve streamable HTTP on this loopback port at /mcp instead of stdio, behind a bearer token (ACCORD_CONTEXT_TOKEN, or one generated and printed at start)"
        ),
        Options.optional
      ),
      allowSendTestEvent: Options.boolean("allow-send-test-event").pipe(
        Options.withDescription("setup smoke testing only: add the send_test_event tool (needs SERVICE_INGEST_API_KEY)")
      )
    },
    (options) =>
      Effect.gen(function* () {
        const serviceUrl = yield* Environment.serviceUrl
        const workspaceId = yield* Environment.required("ACCORD_WORKSPACE_ID", "the workspace to read")
        const apiKey = yield* Environment.secret("SERVICE_API_KEY", "a developer:read key")
        const ingestKey = options.allowSendTestEvent
          ? yield* Environment.secret("SERVICE_INGEST_API_KEY", "--allow-send-test-event sends with the ingest key")
          : undefined
        const reads = ServiceReads.make({ serviceUrl, workspaceId, apiKey })
        yield* ServiceReads.checkReadKey(reads)
        // loaded only here: the MCP and HTTP server modules take seconds to load
        const ContextServer = yield* Effect.promise(() => import("../mcp/ContextServer.ts"))
        const http = yield* Option.match(options.http, {
          onNone: () => Effect.succeed(undefined),
          onSome: (port) =>
            Effect.map(Environment.optional("ACCORD_CONTEXT_TOKEN"), (given) => ({
              port,
              token: Redacted.make(Option.getOrElse(given, () => randomBytes(32).toString("base64url"))),
              printToken: Option.isNone(given)
            }))
        })
        return yield* ContextServer.serve({
          reads,
          version,
          sendTestEvent: ingestKey === undefined ? undefined : { serviceUrl, ingestKey },
          http
        })
      })
  ).pipe(
    Command.withDescription(
      "start the read-only MCP context server for coding agents (stdio by default); reads with SERVICE_API_KEY " +
        "(developer:read) from ACCORD_SERVICE_URL for ACCORD_WORKSPACE_ID"
    )
  )

// ---------------------------------------------------------------------------------------------
// accord backfill
// ---------------------------------------------------------------------------------------------

const backfill = Command.make(
  "backfill",
  {
    file: file.pipe(Args.withDescription("historical usage_rollup_recorded rows: a JSON array or JSON Lines")),
    state: Options.text("state").pipe(
      Options.withDescription("where progress is kept for resuming (default FILE.backfill-state.json)"),
      Options.optional
    ),
    maxConcurrency: Options.integer("max-concurrency").pipe(
      Options.withDescription(
        `ceiling of requests in flight (1-32, default ${Backfill.defaultMaxConcurrency}); it starts at 1`
      ),
      Options.withDefault(Backfill.defaultMaxConcurrency)
    ),
    json
  },
  (options) =>
    Effect.gen(function* () {
      if (options.maxConcurrency < 1 || options.maxConcurrency > 32) {
        return yield* new UsageError({ message: "--max-concurrency must be from 1 to 32" })
      }
      // Past the per-event threshold (or for a gzip file) the file goes to the bulk import.
      const lines = yield* Effect.promise(() => BulkImport.countLines(options.file))
      if (BulkImport.isGzip(options.file) || lines > Backfill.maxBackfillRows) {
        const serviceUrl = yield* Environment.serviceUrl
        const apiKey = yield* Environment.secret("SERVICE_INGEST_API_KEY", "an ingest key, server-side only")
        const status = yield* BulkImport.run({
          path: options.file,
          serviceUrl,
          apiKey,
          progress: BulkImport.progressBar(process.stderr, (line) => console.error(line))
        })
        if (process.stderr.isTTY) process.stderr.write("\n")
        if (options.json) yield* printJson(status)
        else {
          yield* Console.log(
            `bulk import ${status.import_id}: ${status.lines_committed} lines: ${status.accepted} accepted, ` +
              `${status.duplicates} duplicate, ${status.refused} refused`
          )
          for (const e of status.errors)
            yield* Console.log(`  refused line ${e.line} [${e.code}]${e.path ? ` ${e.path}` : ""}`)
        }
        return yield* findingsIf(status.refused > 0)
      }
      const entries = yield* readEntries(options.file)
      const serviceUrl = yield* Environment.serviceUrl
      const apiKey = yield* Environment.secret("SERVICE_INGEST_API_KEY", "an ingest key, server-side only")
      const summary = yield* Backfill.run({
        entries,
        serviceUrl,
        apiKey,
        statePath: Option.getOrElse(options.state, () => `${options.file}.backfill-state.json`),
        maxConcurrency: options.maxConcurrency,
        // with --json, stdout is one document: the plain progress lines go to stderr
        progress: Backfill.progressFor(process.stderr, (line) =>
          options.json ? console.error(line) : console.log(line)
        ),
        print: (text) => Console.log(text)
      })
      if (options.json) yield* printJson(summary)
      else {
        yield* Console.log(
          `backfill: ${summary.rows} rows in ${summary.ranges} ranges: ${summary.accepted} accepted, ${summary.duplicate} duplicate, ` +
            `${summary.skipped} already done, ${summary.refused.length} refused; ${summary.throttled} throttled, ` +
            `concurrency up to ${summary.maxConcurrencyReached}, ${summary.seconds.toFixed(1)}s`
        )
        for (const r of summary.refused) yield* Console.log(`  refused ${r.event_id} [${r.code}]`)
      }
      yield* findingsIf(summary.refused.length > 0)
    })
).pipe(
  Command.withDescription(
    "send historical usage rollups: oldest closed day first, adaptive concurrency, backoff on 429/5xx, resumable, " +
      `at most ${Backfill.maxBackfillRows} rows per run; past it, or for a .gz file, the service's resumable bulk import (JSON Lines) with a progress bar`
  )
)

// ---------------------------------------------------------------------------------------------
// the root
// ---------------------------------------------------------------------------------------------

/**
 * What the runtime passes in.
 */
export interface CliOptions {
  readonly version: string
  /** The server's storage layer, for `workspace create`, `keys create` and `events sweep`. */
  readonly storage: StorageFor
}

/**
 * The root command.
 */
export const accord = (options: CliOptions) =>
  Command.make("accord").pipe(
    Command.withDescription("Accord: the Direct API and customer-action connector tools"),
    Command.withSubcommands([
      customer,
      validate,
      classify,
      sendTest,
      Command.make("workspace").pipe(
        Command.withDescription("workspaces"),
        Command.withSubcommands([workspaceCreate(options.storage)])
      ),
      Command.make("keys").pipe(
        Command.withDescription("API keys"),
        Command.withSubcommands([keysCreate(options.storage)])
      ),
      Command.make("events").pipe(
        Command.withDescription("stored Direct API events"),
        Command.withSubcommands([eventsSweep(options.storage)])
      ),
      install,
      Command.make("context-server").pipe(
        Command.withDescription("the MCP context server for coding agents"),
        Command.withSubcommands([contextServerStart(options.version)])
      ),
      backfill,
      actions
    ])
  )

/**
 * Whether a stream may carry colour: only for a person at a terminal, and never with `NO_COLOR`
 * set to anything but the empty string (no-color.org).
 */
export const colourAllowed = (env: NodeJS.ProcessEnv, isTTY: boolean | undefined): boolean =>
  isTTY === true && (env["NO_COLOR"] === undefined || env["NO_COLOR"] === "")

const plainText = (args: ReadonlyArray<unknown>): Array<unknown> =>
  args.map((arg) => (typeof arg === "string" ? stripVTControlCharacters(arg) : arg))

/**
 * The console with ANSI escapes taken out of what goes to a stream that may not carry colour:
 * `@effect/cli` styles its help and usage errors whatever the stream is.
 */
const plainConsole = (inner: Console.Console, plainOut: boolean, plainErr: boolean): Console.Console => {
  const out = (args: ReadonlyArray<unknown>) => (plainOut ? plainText(args) : args)
  const err = (args: ReadonlyArray<unknown>) => (plainErr ? plainText(args) : args)
  return {
    ...inner,
    log: (...args) => inner.log(...out(args)),
    info: (...args) => inner.info(...out(args)),
    debug: (...args) => inner.debug(...out(args)),
    error: (...args) => inner.error(...err(args)),
    warn: (...args) => inner.warn(...err(args)),
    unsafe: {
      ...inner.unsafe,
      log: (...args) => inner.unsafe.log(...out(args)),
      info: (...args) => inner.unsafe.info(...out(args)),
      debug: (...args) => inner.unsafe.debug(...out(args)),
      error: (...args) => inner.unsafe.error(...err(args)),
      warn: (...args) => inner.unsafe.warn(...err(args))
    }
  }
}

/** Runs `self` with colour only where `colourAllowed` says so, read when it runs. */
const withColourPolicy = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Console.consoleWith((inner) =>
    Effect.withConsole(
      self,
      plainConsole(
        inner,
        !colourAllowed(process.env, process.stdout.isTTY),
        !colourAllowed(process.env, process.stderr.isTTY)
      )
    )
  )

/**
 * Runs the CLI on `argv` (as `process.argv`: runtime and script first) and answers the exit code.
 * Errors are one line on stderr, never a stack trace. Colour only on a terminal without `NO_COLOR`.
 */
export const run = (argv: ReadonlyArray<string>, options: CliOptions): Effect.Effect<number> =>
  Command.run(accord(options), { name: "accord", version: options.version })(argv).pipe(
    // stdout is the command's answer (JSON for scripts, MCP over stdio): logs go to stderr, warnings up
    Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))),
    Logger.withMinimumLogLevel(LogLevel.Warning),
    Effect.provide(NodeContext.layer),
    Effect.exit,
    Effect.flatMap((exit) => {
      if (Exit.isSuccess(exit)) return Effect.succeed(exitCodes.ok)
      const failure = Cause.failureOption(exit.cause)
      if (Option.isSome(failure)) {
        const error = failure.value
        if (ValidationError.isValidationError(error)) return Effect.succeed(exitCodes.usage)
        if (error._tag === "FindingsReported") return Effect.succeed(exitCodes.findings)
        if (error._tag === "UsageError")
          return Effect.as(Console.error(`accord: ${oneLine(error.message)}`), exitCodes.usage)
      }
      const defect = Cause.squash(exit.cause)
      const message = defect instanceof Error ? defect.message : "unexpected failure"
      return Effect.as(Console.error(`accord: internal error: ${oneLine(message)}`), exitCodes.usage)
    }),
    withColourPolicy
  )
