/**
 * The `accord` command tree on `@effect/cli`: every command has `--help`, typed options, and the
 * built-in `--version`, `--completions` and `--wizard`. Handlers print their result and fail with
 * `FindingsReported` (exit 1) or `UsageError` (exit 2); `run` turns that into an exit code.
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { parseInteger } from "../config/AccordConfig.ts"
import { formatReport as formatDoctorReport, runDoctor } from "../doctor/CustomerDoctor.ts"
import { CandidateFile, classifyFile } from "../../core/ingest/Classify.ts"
import { exitCodes, FindingsReported, oneLine, UsageError } from "./CliError.ts"
import * as Environment from "./Environment.ts"
import { readEntries, readJson } from "./EventFile.ts"
import { formatReport as formatValidation, validateEntries } from "./Validation.ts"

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
    Effect.gen(function*() {
      const revisionText = Option.isSome(options.revision)
        ? String(options.revision.value)
        : Option.getOrElse(yield* Environment.optional("ACCORD_CONNECTION_REVISION"), () => "0")
      const revision = parseInteger(revisionText)
      if (revision === undefined) {
        return yield* new UsageError({ message: "--revision (or ACCORD_CONNECTION_REVISION) must be a non-negative integer" })
      }
      const workspaceId = yield* Environment.required("ACCORD_WORKSPACE_ID")
      const actionSigningSecret = yield* Environment.required("ACCORD_ACTION_SIGNING_SECRET")
      const completionSecret = yield* Environment.required("ACCORD_COMPLETION_SECRET")
      const report = yield* Effect.promise(() =>
        runDoctor({ endpoint: options.endpoint, workspaceId, actionSigningSecret, completionSecret, revision, withExecution: options.withExecution })
      )
      yield* options.json ? printJson(report) : Console.log(formatDoctorReport(report))
      yield* findingsIf(!report.ok)
    })
).pipe(Command.withDescription(
  "run the installation checks against a customer endpoint (secrets from ACCORD_ACTION_SIGNING_SECRET, " +
    "ACCORD_COMPLETION_SECRET, workspace from ACCORD_WORKSPACE_ID)"
))

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
    Effect.gen(function*() {
      const entries = yield* readEntries(options.file)
      const report = validateEntries(entries, yield* Clock.currentTimeMillis, {
        billingSource: Option.getOrUndefined(options.billingSource)
      })
      yield* options.json ? printJson(report) : Console.log(formatValidation(report))
      yield* findingsIf(!report.ok)
    })
).pipe(Command.withDescription(
  "validate events offline with the service's own contract, data-safety and relevance rules, and warn on emission-rule smells"
))

// ---------------------------------------------------------------------------------------------
// accord classify
// ---------------------------------------------------------------------------------------------

const classify = Command.make(
  "classify",
  {
    file: file.pipe(Args.withDescription(
      "a JSON array of candidates { name, where, confirmed_by?, covered_by?, event_kind? }, or { billing_provider?, candidates }"
    )),
    json
  },
  (options) =>
    Effect.gen(function*() {
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
).pipe(Command.withDescription("classify event candidates: direct_api_now, existing_source or web_sdk_follow_up, with the deciding rule"))

// ---------------------------------------------------------------------------------------------
// the root
// ---------------------------------------------------------------------------------------------

/**
 * The root command.
 *
 * @since 0.1.0
 */
export const accord = Command.make("accord").pipe(
  Command.withDescription("Accord: the Direct API and customer-action connector tools"),
  Command.withSubcommands([customer, validate, classify])
)

/**
 * Runs the CLI on `argv` (as `process.argv`: runtime and script first) and answers the exit code.
 * Errors are one line on stderr, never a stack trace.
 *
 * @since 0.1.0
 */
export const run = (argv: ReadonlyArray<string>, version: string): Effect.Effect<number> =>
  Command.run(accord, { name: "accord", version })(argv).pipe(
    Effect.provide(NodeContext.layer),
    Effect.exit,
    Effect.flatMap((exit) => {
      if (Exit.isSuccess(exit)) return Effect.succeed(exitCodes.ok)
      const failure = Cause.failureOption(exit.cause)
      if (Option.isSome(failure)) {
        const error = failure.value
        if (ValidationError.isValidationError(error)) return Effect.succeed(exitCodes.usage)
        if (error._tag === "FindingsReported") return Effect.succeed(exitCodes.findings)
        if (error._tag === "UsageError") return Effect.as(Console.error(`accord: ${oneLine(error.message)}`), exitCodes.usage)
      }
      const defect = Cause.squash(exit.cause)
      const message = defect instanceof Error ? defect.message : "unexpected failure"
      return Effect.as(Console.error(`accord: internal error: ${oneLine(message)}`), exitCodes.usage)
    })
  )
