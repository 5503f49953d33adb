/**
 * The packed package (`npm pack`) installed in another folder: `accord --version` and `accord
 * validate` run through the package's `bin` with plain node.
 *
 * No registry is reached: the tarball is unpacked as `node_modules/accord` (what `npm install
 * ./accord-*.tgz` does) and its dependencies are linked from this checkout's `node_modules`, as
 * an install would provide them: the package's `dependencies` and its optional peers (the CLI's
 * `@effect/cli` and the storage packages, which a CLI user installs beside it); no TypeScript
 * loader. The `bin` link is made as npm makes it, `node_modules/.bin/accord`. The bin runs the
 * build, so `npm run build` comes first (npm test does).
 */
import { assert, describe, it } from "@effect/vitest"
import { execFileSync, spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { vi } from "vitest"
import { cleanEnv, processTestTimeout, root } from "./cli.ts"

vi.setConfig({ testTimeout: processTestTimeout })

const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  version: string
  bin: Record<string, string>
  dependencies: Record<string, string>
  peerDependencies: Record<string, string>
}

describe("npm pack, installed elsewhere", () => {
  it("runs accord --version and accord validate through the bin", () => {
    const work = mkdtempSync(join(tmpdir(), "accord-pack-"))
    const npm = process.platform === "win32" ? "npm.cmd" : "npm"
    const packed = execFileSync(npm, ["pack", "--silent", "--ignore-scripts", "--pack-destination", work], {
      cwd: root,
      encoding: "utf8"
    })
    const tarball = join(work, packed.trim().split("\n").pop()!)

    const app = join(work, "app")
    const modules = join(app, "node_modules")
    mkdirSync(join(modules, "accord"), { recursive: true })
    execFileSync("tar", ["-xzf", tarball, "-C", join(modules, "accord"), "--strip-components=1"])
    for (const name of [...Object.keys(manifest.dependencies), ...Object.keys(manifest.peerDependencies)]) {
      mkdirSync(join(modules, name, ".."), { recursive: true })
      symlinkSync(join(root, "node_modules", name), join(modules, name))
    }
    mkdirSync(join(modules, ".bin"))
    symlinkSync(join("..", "accord", manifest.bin["accord"]!), join(modules, ".bin", "accord"))
    writeFileSync(
      join(app, "event.json"),
      JSON.stringify({
        event_name: "seat_added",
        event_id: "seat_added:1",
        account_id: "acct_1",
        timestamp: "2026-11-20T10:00:00Z"
      })
    )
    writeFileSync(
      join(app, "unsafe.json"),
      JSON.stringify({
        event_name: "seat_added",
        account_id: "acct_1",
        timestamp: "2026-11-20T10:00:00Z",
        properties: { password: "hunter2-hunter2" }
      })
    )

    const accord = (...args: Array<string>) =>
      spawnSync(join(modules, ".bin", "accord"), args, {
        cwd: app,
        encoding: "utf8",
        env: { ...cleanEnv(), NO_COLOR: "1" }
      })
    const version = accord("--version")
    assert.strictEqual(version.status, 0, version.stderr)
    assert.strictEqual(version.stdout.trim(), manifest.version)
    const valid = accord("validate", "event.json", "--source", "direct")
    assert.strictEqual(valid.status, 0, valid.stderr)
    assert.include(valid.stdout, "1 event: 1 valid, 0 refused")
    const refused = accord("validate", "unsafe.json", "--json")
    assert.strictEqual(refused.status, 1, refused.stderr)
    assert.strictEqual(JSON.parse(refused.stdout).events[0].issues[0].path, "properties.password")
    assert.notInclude(refused.stdout, "hunter2")
    rmSync(work, { recursive: true, force: true })
  })
})
