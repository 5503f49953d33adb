/**
 * The package as an embedder installs it. `npm pack` runs once; the tarball is unpacked as a
 * temporary project's `node_modules/accord` (what `npm install ./accord-*.tgz` does) and its
 * dependencies are linked from this checkout's `node_modules`, so no registry is reached. Every
 * embedding example (`examples/embed-*`) then runs from that project as plain JavaScript, with no
 * TypeScript loader:
 *
 * - with only the package's `dependencies` installed: the engine over memory storage on Node, Bun
 *   and Deno, and every light entry point imported on each (so none of them loads an optional peer:
 *   those are not installed yet);
 * - then with the peers `accord/server` needs and the host frameworks: the service mounted under a
 *   path of a Hono app and of an Express app, and the customer kit inside an Express app, each on
 *   the host's own server and port, on Node, Bun and Deno;
 * - then with the command's peers: the `accord` command (`bin/accord.mjs`), compiled, on Node.
 *
 * A runtime that is not installed is skipped with one SKIPPED line. The project is removed after.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"

const root = fileURLToPath(new URL("../..", import.meta.url))
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  version: string
  dependencies: Record<string, string>
}

/** The entry points that must load with the package's dependencies alone. */
const lightEntries = ["engine", "ports", "protocol", "kit", "kit/stripe", "sdk", "memory", "node-crypto", "config"]
/** What `accord/server` and the example hosts need beyond the dependencies. */
const serverPeers = [
  "@effect/platform-node",
  "@effect/sql",
  "@effect/sql-pg",
  "@effect/experimental",
  "@electric-sql/pglite",
  "pg",
  "pg-copy-streams"
]
const hosts = ["hono", "@hono/node-server", "express"]
/** What the `accord` command needs beyond the `accord/server` peers. */
const cliPeers = ["@effect/cli", "@effect/printer", "@effect/printer-ansi"]

const runtimeAvailable = (command: string): boolean =>
  spawnSync(command, ["--version"], { encoding: "utf8", env: runtimeEnv() }).status === 0
const bin = (name: string) => join(root, "node_modules", ".bin", name)
const runtimeEnv = (): NodeJS.ProcessEnv => ({
  PATH: process.env["PATH"] ?? "",
  HOME: process.env["HOME"] ?? tmpdir(),
  NO_COLOR: "1",
  DENO_NO_UPDATE_CHECK: "1"
})
const runtimes = {
  node: { command: process.execPath, args: [] as Array<string> },
  bun: { command: bin("bun"), args: [] as Array<string> },
  deno: { command: bin("deno"), args: ["run", "-A"] }
}
const available = Object.fromEntries(
  Object.entries(runtimes).map(([name, runtime]) => [name, name === "node" || runtimeAvailable(runtime.command)])
) as Record<keyof typeof runtimes, boolean>
for (const [name, present] of Object.entries(available)) {
  if (!present) console.warn(`Embedding example SKIPPED on ${name}: ${name} is not installed (npm ci installs it)`)
}

let work = ""
let app = ""
let files: Array<string> = []

/** Links `name` from this checkout's node_modules into the project's, as an install would place it. */
const link = (name: string) => {
  const target = join(app, "node_modules", name)
  if (existsSync(target)) return
  mkdirSync(dirname(target), { recursive: true })
  symlinkSync(join(root, "node_modules", name), target)
}

/** Copies an example into the project and runs it to completion with `runtime`. */
const runScript = (runtime: keyof typeof runtimes, example: string) => {
  const file = `${example}.mjs`
  copyFileSync(join(root, "examples", example, "main.mjs"), join(app, file))
  const { command, args } = runtimes[runtime]
  return spawnSync(command, [...args, file], { cwd: app, encoding: "utf8", env: runtimeEnv(), timeout: 60_000 })
}

/**
 * Starts a host example with `runtime`, waits for its `listening on` line, and answers its base URL
 * and process.
 */
