// The public surface is complete: every type of this repository that an exported signature of an
// entry point (entry/*.ts, the package.json `exports`) reaches is itself exported by some entry
// point, so an embedder can name every type they are handed or must provide. Reached means: named
// in the declared types of an exported symbol (parameters, results, properties, heritage, type
// arguments), or, for a symbol without a declared type, found in its inferred type. Types from
// other packages (effect, @effect/*) are the embedder's to import from there.
import { readdirSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import ts from "typescript"

const root = process.cwd()
const entryDir = resolve(root, "entry")
const walk = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )
const entries = walk(entryDir)

const config = ts.getParsedCommandLineOfConfigFile(
  join(root, "tsconfig.json"),
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} }
)
const program = ts.createProgram(entries, { ...config.options, noEmit: true })
const checker = program.getTypeChecker()

const ours = (declaration) => {
  const file = declaration.getSourceFile().fileName
  return file.startsWith(root + "/") && !file.includes("/node_modules/") && !file.endsWith(".d.ts")
}
const resolveAlias = (symbol) => (symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol)
const isModule = (symbol) =>
  (symbol.flags & ts.SymbolFlags.ValueModule) !== 0 &&
  (symbol.declarations ?? []).some((declaration) => ts.isSourceFile(declaration))

// 1. The public symbols: what the entries export, namespaces (`export * as X`) opened.
const publicSymbols = new Map() // symbol -> "entry: Path.To.Name"
const exported = (moduleSymbol, path, entry) => {
  for (const raw of checker.getExportsOfModule(moduleSymbol)) {
    const symbol = resolveAlias(raw)
    const name = path === "" ? raw.name : `${path}.${raw.name}`
    if (isModule(symbol)) exported(symbol, name, entry)
    else if (!publicSymbols.has(symbol)) publicSymbols.set(symbol, `${entry}: ${name}`)
  }
}
for (const file of entries) {
  const source = program.getSourceFile(file)
  const moduleSymbol = checker.getSymbolAtLocation(source)
  if (moduleSymbol !== undefined) exported(moduleSymbol, "", `accord/${relative(entryDir, file).replace(/\.ts$/, "")}`)
}

// 2. What each public symbol reaches.
const adopt = (symbol, from) => {
  const resolved = resolveAlias(symbol)
  if ((resolved.declarations ?? []).some(ours) && !publicSymbols.has(resolved)) publicSymbols.set(resolved, from)
}
const problems = new Map() // missing symbol -> first place it was reached from
const reach = (symbol, from) => {
  if (symbol === undefined) return
  symbol = resolveAlias(symbol)
  if (symbol.flags & ts.SymbolFlags.TypeParameter) return
  const declarations = symbol.declarations ?? []
  if (declarations.length === 0 || !declarations.some(ours) || isModule(symbol)) return
  // A member (property, method, enum member) is reached through its parent; check the parent.
  const parent = symbol.parent
  if (
    parent !== undefined &&
    !isModule(parent) &&
    symbol.flags & (ts.SymbolFlags.Property | ts.SymbolFlags.Method | ts.SymbolFlags.EnumMember)
  )
    return
  if (publicSymbols.has(symbol)) return
  if (!problems.has(symbol)) problems.set(symbol, from)
}

const walkTypeNodes = (node, from) => {
  const visit = (current) => {
    if (ts.isTypeReferenceNode(current)) reach(checker.getSymbolAtLocation(current.typeName), from)
    else if (ts.isExpressionWithTypeArguments(current)) {
      // `export interface Doors extends internal.Doors {}`: a public interface over an internal one
      // publishes it (its members are documented through the public one), so it is walked too.
      const base = checker.getSymbolAtLocation(current.expression)
      if (base !== undefined && ts.isInterfaceDeclaration(current.parent.parent)) adopt(base, from)
      else reach(base, from)
    } else if (ts.isTypeQueryNode(current)) reach(checker.getSymbolAtLocation(current.exprName), from)
    else if (ts.isImportTypeNode(current) && current.qualifier !== undefined)
      reach(checker.getSymbolAtLocation(current.qualifier), from)
    ts.forEachChild(current, (child) => {
      // Implementations are not surface: function bodies, initializers of annotated variables.
      if (ts.isBlock(child)) return
      if (ts.isArrowFunction(current) && child === current.body) return
      if (
        (ts.isVariableDeclaration(current) || ts.isPropertyDeclaration(current)) &&
        child === current.initializer &&
        current.type !== undefined
      )
        return
      if (ts.isVariableDeclaration(current) && child === current.initializer) return
      visit(child)
    })
  }
  visit(node)
}

const seenTypes = new Set()
const walkType = (type, from, depth) => {
  if (depth > 6 || seenTypes.has(type)) return
  seenTypes.add(type)
  const symbol = type.aliasSymbol ?? type.getSymbol()
  const external = symbol !== undefined && !(symbol.declarations ?? []).some(ours)
  if (type.aliasSymbol !== undefined) reach(type.aliasSymbol, from)
  else if (symbol !== undefined && !symbol.name.startsWith("__")) reach(symbol, from)
  for (const argument of type.aliasTypeArguments ?? []) walkType(argument, from, depth + 1)
  if (type.flags & ts.TypeFlags.Object && type.objectFlags & ts.ObjectFlags.Reference)
    for (const argument of checker.getTypeArguments(type)) walkType(argument, from, depth + 1)
  if (type.isUnionOrIntersection()) for (const part of type.types) walkType(part, from, depth + 1)
  if (external) return
  // An anonymous type of ours (an object literal, a function type): what its members reach.
  if (symbol === undefined || symbol.name.startsWith("__")) {
    for (const signature of [...type.getCallSignatures(), ...type.getConstructSignatures()]) {
      for (const parameter of signature.getParameters()) walkType(checker.getTypeOfSymbol(parameter), from, depth + 1)
      walkType(signature.getReturnType(), from, depth + 1)
    }
    if (type.flags & ts.TypeFlags.Object)
      for (const property of type.getProperties()) walkType(checker.getTypeOfSymbol(property), from, depth + 1)
  }
}

for (const [symbol, from] of publicSymbols) {
  for (const declaration of symbol.declarations ?? []) {
    if (!ours(declaration)) continue
    walkTypeNodes(declaration, from)
    const inferred =
      (ts.isVariableDeclaration(declaration) && declaration.type === undefined) ||
      (ts.isFunctionDeclaration(declaration) && declaration.type === undefined)
    if (inferred) walkType(checker.getTypeOfSymbolAtLocation(symbol, declaration), from, 0)
  }
}

if (problems.size > 0) {
  const lines = [...problems].map(([symbol, from]) => {
    const declaration = symbol.declarations[0]
    return `  ${symbol.name} (${relative(root, declaration.getSourceFile().fileName)}), reached from ${from}`
  })
  console.error(
    `entry surface check failed: ${problems.size} type(s) reachable from an exported signature are not exported by any entry point:\n${lines.sort().join("\n")}`
  )
  process.exit(1)
}
console.log(`entry surface check: ${publicSymbols.size} exported symbols reach only exported types`)
