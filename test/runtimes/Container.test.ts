/**
 * The container files, linted (no container engine runs here): the Dockerfile is multi-stage, runs
 * as a non-root user with `node` as PID 1 (exec-form CMD), has a healthcheck on /readyz and bakes
 * in no secret; .dockerignore keeps local data and keys out; compose.yaml runs PostgreSQL, Accord and
 * the reference backend with every secret taken from the environment. Then the Dockerfile's own
 * bundle command is run here and the bundled server is started as the image would start it: it
 * becomes ready, passes the image's healthcheck command, and stops on SIGTERM with `stopped`.
 */
import { execFile, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import { readdir, readFile, rm } from "node:fs/promises"
import { builtinModules } from "node:module"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { parse } from "yaml"
import { freePort, sleep } from "../support/ports.ts"
import { envWithoutDatabase } from "../support/postgres.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))
const read = (name: string) => readFileSync(join(root, name), "utf8")

interface Instruction {
  readonly keyword: string
  readonly args: string
}

/** Dockerfile instructions: comments dropped, continuation lines joined. */
const instructions = (text: string): Array<Instruction> => {
  const joined = text
    .split("\n")
    .filter((line) => !/^\s*#/.test(line))
    .join("\n")
    .replace(/\\\n/g, " ")
  return joined
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .map((line) => {
      const [keyword, ...rest] = line.split(/\s+/)
      return { keyword: keyword!.toUpperCase(), args: rest.join(" ") }
    })
}

/** An exec-form argument list (`["node", "x"]`), or undefined for the shell form. */
const execForm = (args: string): Array<string> | undefined => {
  if (!args.trim().startsWith("[")) return undefined
  const parsed: unknown = JSON.parse(args)
  return Array.isArray(parsed) && parsed.every((item) => typeof item === "string") ? parsed : undefined
}

const secretName = /MASTER_KEY|ADMIN_KEY|SECRET|PASSWORD|TOKEN|DATABASE_URL|API_KEY/

const dockerfile = instructions(read("Dockerfile"))
const stages = dockerfile.reduce<Array<Array<Instruction>>>((all, instruction) => {
  if (instruction.keyword === "FROM") all.push([])
  all[all.length - 1]?.push(instruction)
  return all
}, [])
const runtime = stages[stages.length - 1]!
const runtimeOf = (keyword: string) => runtime.filter((instruction) => instruction.keyword === keyword)

describe("Dockerfile", () => {
  it("is multi-stage: the last stage copies only the build's bundles, never the whole context", () => {
    assert.isAtLeast(stages.length, 2)
    const copies = runtimeOf("COPY").map((instruction) => instruction.args)
    assert.include(copies, "--from=build /app/dist ./dist")
    for (const copy of copies) assert.notMatch(copy, /^\.\s|^\.\/?\s+\./, copy)
  })

  it("runs as a non-root user, set before CMD", () => {
    const users = runtimeOf("USER")
    assert.strictEqual(users.length, 1)
    assert.notMatch(users[0]!.args, /^(root|0)(:|$)/)
    assert.isBelow(runtime.indexOf(users[0]!), runtime.indexOf(runtimeOf("CMD")[0]!))
  })

  it("starts node itself as PID 1: exec-form CMD, no shell, no npm, no ENTRYPOINT", () => {
    const cmd = runtimeOf("CMD")
    assert.strictEqual(cmd.length, 1)
    const argv = execForm(cmd[0]!.args)
    assert.isDefined(argv, "CMD must be exec form")
    assert.strictEqual(argv![0], "node")
    assert.notInclude(argv!.join(" "), "npm")
    assert.deepStrictEqual(runtimeOf("ENTRYPOINT"), [])
    assert.deepStrictEqual(
      runtimeOf("STOPSIGNAL").map((instruction) => instruction.args),
      ["SIGTERM"]
    )
  })

  it("has a healthcheck on /readyz (exec form)", () => {
    const [healthcheck] = runtimeOf("HEALTHCHECK")
    assert.isDefined(healthcheck)
    const command = /CMD\s+(\[.*\])\s*$/.exec(healthcheck!.args)
    assert.isNotNull(command)
    const argv = execForm(command![1]!)!
    assert.strictEqual(argv[0], "node")
    assert.include(argv.join(" "), "/readyz")
  })

  it("bakes in no secret: no ENV or ARG names one", () => {
    for (const instruction of dockerfile.filter((i) => i.keyword === "ENV" || i.keyword === "ARG")) {
      assert.notMatch(instruction.args, secretName, instruction.args)
    }
  })

  it("listens on all interfaces and keeps data in a volume owned by the user", () => {
    const env = runtimeOf("ENV")
      .map((instruction) => instruction.args)
      .join(" ")
    assert.include(env, "HOST=0.0.0.0")
    assert.include(env, "ACCORD_DATA_DIR=/data")
    assert.include(
      runtimeOf("VOLUME")
        .map((instruction) => instruction.args)
        .join(" "),
      "/data"
    )
    assert.include(
      runtimeOf("RUN")
        .map((instruction) => instruction.args)
        .join(" "),
      "chown node:node /data"
    )
  })
})

describe(".dockerignore", () => {
  it("keeps local data, keys, credentials and node_modules out of the build context", () => {
    const entries = read(".dockerignore")
      .split("\n")
      .map((line) => line.trim())
    for (const entry of [".git", "node_modules", ".accord-data", ".customer-data", "*.key", ".env", ".env.*"]) {
      assert.include(entries, entry)
    }
  })
})

describe("compose.yaml", () => {
  const compose = parse(read("compose.yaml")) as { services: Record<string, any> }

  it("runs PostgreSQL, Accord (built here) and the reference backend", () => {
    assert.includeMembers(Object.keys(compose.services), ["postgres", "accord", "customer-backend"])
    assert.match(compose.services["postgres"].image, /^postgres:15/)
    assert.strictEqual(compose.services["accord"].build, ".")
    assert.deepStrictEqual(compose.services["accord"].depends_on, { postgres: { condition: "service_healthy" } })
    assert.match(compose.services["accord"].environment.DATABASE_URL, /@postgres:5432\/accord$/)
    assert.deepStrictEqual(compose.services["customer-backend"].command, [
      "node",
      "dist/examples/customer-backend/main.js"
    ])
    assert.strictEqual(compose.services["customer-backend"].image, compose.services["accord"].image)
  })

  it("takes every secret from the environment (required, no default), never a literal", () => {
    let seen = 0
    for (const [service, definition] of Object.entries(compose.services)) {
      for (const [name, value] of Object.entries<string>(definition.environment ?? {})) {
        if (!secretName.test(name)) continue
        seen++
        const references = [...String(value).matchAll(/\$\{([A-Z0-9_]+)(:[?-])?[^}]*\}/g)]
        assert.isAbove(references.length, 0, `${service}.${name} must come from the environment`)
        const literal = String(value).replace(/\$\{[^}]*\}/g, "")
        assert.notMatch(literal, /:[^/@]{1,}@/, `${service}.${name} holds a literal credential`)
        for (const reference of references) {
          if (secretName.test(reference[1]!) && reference[1] !== "OTEL_EXPORTER_OTLP_ENDPOINT") {
            assert.isTrue(
              reference[2] === ":?" || (reference[2] === ":-" && reference[0].endsWith(":-}")),
              `${service}.${name}: ${reference[0]}`
            )
          }
        }
      }
    }
    assert.isAtLeast(seen, 7)
  })
})

