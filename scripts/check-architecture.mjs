// docs/architecture.md names, for each rule and concept, its one home (a module and an exported
// symbol) and the test that pins it. Every Markdown table there whose header has a `Module` column
// is read: each module file, each symbol (exported from that module) and each test file named in a
// row must exist, so the map cannot drift from the code. A cell of `—` names nothing.
import { existsSync, readFileSync } from "node:fs"

const doc = "docs/architecture.md"
const lines = readFileSync(doc, "utf8").split("\n")

const cellsOf = (line) =>
  line
    .trim()
    .replace(/^\|/, "")
    .replace(/\|$/, "")
    .split("|")
    .map((cell) => cell.trim())
const isDivider = (line) => /^\|[\s:|-]+\|$/.test(line.trim())
const codeIn = (cell) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1])
const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

const sources = new Map()
const exportsSymbol = (module, symbol) => {
  if (!sources.has(module)) sources.set(module, readFileSync(module, "utf8"))
  const name = escapeRegExp(symbol)
  return (
    new RegExp(
      `export\\s+(?:declare\\s+)?(?:async\\s+)?(?:const|let|var|function\\*?|class|interface|type|enum|namespace)\\s+${name}\\b`
    ).test(sources.get(module)) ||
    new RegExp(`export\\s*(?:type\\s*)?\\{[^}]*\\b${name}\\b[^}]*\\}`).test(sources.get(module))
  )
}

const problems = []
let rows = 0
for (let i = 0; i < lines.length - 1; i++) {
  if (!lines[i].trim().startsWith("|") || !isDivider(lines[i + 1])) continue
  const header = cellsOf(lines[i])
  const column = (name) => header.indexOf(name)
  const [moduleAt, symbolAt, testAt] = [column("Module"), column("Symbol"), column("Test")]
  if (moduleAt < 0) continue
  for (let j = i + 2; j < lines.length && lines[j].trim().startsWith("|"); j++) {
    const cells = cellsOf(lines[j])
    const where = `${doc}:${j + 1}`
    const [module] = codeIn(cells[moduleAt] ?? "")
    rows++
    if (module === undefined) {
      problems.push(`${where}: no module named`)
      continue
    }
    if (!existsSync(module)) {
      problems.push(`${where}: module ${module} does not exist`)
    } else if (symbolAt >= 0) {
      for (const symbol of codeIn(cells[symbolAt] ?? "")) {
        if (!exportsSymbol(module, symbol)) problems.push(`${where}: ${module} does not export ${symbol}`)
      }
    }
    if (testAt >= 0) {
      for (const test of codeIn(cells[testAt] ?? "")) {
        if (!existsSync(test)) problems.push(`${where}: test ${test} does not exist`)
      }
    }
  }
}

if (rows === 0) problems.push(`${doc}: no table with a Module column found`)
if (problems.length > 0) {
  console.error(
    `check:architecture: ${problems.length} problem(s) in ${doc}:\n${problems.map((p) => `  ${p}`).join("\n")}`
  )
  process.exit(1)
}
console.log(`check:architecture: ${rows} rows of ${doc}: every module, exported symbol and test exists`)
