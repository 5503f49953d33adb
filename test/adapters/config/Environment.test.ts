/**
 * The one list of environment variables (`adapters/config/Environment.ts`): the loaders read exactly
 * its names, `--help` on the server entry prints every one of them, and the telemetry variables are
 * validated like the others.
 */
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as ConfigProviderPathPatch from "effect/ConfigProviderPathPatch"
import * as Effect from "effect/Effect"
import * as HashSet from "effect/HashSet"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as AccordConfig from "../../../adapters/config/AccordConfig.ts"
import * as Environment from "../../../adapters/config/Environment.ts"
import * as RotateMasterKey from "../../../runtimes/maintenance/RotateMasterKey.ts"
import { configFrom } from "../../support/http.ts"
import { nodeArgs } from "../../../scripts/entrypoint.ts"

const root = fileURLToPath(new URL("../../..", import.meta.url))

/** A provider where every variable is unset, recording each name asked for. */
const recording = () => {
  const names = new Set<string>()
  const provider = ConfigProvider.fromFlat(
    ConfigProvider.makeFlat({
      load: (path) => {
        names.add(path.join("_"))
        return Effect.fail(ConfigError.MissingData([...path], "unset"))
      },
      enumerateChildren: () => Effect.succeed(HashSet.empty()),
      patch: ConfigProviderPathPatch.empty
    })
  )
  return { names, provider }
}

const namesReadBy = (readBy: Environment.Variable["readBy"]) =>
  Environment.variables
    .filter((variable) => variable.readBy === readBy)
    .map((variable) => variable.name)
    .sort()

describe("Environment", () => {
  it.effect("AccordConfig.load reads exactly the server variables of the list", () =>
    Effect.gen(function* () {
      const { names, provider } = recording()
      yield* Effect.withConfigProvider(AccordConfig.load, provider)
      assert.deepStrictEqual([...names].sort(), namesReadBy("server"))
    })
  )

  it.effect("the rotation command reads the server variables and ACCORD_NEW_MASTER_KEY, nothing else", () =>
    Effect.gen(function* () {
      const { names, provider } = recording()
      yield* Effect.flip(Effect.withConfigProvider(RotateMasterKey.run, provider))
      assert.deepStrictEqual([...names].sort(), [...namesReadBy("server"), ...namesReadBy("rotation")].sort())
    })
  )

  it("--help on the server entry lists every variable with its default, and starts nothing", async () => {
    const output = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        [...nodeArgs("runtimes/node/main.ts"), "--help"],
        { cwd: root, timeout: 150_000 },
        (error, stdout) => (error === null ? resolve(stdout) : reject(error))
      )
    )
    for (const variable of Environment.variables) {
      assert.include(output, variable.name)
      if (variable.defaultValue !== undefined) assert.include(output, `(default ${variable.defaultValue})`)
    }
    assert.notInclude(output, "listening")
  }, 180_000)
})

describe("telemetry configuration", () => {
  it.effect("OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_SERVICE_NAME: unset, set, trailing slash dropped", () =>
    Effect.gen(function* () {
      assert.isTrue(Option.isNone((yield* configFrom({})).otlp))
      const config = yield* configFrom({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/",
        OTEL_SERVICE_NAME: "accord-eu"
      })
      assert.deepStrictEqual(config.otlp, Option.some({ endpoint: "http://collector:4318", serviceName: "accord-eu" }))
      const named = yield* configFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://otel.example" })
      assert.deepStrictEqual(named.otlp, Option.some({ endpoint: "https://otel.example", serviceName: "accord" }))
    })
  )

  it.effect("rejects an OTEL_EXPORTER_OTLP_ENDPOINT that is not an http(s) URL, without the value", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(configFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector-secret-host:4318" }))
      assert.deepStrictEqual(error.problems, [
        "OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL (the collector's OTLP/HTTP base, e.g. http://localhost:4318)"
      ])
    })
  )

  it.effect("ACCORD_METRICS_TOKEN is kept redacted", () =>
    Effect.gen(function* () {
      const config = yield* configFrom({ ACCORD_METRICS_TOKEN: "scrape-token-123" })
      assert.strictEqual(Option.map(config.metricsToken, Redacted.value).pipe(Option.getOrNull), "scrape-token-123")
      assert.notInclude(String(config.metricsToken), "scrape-token-123")
    })
  )
})
