/**
 * The CLI's colour: ANSI escapes only for a person at a terminal. With `NO_COLOR` set (to anything
 * but the empty string), or on a stream that is not a TTY (a pipe, a file), help and usage errors
 * are plain text. Run in process: the streams' `isTTY` is set for the run and restored after.
 */
import { assert, describe, it } from "@effect/vitest"
import { runCliInProcess } from "./cli.ts"

const ansiEscape = "\u001b["

/** Runs the CLI in process with stdout and stderr reporting `isTTY` as given. */
const runAs = async (
  args: ReadonlyArray<string>,
  options: { readonly tty: boolean; readonly noColor: string | undefined }
) => {
  const streams = [process.stdout, process.stderr] as const
  const saved = streams.map((stream) => Object.getOwnPropertyDescriptor(stream, "isTTY"))
  for (const stream of streams) Object.defineProperty(stream, "isTTY", { value: options.tty, configurable: true })
  try {
    // runCliInProcess sets NO_COLOR=1 unless told otherwise; the empty string counts as unset
    return await runCliInProcess(args, { env: { NO_COLOR: options.noColor ?? "" } })
  } finally {
    streams.forEach((stream, i) => {
      const descriptor = saved[i]
      if (descriptor === undefined) delete (stream as { isTTY?: boolean }).isTTY
      else Object.defineProperty(stream, "isTTY", descriptor)
    })
  }
}

describe("accord output colour (in process)", () => {
  it("on a terminal without NO_COLOR, help is styled (the case the others take the escapes out of)", async () => {
    const help = await runAs(["--help"], { tty: true, noColor: undefined })
    assert.strictEqual(help.code, 0)
    assert.include(help.stdout, ansiEscape)
  })

  it("NO_COLOR=1 on a terminal: help and a usage error carry no escape", async () => {
    const help = await runAs(["--help"], { tty: true, noColor: "1" })
    assert.strictEqual(help.code, 0)
    assert.include(help.stdout, "USAGE")
    assert.notInclude(help.stdout + help.stderr, ansiEscape)
    const usage = await runAs(["keys", "create"], { tty: true, noColor: "1" })
    assert.strictEqual(usage.code, 2)
    assert.include(usage.stdout + usage.stderr, "--scope")
    assert.notInclude(usage.stdout + usage.stderr, ansiEscape)
  })

  it("not a TTY (piped), without NO_COLOR: help and a usage error carry no escape", async () => {
    const help = await runAs(["--help"], { tty: false, noColor: undefined })
    assert.strictEqual(help.code, 0)
    assert.include(help.stdout, "USAGE")
    assert.notInclude(help.stdout + help.stderr, ansiEscape)
    const usage = await runAs(["keys", "create"], { tty: false, noColor: undefined })
    assert.strictEqual(usage.code, 2)
    assert.notInclude(usage.stdout + usage.stderr, ansiEscape)
  })
})
