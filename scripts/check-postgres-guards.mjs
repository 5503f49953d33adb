// The suite passes without PostgreSQL: every test that needs it is declared with a guard that
// skips it when `DATABASE_URL` is unset (`skipIf`/`runIf` on `databaseUrl` or on a storage
// variant's `available`), so a machine without PostgreSQL skips it instead of failing. Checked
// here from the source of test/**, since with `DATABASE_URL` set (CI) an unguarded test passes:
//  - a PostgreSQL reference is `databaseUrl` used as a value (not in a test of whether it is set),
//    `process.env.DATABASE_URL`, or a storage variant that may be PostgreSQL (a loop over
//    `storageVariants`/`sqlVariants`, `storageVariants.find(…)`, a parameter typed as a variant)
//    used for more than its `name` or `available`;
//  - one inside a test or suite declaration (`it`, `test`, `describe`, `layer`, and their
//    modifiers) needs a guard on that declaration or an enclosing one;
//  - one in a helper function outside any declaration is judged where its tests are declared.
// Usage: node scripts/check-postgres-guards.mjs [dir…] (default test).
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import ts from "typescript"

const roots = process.argv.length > 2 ? process.argv.slice(2) : ["test"]

const files = []
const walk = (path) => {
  if (statSync(path).isDirectory()) {
    for (const name of readdirSync(path)) if (name !== "node_modules") walk(join(path, name))
  } else if (path.endsWith(".ts")) files.push(path)
}
for (const root of roots) walk(root)

