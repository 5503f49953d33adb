/**
 * The reference backend's configuration (`configFromEnv`): every variable docs/guide-customer-backends.md documents,
 * its default, and the refusal of bad values with one problem per variable that never repeats a
 * value.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { configFromEnv } from "../../../examples/customer-backend/Backend.ts"

const actionSigning = "as_3f9c1e7a5b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e"
const completion = "cs_8e6c4a2f0d1b3e5c7a9f1d3b5e7c9a1f3d5b7e9c"
const workspaceId = "0b7f3a52-6c1e-4d8a-9f2b-3e5c7a9d1f20"

const minimal = {
  ACCORD_WORKSPACE_ID: workspaceId,
  ACCORD_ACTION_SIGNING_SECRET: actionSigning,
  ACCORD_COMPLETION_SECRET: completion,
  ACCORD_SERVICE_URL: "https://accord.example.com"
}

/** The problems `env` is refused with (one line each); fails if it is accepted. */
const problemsOf = (env: Record<string, string | undefined>): Array<string> => {
  try {
    configFromEnv(env)
  } catch (error) {
    assert.strictEqual((error as { _tag?: string })._tag, "InvalidConfig")
    const message = (error as Error).message
    for (const value of Object.values(env)) {
      // No value is ever repeated (short ones like "0" could occur in the text by chance).
      if (value !== undefined && value.length >= 8) assert.notInclude(message, value)
    }
    return message.split("\n")
  }
  return assert.fail("the configuration was accepted")
}

