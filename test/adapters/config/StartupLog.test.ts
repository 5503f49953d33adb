import { assert, describe, it } from "@effect/vitest"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as AccordConfig from "../../../adapters/config/AccordConfig.ts"
import { InvalidConfig } from "../../../adapters/config/AccordConfig.ts"
import * as StartupLog from "../../../adapters/config/StartupLog.ts"
import { BootstrapKeyConflict } from "../../../core/access/ApiKeys.ts"
import { StorageError } from "../../../core/ports/StorageError.ts"

const key = Redacted.make(new Uint8Array(32))
const masterKey = (
  source: AccordConfig.MasterKey["source"],
  extra: Partial<AccordConfig.MasterKey> = {}
): AccordConfig.MasterKey => ({
  key,
  source,
  path: source === "file" || source === "created" ? "/data/master.key" : undefined,
  warning: undefined,
  ...extra
})

const config = (allowInsecureEndpoints: boolean) =>
  ({ allowInsecureEndpoints, host: "127.0.0.1", port: 8787 }) as AccordConfig.AccordConfig

describe("StartupLog", () => {
  it("says where the master key came from, never the key", () => {
    assert.strictEqual(StartupLog.masterKeySource(masterKey("environment")), "master key: from ACCORD_MASTER_KEY")
    assert.strictEqual(
      StartupLog.masterKeySource(masterKey("ephemeral")),
      "master key: generated for this process (in-memory data directory)"
    )
    assert.strictEqual(StartupLog.masterKeySource(masterKey("created")), "master key: /data/master.key (created)")
    assert.strictEqual(StartupLog.masterKeySource(masterKey("file")), "master key: /data/master.key (existing)")
  })

  it("warns about a key file others can read", () => {
    assert.deepStrictEqual(StartupLog.masterKeyWarnings(masterKey("file")), { info: [], warnings: [] })
    assert.deepStrictEqual(StartupLog.masterKeyWarnings(masterKey("file", { warning: "readable" })), {
      info: [],
      warnings: ["readable"]
    })
  })

  it("warns loudly when insecure endpoints are allowed, and only then", () => {
    assert.deepStrictEqual(StartupLog.listening(config(false), masterKey("environment")), {
      info: ["master key: from ACCORD_MASTER_KEY"],
      warnings: []
    })
    const open = StartupLog.listening(config(true), masterKey("environment"))
    assert.deepStrictEqual(open.warnings, [StartupLog.insecureEndpointsWarning])
    assert.include(StartupLog.insecureEndpointsWarning, "ACCORD_ALLOW_INSECURE_ENDPOINTS IS ON")
  })

  it("says what bootstrapping did, and warns when the key stays revoked", () => {
    const workspace = "0b7f3a52-6c1e-4d8a-9f2b-3e5c7a9d1f20"
    assert.deepStrictEqual(StartupLog.bootstrapped(workspace, { workspaceCreated: true, adminKey: "created" }), {
      info: [`bootstrap: workspace ${workspace} created, admin key created`],
      warnings: []
    })
    assert.deepStrictEqual(StartupLog.bootstrapped(workspace, { workspaceCreated: false, adminKey: "revoked" }), {
      info: [`bootstrap: workspace ${workspace} present, admin key revoked`],
      warnings: ["bootstrap: ACCORD_BOOTSTRAP_ADMIN_KEY was revoked and is not restored"]
    })
    assert.deepStrictEqual(
      StartupLog.bootstrapped(workspace, { workspaceCreated: false, adminKey: "present", ingestKey: "revoked" }),
      {
        info: [`bootstrap: workspace ${workspace} present, admin key present, ingest key revoked`],
        warnings: ["bootstrap: ACCORD_BOOTSTRAP_INGEST_KEY was revoked and is not restored"]
      }
    )
    assert.strictEqual(
      StartupLog.bootstrapFailure(new StorageError({ operation: "x", message: "down" })),
      "bootstrap: down"
    )
    assert.strictEqual(
      StartupLog.bootstrapFailure(new BootstrapKeyConflict({ scope: "admin" })),
      new BootstrapKeyConflict({ scope: "admin" }).message
    )
  })

  it("explains a failed start in plain lines", () => {
    assert.strictEqual(
      StartupLog.listenFailure(config(false), new Error("EADDRINUSE")),
      "cannot listen on 127.0.0.1:8787: EADDRINUSE"
    )
    assert.strictEqual(StartupLog.listenFailure(config(false), "?"), "cannot listen on 127.0.0.1:8787: unknown error")
    assert.deepStrictEqual(StartupLog.startFailure(new InvalidConfig({ problems: ["PORT is bad", "HOST is bad"] })), [
      "Accord cannot start: invalid configuration",
      "  - PORT is bad",
      "  - HOST is bad"
    ])
    assert.deepStrictEqual(StartupLog.startFailure({ _tag: "StartupError", reason: "storage: down" }), [
      "Accord cannot start",
      "  - storage: down"
    ])
  })

  it("warns when the data is in PostgreSQL but the master key only in a local file", () => {
    const settings = (databaseUrl: boolean, masterKeySet: boolean) =>
      ({
        databaseUrl: databaseUrl ? Option.some(Redacted.make("postgres://db/accord")) : Option.none(),
        masterKey: masterKeySet ? Option.some(key) : Option.none()
      }) as AccordConfig.AccordConfig
    const [warning] = StartupLog.masterKeyPlacement(settings(true, false), masterKey("created")).warnings
    assert.include(warning, "DATABASE_URL is set but ACCORD_MASTER_KEY is not")
    assert.include(warning, "/data/master.key")
    assert.deepStrictEqual(StartupLog.masterKeyPlacement(settings(true, true), masterKey("environment")), {
      info: [],
      warnings: []
    })
    assert.deepStrictEqual(StartupLog.masterKeyPlacement(settings(false, false), masterKey("created")), {
      info: [],
      warnings: []
    })
    assert.match(
      StartupLog.masterKeyMismatch(settings(true, true)),
      /^master key: ACCORD_MASTER_KEY is not the master key this database was first started with; set ACCORD_MASTER_KEY/
    )
    assert.match(
      StartupLog.masterKeyMismatch(settings(true, false)),
      /^master key: the key file in ACCORD_DATA_DIR is not .*set ACCORD_MASTER_KEY/
    )
    assert.notInclude(StartupLog.masterKeyMismatch(settings(true, true)), "postgres://")
  })

  it("says which migrations ran and what the master-key guard did", () => {
    assert.deepStrictEqual(StartupLog.migrated([]).info, ["migrations: none pending"])
    assert.deepStrictEqual(
      StartupLog.migrated([
        { id: 1, name: "init" },
        { id: 10, name: "master_key_check" }
      ]).info,
      ["migrations: applied 0001_init, 0010_master_key_check"]
    )
    assert.deepStrictEqual(StartupLog.masterKeyChecked("recorded").info, [
      "master key: check recorded in the database (first start)"
    ])
    assert.deepStrictEqual(StartupLog.masterKeyChecked("matched").info, ["master key: matches the database"])
    assert.include(StartupLog.noAdminKeyHint, "ACCORD_BOOTSTRAP_WORKSPACE_ID")
    assert.include(StartupLog.noAdminKeyHint, "ACCORD_BOOTSTRAP_ADMIN_KEY")
  })
})