const declarationRoots = new Set(["it", "test", "describe", "suite", "layer"])
/** Whether a guard's condition is about PostgreSQL being available. */
const guardsPostgres = (text) => /databaseUrl|DATABASE_URL|\.available\b|available\(/.test(text)

/** The identifier a callee chain starts from (`it.scopedLive.skipIf(x)` → `it`), and its guards. */
const calleeChain = (callee) => {
  const guards = []
  let node = callee
  for (;;) {
    if (ts.isCallExpression(node)) {
      const inner = node.expression
      if (ts.isPropertyAccessExpression(inner) && (inner.name.text === "skipIf" || inner.name.text === "runIf"))
        guards.push(node.arguments.map((a) => a.getText()).join(","))
      node = inner
    } else if (ts.isPropertyAccessExpression(node)) node = node.expression
    else break
  }
  return { root: ts.isIdentifier(node) ? node.text : undefined, guards }
}

/** A test or suite declaration: `{ guarded }`, or undefined for any other call. */
const declaration = (call) => {
  const { root, guards } = calleeChain(call.expression)
  if (root === undefined || !declarationRoots.has(root)) return undefined
  // `layer(l)(it => …)`: the declaration is the outer call; `it.skipIf(c)("name", …)` likewise
  return { guarded: guards.some(guardsPostgres) }
}

const isVariantSource = (text) => /\bstorageVariants\b|\bsqlVariants\b/.test(text)
/** Whether an iterable or lookup of variants leaves PostgreSQL out. */
const excludesPostgres = (text) =>
  /name\s*!==\s*"postgres"|name\s*===\s*"(memory|pglite)"|\.available\b/.test(text) ||
  /storageVariants\[(0|1)\]/.test(text)

const problems = []

for (const file of files) {
  const text = readFileSync(file, "utf8")
  if (!/databaseUrl|DATABASE_URL|storageVariants|sqlVariants|StorageVariant/.test(text)) continue
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  // Where a name is a variant that may be PostgreSQL (or one that is not): the innermost scope wins.
  const scopes = []
  const scopeOf = (node) => {
    let at = node.parent
    while (at !== undefined && !ts.isBlock(at) && !ts.isSourceFile(at) && !ts.isFunctionLike(at)) at = at.parent
    return at ?? source
  }

  const collect = (node) => {
    if (ts.isForOfStatement(node) && ts.isVariableDeclarationList(node.initializer)) {
      const iterable = node.expression.getText()
      if (isVariantSource(iterable))
        for (const d of node.initializer.declarations)
          if (ts.isIdentifier(d.name))
            scopes.push({ name: d.name.text, scope: node, postgres: !excludesPostgres(iterable) })
    }
    if (ts.isVariableDeclaration(node) && node.initializer !== undefined && ts.isIdentifier(node.name)) {
      // storageVariants.find(…), storageVariants[i], sqlVariants[i]
      const init = node.initializer.getText()
      if (/^(storageVariants|sqlVariants)\s*(\.find\(|\[)/.test(init))
        scopes.push({ name: node.name.text, scope: scopeOf(node), postgres: !excludesPostgres(init) })
    }
    if (ts.isParameter(node) && ts.isIdentifier(node.name) && node.type !== undefined) {
      if (/storageVariants|StorageVariant/.test(node.type.getText()))
        scopes.push({ name: node.name.text, scope: node.parent, postgres: true })
    }
    ts.forEachChild(node, collect)
  }
  collect(source)

  /** Whether the identifier `node` names a variant that may be PostgreSQL where it stands. */
  const isVariant = (node) => {
    let best
    for (const entry of scopes) {
      if (entry.name !== node.text) continue
      if (node.pos < entry.scope.pos || node.end > entry.scope.end) continue
      if (best === undefined || entry.scope.end - entry.scope.pos < best.scope.end - best.scope.pos) best = entry
    }
    return best?.postgres === true
  }

  /** Whether `node` is a use of PostgreSQL rather than a test of whether it is there. */
  const isReference = (node) => {
    // process.env["DATABASE_URL"]
    if (ts.isStringLiteral(node))
      return (
        node.text === "DATABASE_URL" &&
        ts.isElementAccessExpression(node.parent) &&
        node.parent.expression.getText() === "process.env"
      )
    if (!ts.isIdentifier(node)) return false
    const parent = node.parent
    if (ts.isPropertyAccessExpression(parent) && parent.name === node) {
      // process.env.DATABASE_URL
      return node.text === "DATABASE_URL" && parent.expression.getText() === "process.env"
    }
    if (ts.isImportSpecifier(parent) || ts.isParameter(parent) || ts.isVariableDeclaration(parent)) return false
    if (ts.isPropertyAssignment(parent) && parent.name === node) return false
    if (node.text === "databaseUrl") {
      if (ts.isPrefixUnaryExpression(parent)) return false
      if (ts.isBinaryExpression(parent) && /undefined/.test(parent.getText())) return false
      if (ts.isIfStatement(parent) && parent.expression === node) return false
      if (ts.isConditionalExpression(parent) && parent.condition === node) return false
      return true
    }
    if (isVariant(node)) {
      if (ts.isPropertyAccessExpression(parent) && parent.expression === node)
        return parent.name.text !== "name" && parent.name.text !== "available"
      return !ts.isForOfStatement(parent)
    }
    return false
  }

  const visit = (node) => {
    if (isReference(node)) {
      let inDeclaration = false
      let guarded = false
      for (let at = node; at.parent !== undefined && !guarded; at = at.parent) {
        const parent = at.parent
        // inside the condition of a guard, an `if` or a `?:` about PostgreSQL
        if (ts.isCallExpression(parent) && parent.arguments.includes(at)) {
          const callee = parent.expression
          if (ts.isPropertyAccessExpression(callee) && (callee.name.text === "skipIf" || callee.name.text === "runIf"))
            guarded = true
        }
        const condition = ts.isIfStatement(parent)
          ? parent.expression
          : ts.isConditionalExpression(parent)
            ? parent.condition
            : undefined
        if (condition !== undefined && condition !== at && guardsPostgres(condition.getText())) guarded = true
        if (ts.isCallExpression(parent)) {
          const declared = declaration(parent)
          if (declared !== undefined) {
            inDeclaration = true
            if (declared.guarded) guarded = true
          }
        }
      }
      if (inDeclaration && !guarded) {
        const { line } = source.getLineAndCharacterOfPosition(node.getStart())
        problems.push(
          `${relative(".", file)}:${line + 1}: \`${node.text}\` in \`${node.parent.getText().slice(0, 60)}\` needs PostgreSQL in a test with no guard`
        )
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
}

if (problems.length > 0) {
  console.error(
    `check:postgres-guards: ${problems.length} use(s) of PostgreSQL in a test that runs without DATABASE_URL; ` +
      "declare it with .skipIf(databaseUrl === undefined) or .skipIf(!variant.available):"
  )
  for (const problem of problems) console.error(`  ${problem}`)
  process.exit(1)
}
console.log(`check:postgres-guards: every PostgreSQL test in ${roots.join(", ")} is guarded`)