describe("reference backend configuration", () => {
  it.effect("defaults: only the four required variables", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(configFromEnv(minimal), {
        port: 8788,
        host: "127.0.0.1",
        workspaceId,
        actionSigningSecret: actionSigning,
        completionSecret: completion,
        connectionRevision: 0,
        serviceUrl: "https://accord.example.com",
        ingestApiKey: undefined,
        dataDir: "./.customer-data",
        databaseUrl: undefined,
        featureKey: "extended_trial",
        allowInsecureServiceUrl: false
      })
    })
  )

  it.effect("every variable is read", () =>
    Effect.sync(() => {
      const config = configFromEnv({
        ...minimal,
        PORT: "9000",
        HOST: "0.0.0.0",
        ACCORD_CONNECTION_REVISION: "3",
        ACCORD_SERVICE_URL: "http://127.0.0.1:8787",
        ACCORD_ALLOW_INSECURE_ENDPOINTS: "true",
        SERVICE_INGEST_API_KEY: "ak_ingest_0123456789",
        ACCORD_DATA_DIR: "/var/lib/backend",
        DATABASE_URL: "postgres://backend@db:5432/backend",
        EXAMPLE_FEATURE_KEY: "advanced_reports"
      })
      assert.deepStrictEqual(config, {
        port: 9000,
        host: "0.0.0.0",
        workspaceId,
        actionSigningSecret: actionSigning,
        completionSecret: completion,
        connectionRevision: 3,
        serviceUrl: "http://127.0.0.1:8787",
        ingestApiKey: "ak_ingest_0123456789",
        dataDir: "/var/lib/backend",
        databaseUrl: "postgres://backend@db:5432/backend",
        featureKey: "advanced_reports",
        allowInsecureServiceUrl: true
      })
    })
  )

  it.effect("empty values count as unset", () =>
    Effect.sync(() => {
      const config = configFromEnv({
        ...minimal,
        PORT: "",
        SERVICE_INGEST_API_KEY: "",
        DATABASE_URL: " ",
        ACCORD_CONNECTION_REVISION: ""
      })
      assert.deepStrictEqual(
        [config.port, config.ingestApiKey, config.databaseUrl, config.connectionRevision],
        [8788, undefined, undefined, 0]
      )
    })
  )

  it.effect("missing required variables: one line each", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(problemsOf({}), [
        "ACCORD_WORKSPACE_ID is required",
        "ACCORD_ACTION_SIGNING_SECRET is required",
        "ACCORD_COMPLETION_SECRET is required",
        "ACCORD_SERVICE_URL is required"
      ])
    })
  )

  it.effect("bad values: every problem at once, naming the variable, never the value", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(
        problemsOf({
          PORT: "65536",
          ACCORD_WORKSPACE_ID: "my-workspace",
          ACCORD_ACTION_SIGNING_SECRET: "short-action-secret",
          ACCORD_COMPLETION_SECRET: `${completion}\n`,
          ACCORD_SERVICE_URL: "ftp://accord.example.com",
          ACCORD_ALLOW_INSECURE_ENDPOINTS: "maybe",
          EXAMPLE_FEATURE_KEY: "Advanced Reports",
          ACCORD_CONNECTION_REVISION: "-1"
        }),
        [
          "PORT must be an integer from 0 to 65535",
          "ACCORD_WORKSPACE_ID must be the workspace's UUID",
          "ACCORD_ACTION_SIGNING_SECRET must be at least 32 characters",
          "ACCORD_COMPLETION_SECRET must not start or end with whitespace or contain control characters",
          "ACCORD_ALLOW_INSECURE_ENDPOINTS must be true or false",
          "ACCORD_SERVICE_URL must be the service's http(s) base URL, without credentials",
          "EXAMPLE_FEATURE_KEY must be a lower-case code of 1 to 64 characters",
          "ACCORD_CONNECTION_REVISION must be a non-negative integer (the revision PUT /connector answered)"
        ]
      )
    })
  )

  it.effect("the service's secret rules: code points, at most 512, distinct", () =>
    Effect.sync(() => {
      // 32 code points (64 UTF-16 units) is long enough; 31 is not.
      assert.strictEqual(
        configFromEnv({ ...minimal, ACCORD_ACTION_SIGNING_SECRET: "🔑".repeat(32) }).actionSigningSecret,
        "🔑".repeat(32)
      )
      assert.deepStrictEqual(problemsOf({ ...minimal, ACCORD_ACTION_SIGNING_SECRET: "🔑".repeat(31) }), [
        "ACCORD_ACTION_SIGNING_SECRET must be at least 32 characters"
      ])
      assert.deepStrictEqual(problemsOf({ ...minimal, ACCORD_COMPLETION_SECRET: "c".repeat(513) }), [
        "ACCORD_COMPLETION_SECRET must be at most 512 characters"
      ])
      assert.deepStrictEqual(problemsOf({ ...minimal, ACCORD_COMPLETION_SECRET: actionSigning }), [
        "ACCORD_COMPLETION_SECRET must differ from ACCORD_ACTION_SIGNING_SECRET"
      ])
    })
  )

  it.effect("the service URL: https on a public host unless insecure endpoints are allowed; no credentials", () =>
    Effect.sync(() => {
      const insecure =
        "ACCORD_SERVICE_URL must be https on a public host (ACCORD_ALLOW_INSECURE_ENDPOINTS=true allows http and loopback in development)"
      assert.deepStrictEqual(problemsOf({ ...minimal, ACCORD_SERVICE_URL: "http://accord.example.com" }), [insecure])
      assert.deepStrictEqual(problemsOf({ ...minimal, ACCORD_SERVICE_URL: "https://127.0.0.1:8787" }), [insecure])
      assert.deepStrictEqual(problemsOf({ ...minimal, ACCORD_SERVICE_URL: "https://localhost" }), [insecure])
      assert.deepStrictEqual(problemsOf({ ...minimal, ACCORD_SERVICE_URL: "not a url" }), [
        "ACCORD_SERVICE_URL must be the service's http(s) base URL, without credentials"
      ])
      assert.deepStrictEqual(
        problemsOf({ ...minimal, ACCORD_SERVICE_URL: "https://user:hunter2hunter2@accord.example.com" }),
        ["ACCORD_SERVICE_URL must be the service's http(s) base URL, without credentials"]
      )
      for (const flag of ["1", "yes", "on", "TRUE"]) {
        assert.isTrue(
          configFromEnv({
            ...minimal,
            ACCORD_SERVICE_URL: "http://localhost:8787",
            ACCORD_ALLOW_INSECURE_ENDPOINTS: flag
          }).allowInsecureServiceUrl
        )
      }
      assert.isFalse(configFromEnv({ ...minimal, ACCORD_ALLOW_INSECURE_ENDPOINTS: "false" }).allowInsecureServiceUrl)
    })
  )

  it.effect("PORT and ACCORD_CONNECTION_REVISION: integers only", () =>
    Effect.sync(() => {
      for (const port of ["abc", "80.5", "-1", "1e3"])
        assert.deepStrictEqual(problemsOf({ ...minimal, PORT: port }), ["PORT must be an integer from 0 to 65535"])
      assert.strictEqual(configFromEnv({ ...minimal, PORT: "0" }).port, 0)
      for (const revision of ["one", "1.5", "+2"]) {
        assert.deepStrictEqual(problemsOf({ ...minimal, ACCORD_CONNECTION_REVISION: revision }), [
          "ACCORD_CONNECTION_REVISION must be a non-negative integer (the revision PUT /connector answered)"
        ])
      }
      assert.strictEqual(configFromEnv({ ...minimal, ACCORD_CONNECTION_REVISION: "12" }).connectionRevision, 12)
    })
  )
})