const startHost = (
  runtime: keyof typeof runtimes,
  example: string
): Promise<{ readonly url: string; readonly child: ChildProcess }> => {
  const file = `${example}.mjs`
  copyFileSync(join(root, "examples", example, "main.mjs"), join(app, file))
  const { command, args } = runtimes[runtime]
  const child = spawn(command, [...args, file], {
    cwd: app,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...runtimeEnv(),
      PORT: "0",
      ACCORD_MASTER_KEY: randomBytes(32).toString("base64"),
      ACCORD_DATA_DIR: join(work, `data-${runtime}-${example}`)
    }
  })
  let output = ""
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => (child.kill("SIGKILL"), reject(new Error(`${example}: no listening line\n${output}`))),
      60_000
    )
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match !== null) {
        clearTimeout(timer)
        resolve({ url: match[1]!, child })
      }
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.once("exit", (code) => (clearTimeout(timer), reject(new Error(`${example} exited ${code}\n${output}`))))
  })
}

/** SIGTERM, then the exit code (the examples close the service and exit 0). */
const stop = (child: ChildProcess): Promise<number | null> =>
  new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode)
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000)
    child.once("exit", (code) => (clearTimeout(timer), resolve(code)))
    child.kill("SIGTERM")
  })

beforeAll(() => {
  assert.isTrue(
    existsSync(join(root, "dist", "entry", "engine.js")),
    "dist/ is missing: run `npm run build` first (npm test does)"
  )
  work = mkdtempSync(join(tmpdir(), "accord-embed-"))
  const packed = execFileSync("npm", ["pack", "--silent", "--ignore-scripts", "--pack-destination", work], {
    cwd: root,
    encoding: "utf8"
  })
  const tarball = join(work, packed.trim().split("\n").pop()!)
  files = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" })
    .trim()
    .split("\n")
    .map((path) => path.replace(/^package\//, ""))
  app = join(work, "app")
  mkdirSync(join(app, "node_modules", "accord"), { recursive: true })
  execFileSync("tar", ["-xzf", tarball, "-C", join(app, "node_modules", "accord"), "--strip-components=1"])
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "host", private: true, type: "module" }))
  for (const name of Object.keys(manifest.dependencies)) link(name)
}, 120_000)

afterAll(() => {
  if (work !== "") rmSync(work, { recursive: true, force: true })
})

