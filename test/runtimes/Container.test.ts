/**
 * The container files, linted (no container engine runs here): the Dockerfile is multi-stage, runs
 * as a non-root user with `node` as PID 1 (exec-form CMD), has a healthcheck on /readyz and bakes
 * in no secret; .dockerignore keeps local data and keys out; compose.yaml runs PostgreSQL, Accord and
 * the reference backend with every secret taken from the environment. The image builds with the
 * package's own `npm run build` on a supported Node LTS line; the build's dist/ is then run here
 * beside only the packages the image's runtime stage installs, as the image would start it: it
 * becomes ready, passes the image's healthcheck command, and stops on SIGTERM with `stopped`.
 */
import { execFile, spawn } from "node:child_process"
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
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
  it("is multi-stage: the last stage copies only the build's dist/, never the whole context", () => {
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

const sh = (command: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = process.env, cwd = root) =>
  new Promise<{ code: number; output: string }>((resolve) =>
    execFile(command, args, { cwd, env, timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, output: stdout + stderr })
    )
  )

const build = stages[0]!
const manifest = JSON.parse(read("package.json")) as {
  dependencies: Record<string, string>
  peerDependencies: Record<string, string>
}

describe("the image's build", () => {
  it("is the package's own build (`npm run build`), over every directory tsconfig.build.json compiles", () => {
    const runs = build.filter((instruction) => instruction.keyword === "RUN").map((instruction) => instruction.args)
    assert.include(runs, "npm run build")
    assert.isFalse(
      runs.some((args) => /esbuild|tsx/.test(args)),
      "the image runs what the package ships: no second build"
    )
    const copied = build
      .filter((instruction) => instruction.keyword === "COPY")
      .flatMap((instruction) => instruction.args.split(/\s+/).slice(0, -1))
    assert.includeMembers(copied, ["tsconfig.json", "tsconfig.build.json", "scripts/finish-build.mjs"])
    const { include } = JSON.parse(read("tsconfig.build.json")) as { include: Array<string> }
    assert.includeMembers(copied, include)
  })

  it("uses a supported Node LTS line that satisfies package.json `engines`", () => {
    const arg = dockerfile.find(
      (instruction) => instruction.keyword === "ARG" && instruction.args.startsWith("NODE_VERSION=")
    )
    assert.isDefined(arg)
    const major = Number(arg!.args.slice("NODE_VERSION=".length))
    // Even majors are the LTS lines; 20 reached its end of life in April 2026.
    assert.strictEqual(major % 2, 0, `Node ${major} is not an LTS line`)
    assert.isAtLeast(major, 22)
    // The image's major satisfies one alternative of the range (`^20.19.0 || >=22.12.0`).
    const engines = JSON.parse(read("package.json")).engines.node as string
    const satisfied = engines.split("||").some((alternative) => {
      const [, operator, wanted] = /^\s*(\^|>=)(\d+)\./.exec(alternative) ?? []
      return operator === "^" ? Number(wanted) === major : operator === ">=" && Number(wanted) <= major
    })
    assert.isTrue(satisfied, `Node ${major} is not in engines ${engines}`)
    for (const from of dockerfile.filter((instruction) => instruction.keyword === "FROM")) {
      assert.match(from.args, /^node:\$\{NODE_VERSION\}-/, from.args)
    }
  })
})

describe("the image's start, run here from dist/", () => {
  it("with only the runtime stage's packages: the server starts, is healthy and stops on SIGTERM; the reference backend and the rotation command load", async () => {
    for (const entry of [
      "dist/runtimes/node/main.js",
      "dist/examples/customer-backend/main.js",
      "dist/runtimes/maintenance/rotate-master-key.js"
    ]) {
      assert.isTrue(existsSync(join(root, entry)), `${entry} is missing: run \`npm run build\` first (npm test does)`)
    }
    // The runtime stage installs `dependencies` and the optional peers its RUN names: an image of
    // those packages and dist/ alone. dist/ is copied (not linked), so its imports resolve from
    // this directory's node_modules only, as in the image.
    const installRun = runtimeOf("RUN")
      .map((instruction) => instruction.args)
      .join(" ")
    const peers = Object.keys(manifest.peerDependencies).filter((name) => installRun.includes(`'${name}'`))
    const image = mkdtempSync(join(tmpdir(), "accord-image-"))
    try {
      cpSync(join(root, "dist"), join(image, "dist"), { recursive: true })
      copyFileSync(join(root, "package.json"), join(image, "package.json"))
      for (const name of [...Object.keys(manifest.dependencies), ...peers]) {
        mkdirSync(dirname(join(image, "node_modules", name)), { recursive: true })
        symlinkSync(join(root, "node_modules", name), join(image, "node_modules", name))
      }

      // The reference backend (compose.yaml's command) and the rotation command, loaded without running.
      const loaded = await sh(
        "node",
        [
          "--input-type=module",
          "-e",
          'await import("./dist/examples/customer-backend/Backend.js"); await import("./dist/runtimes/maintenance/RotateMasterKey.js")'
        ],
        envWithoutDatabase(),
        image
      )
      assert.strictEqual(loaded.code, 0, loaded.output)

      // The CMD, run from there. An OTLP endpoint nobody answers makes the server load the exporters
      // it imports only when one is configured.
      const [, ...cmd] = execForm(runtimeOf("CMD")[0]!.args)!
      const port = await freePort()
      const env = {
        ...envWithoutDatabase(),
        NO_COLOR: "1",
        HOST: "127.0.0.1",
        PORT: String(port),
        ACCORD_DATA_DIR: "memory://",
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await freePort()}`
      }
      const child = spawn("node", cmd, { cwd: image, env, stdio: ["ignore", "pipe", "pipe"] })
      let output = ""
      child.stdout.on("data", (chunk) => (output += chunk))
      child.stderr.on("data", (chunk) => (output += chunk))
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
      const healthcheck = execForm(/CMD\s+(\[.*\])\s*$/.exec(runtimeOf("HEALTHCHECK")[0]!.args)![1]!)!
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
        const healthy = await sh(healthcheck[0]!, healthcheck.slice(1), env)
        assert.strictEqual(healthy.code, 0, healthy.output)
        child.kill("SIGTERM")
        assert.strictEqual(await exited, 0, output)
        assert.match(output.trim().split("\n").at(-1)!, /stopped/)
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
      }
      const unhealthy = await sh("node", healthcheck.slice(1), env)
      assert.notStrictEqual(unhealthy.code, 0, "the healthcheck must fail when nothing answers")
    } finally {
      rmSync(image, { recursive: true, force: true })
    }
  }, 300_000)
})
