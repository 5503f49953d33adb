/**
 * The repository checks `npm test` runs before the suite: `check:vectors` (the in-repo copy of the
 * conformance vectors equals the shared file when it is beside the repository), `check:links`
 * (README.md and docs/*.md link only to files that exist in the repository) and `check:architecture`
 * (every module, exported symbol and test docs/architecture.md names exists) and
 * `check:postgres-guards` (every test that needs PostgreSQL skips without it). Each runs here in a
 * scratch repository laid out for the case.
 */
import { execFile } from "node:child_process"
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { assert, describe, it } from "@effect/vitest"

const run = promisify(execFile)
const script = (name: string) => fileURLToPath(new URL(`../../scripts/${name}`, import.meta.url))

/** Runs a check with `repo` as its working directory: exit code and output. */
const check = (name: string, repo: string) =>
  run(process.execPath, [script(name)], { cwd: repo }).then(
    ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      output: error.stdout + error.stderr
    })
  )

const scratch = async (files: Record<string, string>) => {
  const root = await mkdtemp(join(tmpdir(), "accord-checks-"))
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(root, path, ".."), { recursive: true })
    await writeFile(join(root, path), content)
  }
  return root
}

describe("check:vectors", () => {
  it("passes when the copy equals the shared file, fails when it differs, skips (and says so) without it", async () => {
    const vectors = JSON.stringify({ signatures: [{ nonce: "a" }] })
    const root = await scratch({
      "same/repo/test/fixtures/conformance/vectors.json": vectors,
      "same/shared/conformance/vectors.json": JSON.stringify(JSON.parse(vectors), null, 2),
      "differs/repo/test/fixtures/conformance/vectors.json": vectors,
      "differs/shared/conformance/vectors.json": JSON.stringify({ signatures: [{ nonce: "b" }] }),
      "alone/repo/test/fixtures/conformance/vectors.json": vectors
    })
    try {
      const same = await check("check-vectors.mjs", join(root, "same/repo"))
      assert.strictEqual(same.code, 0, same.output)
      const differs = await check("check-vectors.mjs", join(root, "differs/repo"))
      assert.strictEqual(differs.code, 1, differs.output)
      assert.include(differs.output, "differs from ../shared/conformance/vectors.json")
      const alone = await check("check-vectors.mjs", join(root, "alone/repo"))
      assert.strictEqual(alone.code, 0, alone.output)
      assert.include(alone.output, "skipped")
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  })
})

describe("check:links", () => {
  it("passes on in-repository links, fails on a dead link, a link outside the repository and a ../shared path", async () => {
    const good = await scratch({
      "README.md": "[decisions](docs/decisions.md) [site](https://effect.website) [top](#top)\n",
      "docs/decisions.md": "[readme](../README.md#run) [self](decisions.md)\n```\n[not a link](nowhere.md)\n```\n"
    })
    const bad = await scratch({
      "README.md": "[gone](docs/gone.md)\nthe specs in `../shared/spec/`\n",
      "docs/decisions.md": "[outside](../../elsewhere.md)\n"
    })
    try {
      const ok = await check("check-links.mjs", good)
      assert.strictEqual(ok.code, 0, ok.output)
      const broken = await check("check-links.mjs", bad)
      assert.strictEqual(broken.code, 1, broken.output)
      assert.include(broken.output, "README.md:1: dead link: docs/gone.md")
      assert.include(broken.output, "README.md:2: names a path outside the repository: ../shared")
      assert.include(broken.output, "docs/decisions.md:1: links outside the repository: ../../elsewhere.md")
    } finally {
      await rm(good, { recursive: true, force: true })
      await rm(bad, { recursive: true, force: true })
    }
  })
})

describe("check:architecture", () => {
  it("passes when every module, exported symbol and test exists, fails naming each one that does not", async () => {
    const table = (rows: string) =>
      `# Map\n\n| Rule | Module | Symbol | Test |\n| --- | --- | --- | --- |\n${rows}\n\n| Other | Column |\n| --- | --- |\n| \`not/checked.ts\` | x |\n`
    const files = {
      "core/Signing.ts": "export const sign = 1\nexport interface Signer {}\nconst hidden = 2\n",
      "test/Signing.test.ts": ""
    }
    const good = await scratch({
      ...files,
      "docs/architecture.md": table(
        "| signs | `core/Signing.ts` | `sign` | `test/Signing.test.ts` |\n| types | `core/Signing.ts` | `Signer` | `test/Signing.test.ts` |\n| none | `core/Signing.ts` | — | — |"
      )
    })
    const bad = await scratch({
      ...files,
      "docs/architecture.md": table(
        "| hidden | `core/Signing.ts` | `hidden` | `test/Signing.test.ts` |\n| gone | `core/Gone.ts` | `sign` | `test/Gone.test.ts` |"
      )
    })
    try {
      const ok = await check("check-architecture.mjs", good)
      assert.strictEqual(ok.code, 0, ok.output)
      assert.include(ok.output, "3 rows")
      const broken = await check("check-architecture.mjs", bad)
      assert.strictEqual(broken.code, 1, broken.output)
      assert.include(broken.output, "docs/architecture.md:5: core/Signing.ts does not export hidden")
      assert.include(broken.output, "docs/architecture.md:6: module core/Gone.ts does not exist")
      assert.include(broken.output, "docs/architecture.md:6: test test/Gone.test.ts does not exist")
    } finally {
      await rm(good, { recursive: true, force: true })
      await rm(bad, { recursive: true, force: true })
    }
  })
})

describe("check:postgres-guards", () => {
  const header =
    'import { describe, it, layer } from "@effect/vitest"\n' +
    'import { databaseUrl, layerFreshSchema } from "../support/postgres.ts"\n' +
    'import { storageVariants, type StorageVariant } from "../support/storage.ts"\n'
  const guarded =
    header +
    "for (const storage of storageVariants) {\n" +
    '  describe.skipIf(!storage.available)("evidence " + storage.name, () => {\n' +
    '    it.effect("x", () => run.pipe(Effect.provide(storage.layer())))\n' +
    "  })\n" +
    "}\n" +
    'for (const storage of storageVariants.filter((v) => v.name !== "postgres")) {\n' +
    "  it.effect(storage.name, () => run.pipe(Effect.provide(storage.layer())))\n" +
    "}\n" +
    'it.scopedLive.skipIf(databaseUrl === undefined)("pg", () => freshSchemaUrl(databaseUrl!))\n' +
    'describe.skipIf(!databaseUrl)("pg", () => {\n' +
    '  layer(layerFreshSchema(databaseUrl!))((it) => { it.effect("y", () => run) })\n' +
    "})\n" +
    "const helper = (storage: StorageVariant) => storage.layer()\n"

  const failsWith = async (files: Record<string, string>, expected: string) => {
    const root = await scratch(files)
    try {
      const result = await check("check-postgres-guards.mjs", root)
      assert.strictEqual(result.code, 1, result.output)
      assert.include(result.output, expected)
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  }

  it("passes when every PostgreSQL test is declared with a guard", async () => {
    const root = await scratch({ "test/a/Guarded.test.ts": guarded })
    try {
      const result = await check("check-postgres-guards.mjs", root)
      assert.strictEqual(result.code, 0, result.output)
      assert.include(result.output, "every PostgreSQL test in test is guarded")
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  })

  it("fails on a loop over the storage variants with no skip guard", () =>
    failsWith(
      {
        "test/a/Loop.test.ts":
          header +
          "for (const storage of storageVariants) {\n" +
          '  describe("evidence " + storage.name, () => {\n' +
          '    it.effect("x", () => run.pipe(Effect.provide(storage.layer())))\n' +
          "  })\n" +
          "}\n"
      },
      "test/a/Loop.test.ts:6: `storage` in `storage.layer` needs PostgreSQL in a test with no guard"
    ))

  it("fails on DATABASE_URL used by a test or a layer with no skip guard", () =>
    failsWith(
      {
        "test/a/Url.test.ts":
          header +
          'layer(layerFreshSchema(databaseUrl!))((it) => { it.effect("x", () => run) })\n' +
          'it("y", () => connect(process.env.DATABASE_URL))\n'
      },
      "test/a/Url.test.ts:4: `databaseUrl` in `databaseUrl!`"
    ).then(() =>
      failsWith(
        { "test/a/Env.test.ts": header + 'it("y", () => connect(process.env.DATABASE_URL))\n' },
        "test/a/Env.test.ts:4: `DATABASE_URL`"
      )
    ))

  it("fails on a suite a helper declares for a variant that may be PostgreSQL, with no skip guard", () =>
    failsWith(
      {
        "test/a/suite.ts":
          header +
          "export const suite = (name: string) => {\n" +
          "  const storage = storageVariants.find((v) => v.name === name)!\n" +
          '  describe("end to end " + storage.name, () => { it.effect("x", () => boot(storage)) })\n' +
          "}\n"
      },
      "test/a/suite.ts:6: `storage` in `boot(storage)`"
    ))
})

describe("check:entry (the entry points' surface)", () => {
  const tsconfig = JSON.stringify({
    compilerOptions: {
      target: "ES2022",
      module: "ESNext",
      moduleResolution: "Bundler",
      strict: true,
      noEmit: true,
      allowImportingTsExtensions: true,
      types: []
    }
  })
  const surface = (module: string, entry: string) =>
    scratch({ "tsconfig.json": tsconfig, "core/Module.ts": module, "entry/module.ts": entry })

  it("passes when every type an exported signature names is exported by an entry point", async () => {
    const repo = await surface(
      "export interface Shown { readonly x: number }\nexport const make = (): Shown => ({ x: 1 })\n",
      'export * as Module from "../core/Module.ts"\n'
    )
    const result = await check("check-entry-surface.mjs", repo)
    await rm(repo, { recursive: true, force: true })
    assert.strictEqual(result.code, 0, result.output)
    assert.include(result.output, "reach only exported types")
  })

  it("fails naming a type a declared signature names that no entry point exports", async () => {
    const repo = await surface(
      "interface Hidden { readonly x: number }\nexport const make = (): Hidden => ({ x: 1 })\n",
      'export * as Module from "../core/Module.ts"\n'
    )
    const result = await check("check-entry-surface.mjs", repo)
    await rm(repo, { recursive: true, force: true })
    assert.strictEqual(result.code, 1)
    assert.include(result.output, "Hidden (core/Module.ts), reached from accord/module: Module.make")
  })

  it("fails naming a type only an inferred signature reaches", async () => {
    const repo = await surface(
      "interface Hidden { readonly x: number }\nconst hidden = (): Hidden => ({ x: 1 })\nexport const make = () => hidden()\n",
      'export { make } from "../core/Module.ts"\n'
    )
    const result = await check("check-entry-surface.mjs", repo)
    await rm(repo, { recursive: true, force: true })
    assert.strictEqual(result.code, 1)
    assert.include(result.output, "Hidden (core/Module.ts), reached from accord/module: make")
  })
})