const sh = (command: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = process.env) =>
  new Promise<{ code: number; output: string }>((resolve) =>
    execFile(command, args, { cwd: root, env, timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, output: stdout + stderr })
    )
  )

describe("the image's build and start commands, run here", () => {
  it("bundles with the Dockerfile's command; the bundle needs only runtime dependencies; the server starts, is healthy and stops on SIGTERM", async () => {
    const build = stages[0]!.find(
      (instruction) => instruction.keyword === "RUN" && instruction.args.includes("esbuild")
    )!
    const outdir = `.container-test-${randomUUID().slice(0, 8)}`
    const argv = build.args.split(/\s+/).map((arg) => (arg === "--outdir=dist" ? `--outdir=${outdir}` : arg))
    assert.include(argv, `--outdir=${outdir}`)
    try {
      // The metafile (an output-only flag) lists every import each bundle leaves external.
      const bundled = await sh(join(root, argv[0]!), [...argv.slice(1), `--metafile=${outdir}/meta.json`])
      assert.strictEqual(bundled.code, 0, bundled.output)

      // The runtime stage installs `dependencies` (`npm ci --omit=dev`) and the optional peers it
      // names (`npm install --no-save …`): every package a bundle imports must be one of those.
      const installRun = runtimeOf("RUN")
        .map((instruction) => instruction.args)
        .join(" ")
      const peers = Object.keys(JSON.parse(read("package.json")).peerDependencies).filter((name) =>
        installRun.includes(`'${name}'`)
      )
      const dependencies = [...Object.keys(JSON.parse(read("package.json")).dependencies), ...peers]
      const files = (await readdir(join(root, outdir), { recursive: true })).filter((file) => file.endsWith(".js"))
      assert.includeMembers(
        files.map((file) => file.replaceAll("\\", "/")),
        ["runtimes/node/main.js", "examples/customer-backend/main.js", "runtimes/maintenance/rotate-master-key.js"]
      )
      const meta = JSON.parse(await readFile(join(root, outdir, "meta.json"), "utf8")) as {
        outputs: Record<string, { imports: Array<{ path: string; external?: boolean }> }>
      }
      const externals = new Set(
        Object.values(meta.outputs).flatMap((output) => output.imports.filter((i) => i.external).map((i) => i.path))
      )
      assert.isAbove(externals.size, 0)
      for (const specifier of externals) {
        if (specifier.startsWith("node:") || builtinModules.includes(specifier)) continue
        const name = specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!
        assert.include(dependencies, name, `a bundle imports ${specifier}`)
      }

      // The CMD's own node flags, then its entry, run from the bundle just built.
      const [, ...cmd] = execForm(runtimeOf("CMD")[0]!.args)!
      const port = await freePort()
      const env = {
        ...envWithoutDatabase(),
        NO_COLOR: "1",
        HOST: "127.0.0.1",
        PORT: String(port),
        ACCORD_DATA_DIR: "memory://"
      }
      const child = spawn("node", [...cmd.slice(0, -1), cmd.at(-1)!.replace(/^dist\//, `${outdir}/`)], {
        cwd: root,
        env,
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout.on("data", (chunk) => (output += chunk))
      child.stderr.on("data", (chunk) => (output += chunk))
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
      try {
        // Generous: an embedded start on a loaded machine can take a minute or more.
        const deadline = Date.now() + 150_000
        while (
          !(await fetch(`http://127.0.0.1:${port}/readyz`).then(
            (r) => r.ok,
            () => false
          ))
        ) {
          assert.isBelow(Date.now(), deadline, output)
          assert.isNull(child.exitCode, output)
          await sleep(200)
        }
        const healthcheck = execForm(/CMD\s+(\[.*\])\s*$/.exec(runtimeOf("HEALTHCHECK")[0]!.args)![1]!)!
        const healthy = await sh(healthcheck[0]!, healthcheck.slice(1), env)
        assert.strictEqual(healthy.code, 0, healthy.output)
        child.kill("SIGTERM")
        assert.strictEqual(await exited, 0, output)
        assert.match(output.trim().split("\n").at(-1)!, /stopped/)
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
      }
      const unhealthy = await sh(
        "node",
        execForm(/CMD\s+(\[.*\])\s*$/.exec(runtimeOf("HEALTHCHECK")[0]!.args)![1]!)!.slice(1),
        env
      )
      assert.notStrictEqual(unhealthy.code, 0, "the healthcheck must fail when nothing answers")
    } finally {
      await rm(join(root, outdir), { recursive: true, force: true })
    }
  }, 300_000)
})