describe("the packed tarball", () => {
  it("ships the build, README, LICENSE and docs only: no TypeScript source, tests or examples", () => {
    assert.include(files, "dist/entry/engine.js")
    assert.include(files, "dist/entry/engine.d.ts")
    assert.include(files, "README.md")
    assert.include(files, "LICENSE")
    assert.include(files, "bin/accord.mjs")
    const outside = files.filter(
      (path) => !/^(dist\/|bin\/|docs\/)/.test(path) && !["README.md", "LICENSE", "package.json"].includes(path)
    )
    assert.deepStrictEqual(outside, [])
    assert.deepStrictEqual(
      files.filter((path) => path.endsWith(".ts") && !path.endsWith(".d.ts")),
      []
    )
    assert.deepStrictEqual(
      files.filter((path) => path.startsWith("dist/examples/") || path.startsWith("dist/test")),
      []
    )
  })

  it("every export points at a built file in the tarball, its types beside it", () => {
    const packed = JSON.parse(readFileSync(join(app, "node_modules", "accord", "package.json"), "utf8")) as {
      exports: Record<string, string | { types: string; import: string }>
    }
    for (const [entry, target] of Object.entries(packed.exports)) {
      if (typeof target === "string") continue
      assert.include(files, target.import.replace(/^\.\//, ""), entry)
      assert.include(files, target.types.replace(/^\.\//, ""), entry)
    }
  })
})

describe("with only the package's dependencies installed", () => {
  for (const runtime of Object.keys(runtimes) as Array<keyof typeof runtimes>) {
    it.skipIf(!available[runtime])(`imports every light entry point on ${runtime}: none loads an optional peer`, () => {
      const file = "light-entries.mjs"
      writeFileSync(
        join(app, file),
        `${lightEntries.map((entry) => `await import("accord/${entry}")`).join("\n")}\nconsole.log("ok")\n`
      )
      const { command, args } = runtimes[runtime]
      const result = spawnSync(command, [...args, file], { cwd: app, encoding: "utf8", env: runtimeEnv() })
      assert.strictEqual(result.status, 0, `${result.stdout}\n${result.stderr}`)
      assert.strictEqual(result.stdout.trim(), "ok")
    })

    it.skipIf(!available[runtime])(`runs the engine example (examples/embed-engine) on ${runtime}`, () => {
      const result = runScript(runtime, "embed-engine")
      assert.strictEqual(result.status, 0, `${result.stdout}\n${result.stderr}`)
      const answer = JSON.parse(result.stdout.trim().split("\n").pop()!)
      assert.deepStrictEqual(answer, { workspaceCreated: true, adminKey: "created", ingestKeyFound: true })
    })
  }
})

describe("inside existing host applications", () => {
  beforeAll(() => {
    for (const name of [...serverPeers, ...hosts]) link(name)
  })

  for (const [runtime, example] of (Object.keys(runtimes) as Array<keyof typeof runtimes>).flatMap((runtime) =>
    ["embed-hono", "embed-express"].map((example) => [runtime, example] as const)
  )) {
    it.skipIf(!available[runtime])(
      `${example} on ${runtime}: the service answers under /accord, the host's own routes beside it, one port`,
      async () => {
        const { url, child } = await startHost(runtime, example)
        try {
          const hello = await fetch(`${url}/hello`)
          assert.strictEqual(hello.status, 200)
          assert.deepStrictEqual(await hello.json(), { hello: "from the host app" })
          const ready = await fetch(`${url}/accord/readyz`)
          assert.strictEqual(ready.status, 200, await ready.text())
          // The service's own answers: a problem document for a route it does not have …
          const unknown = await fetch(`${url}/accord/no-such-route`)
          assert.strictEqual(unknown.status, 404)
          assert.match(unknown.headers.get("content-type") ?? "", /application\/problem\+json/)
          // … and its authentication on the Direct API, with the request body streamed through.
          const ingest = await fetch(`${url}/accord/api/events/ingest`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ event_name: "seat_added" })
          })
          assert.strictEqual(ingest.status, 401, await ingest.text())
        } finally {
          assert.strictEqual(await stop(child), 0)
        }
      }
    )
  }

  for (const runtime of Object.keys(runtimes) as Array<keyof typeof runtimes>) {
    it.skipIf(!available[runtime])(
      `embed-kit-express on ${runtime}: the kit answers the service's signed requests on the host's route`,
      async () => {
        const { url, child } = await startHost(runtime, "embed-kit-express")
        try {
          const hello = await fetch(`${url}/hello`)
          assert.strictEqual(hello.status, 200)
          // An unsigned execution request: refused by the kit's verification, before anything is claimed.
          const unsigned = await fetch(`${url}/accord/actions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ type: "service.customer_action.execute" })
          })
          assert.strictEqual(unsigned.status, 401, await unsigned.clone().text())
          assert.isString(((await unsigned.json()) as { error?: unknown }).error)
        } finally {
          assert.strictEqual(await stop(child), 0)
        }
      }
    )
  }
})

describe("the accord command from the installed package", () => {
  beforeAll(() => {
    for (const name of [...serverPeers, ...cliPeers]) link(name)
  })

  it("runs compiled with plain node: `accord workspace create` on embedded storage prints the workspace and its administrator key", () => {
    const result = spawnSync(
      process.execPath,
      [join("node_modules", "accord", "bin", "accord.mjs"), "workspace", "create"],
      {
        cwd: app,
        encoding: "utf8",
        env: { ...runtimeEnv(), ACCORD_DATA_DIR: join(work, "data-cli") },
        timeout: 120_000
      }
    )
    assert.strictEqual(result.status, 0, `${result.stdout}\n${result.stderr}`)
    const created = JSON.parse(result.stdout) as { workspaceId: string; adminKey: { scope: string; secret: string } }
    assert.isString(created.workspaceId)
    assert.strictEqual(created.adminKey.scope, "admin")
    assert.match(created.adminKey.secret, /^acc_admin_/)
  })
})
