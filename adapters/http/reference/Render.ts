/**
 * The API reference page (`GET /reference`): the OpenAPI document rendered on the server as one
 * HTML page, with a table of contents, every operation's parameters, bodies, answers, problem codes
 * and examples. No script, no inline style: the page is static text under a CSP that allows only
 * this origin's style sheet (`reference/Style.ts`).
 */

type Json = Record<string, any>

const escapeHtml = (text: string): string =>
  text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;")

/** The document's own markdown subset: `code` spans and **bold**, on escaped text; paragraphs on blank lines. */
const inline = (text: string): string =>
  escapeHtml(text)
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")

const prose = (text: string | undefined): string =>
  text === undefined
    ? ""
    : text
        .split(/\n\s*\n/)
        .map((paragraph) => `<p>${inline(paragraph)}</p>`)
        .join("\n")

const methods = ["get", "put", "post", "delete", "patch"] as const

const anchor = (method: string, path: string): string =>
  `${method}-${path}`
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "")

/** Follows a local `$ref` into the document's components. */
const resolve = (document: Json, schema: Json | undefined): Json | undefined => {
  let current = schema
  for (let hops = 0; current !== undefined && typeof current["$ref"] === "string" && hops < 16; hops++) {
    const ref: string = current["$ref"]
    current = ref.startsWith("#/")
      ? ref
          .slice(2)
          .split("/")
          .reduce<any>((node, key) => node?.[key], document)
      : undefined
  }
  return current
}

/** A one-line type: `string`, `integer`, `"a" | "b"`, `array of object`, `string | null`. */
const typeOf = (document: Json, raw: Json | undefined, depth = 0): string => {
  const schema = resolve(document, raw)
  if (schema === undefined || depth > 4) return "any"
  if (Array.isArray(schema["enum"])) return schema["enum"].map((value: unknown) => JSON.stringify(value)).join(" | ")
  if ("const" in schema) return JSON.stringify(schema["const"])
  const union = schema["anyOf"] ?? schema["oneOf"]
  if (Array.isArray(union)) return union.map((member: Json) => typeOf(document, member, depth + 1)).join(" | ")
  if (schema["type"] === "array") return `array of ${typeOf(document, schema["items"], depth + 1)}`
  if (typeof schema["type"] === "string")
    return schema["format"] ? `${schema["type"]} (${schema["format"]})` : schema["type"]
  if (schema["properties"] !== undefined) return "object"
  return "any"
}

/** The fields of an object schema (following arrays, unions of objects and refs), as nested lists. */
const fields = (document: Json, raw: Json | undefined, depth = 0): string => {
  const schema = resolve(document, raw)
  if (schema === undefined || depth > 3) return ""
  if (schema["type"] === "array") return fields(document, schema["items"], depth)
  const union = schema["anyOf"] ?? schema["oneOf"]
  if (Array.isArray(union)) {
    const objects = union
      .map((member: Json) => resolve(document, member))
      .filter((member) => member?.["properties"] !== undefined)
    return objects.length === 1
      ? fields(document, objects[0], depth)
      : objects.map((member) => fields(document, member, depth)).join("")
  }
  const properties: Json | undefined = schema["properties"]
  if (properties === undefined) return ""
  const required: ReadonlyArray<string> = schema["required"] ?? []
  const items = Object.entries(properties).map(([name, property]) => {
    const resolved = resolve(document, property)
    const description = (property as Json)["description"] ?? resolved?.["description"]
    return `<li><code>${escapeHtml(name)}</code> <span class="type">${escapeHtml(typeOf(document, property))}</span>${
      required.includes(name) ? "" : ' <span class="optional">optional</span>'
    }${description ? ` — ${escapeHtml(description)}` : ""}${fields(document, property, depth + 1)}</li>`
  })
  return items.length === 0 ? "" : `<ul class="fields">${items.join("")}</ul>`
}

/** The examples of a schema, or of each member of a union. */
const examplesOf = (document: Json, raw: Json | undefined): ReadonlyArray<unknown> => {
  const schema = resolve(document, raw)
  if (schema === undefined) return []
  if (Array.isArray(schema["examples"])) return schema["examples"]
  const union = schema["anyOf"] ?? schema["oneOf"]
  return Array.isArray(union) ? union.flatMap((member: Json) => examplesOf(document, member)) : []
}

/** The problem codes a problem schema (or a union of them) allows. */
const problemCodes = (document: Json, raw: Json | undefined): ReadonlyArray<string> => {
  const schema = resolve(document, raw)
  if (schema === undefined) return []
  const union = schema["anyOf"] ?? schema["oneOf"]
  if (Array.isArray(union)) return union.flatMap((member: Json) => problemCodes(document, member))
  const code = resolve(document, schema["properties"]?.["code"])
  return Array.isArray(code?.["enum"]) ? code["enum"] : []
}

const example = (value: unknown): string => `<pre class="example">${escapeHtml(JSON.stringify(value, null, 2))}</pre>`

const content = (document: Json, body: Json | undefined, isError: boolean): string =>
  Object.entries<Json>(body?.["content"] ?? {})
    .map(([mediaType, media]) => {
      const codes = isError ? problemCodes(document, media["schema"]) : []
      return `<p class="media"><code>${escapeHtml(mediaType)}</code>${
        codes.length > 0 ? ` — codes: ${codes.map((code) => `<code>${escapeHtml(code)}</code>`).join(", ")}` : ""
      }</p>${isError ? "" : fields(document, media["schema"])}${examplesOf(document, media["schema"])
        .slice(0, isError ? 1 : 2)
        .map(example)
        .join("")}`
    })
    .join("")

const parameters = (document: Json, list: ReadonlyArray<Json>): string =>
  list.length === 0
    ? ""
    : `<h4>Parameters</h4><table><thead><tr><th>Name</th><th>In</th><th>Type</th><th>Description</th></tr></thead><tbody>${list
        .map(
          (p) =>
            `<tr><td><code>${escapeHtml(p["name"])}</code>${p["required"] ? "" : ' <span class="optional">optional</span>'}</td><td>${escapeHtml(
              p["in"]
            )}</td><td>${escapeHtml(typeOf(document, p["schema"]))}</td><td>${inline(p["description"] ?? "")}</td></tr>`
        )
        .join("")}</tbody></table>`

const responseHeaderList = (response: Json): string => {
  const headers = Object.entries<Json>(response["headers"] ?? {})
  return headers.length === 0
    ? ""
    : `<ul class="fields">${headers
        .map(
          ([name, header]) =>
            `<li>header <code>${escapeHtml(name)}</code> — ${inline(header["description"] ?? "")}</li>`
        )
        .join("")}</ul>`
}

const operation = (document: Json, method: string, path: string, op: Json): string => {
  const security =
    (op["security"] ?? []).length > 0
      ? '<p class="security">Needs <code>Authorization: Bearer &lt;API key&gt;</code>.</p>'
      : ""
  const request =
    op["requestBody"] === undefined ? "" : `<h4>Request body</h4>${content(document, op["requestBody"], false)}`
  const responses = Object.entries<Json>(op["responses"] ?? {})
    .map(
      ([status, response]) =>
        `<div class="response status-${escapeHtml(status[0] ?? "")}"><h5><span class="status">${escapeHtml(status)}</span> ${escapeHtml(
          response["description"] ?? ""
        )}</h5>${responseHeaderList(response)}${content(document, response, Number(status) >= 400)}</div>`
    )
    .join("")
  return `<article id="${anchor(method, path)}"><h3><span class="method method-${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h3>
${op["summary"] ? `<p class="summary">${escapeHtml(op["summary"])}</p>` : ""}${prose(op["description"])}${security}${parameters(document, op["parameters"] ?? [])}${request}<h4>Responses</h4>${responses}</article>`
}

/** A path in the table of contents: the admin workspace prefix, shared by most, elided. */
const shortPath = (path: string): string => path.replace(/^\/api\/admin\/v1\/workspaces\/\{workspaceId\}/, "…")

/**
 * The page for `document` (an OpenAPI 3.1 document, as `OpenApi.fromApi` makes it).
 */
export const renderReference = (
  document: Json,
  options: { readonly stylesheet: string; readonly documentPath: string }
): string => {
  const byTag = new Map<string, Array<{ method: string; path: string; op: Json }>>()
  for (const [path, item] of Object.entries<Json>(document["paths"] ?? {})) {
    for (const method of methods) {
      const op = item[method]
      if (op === undefined) continue
      const tag = op["tags"]?.[0] ?? "other"
      byTag.set(tag, [...(byTag.get(tag) ?? []), { method, path, op }])
    }
  }
  const tags: ReadonlyArray<Json> = document["tags"] ?? []
  const describe = (name: string) => tags.find((tag) => tag["name"] === name)?.["description"]
  const toc = [...byTag]
    .map(
      ([tag, ops]) =>
        `<li>${escapeHtml(tag)}<ul>${ops.map(({ method, path }) => `<li><a href="#${anchor(method, path)}">${method.toUpperCase()} ${escapeHtml(shortPath(path))}</a></li>`).join("")}</ul></li>`
    )
    .join("")
  const sections = [...byTag]
    .map(
      ([tag, ops]) =>
        `<section><h2>${escapeHtml(tag)}</h2>${prose(describe(tag))}${ops.map(({ method, op, path }) => operation(document, method, path, op)).join("\n")}</section>`
    )
    .join("\n")
  const info: Json = document["info"] ?? {}
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(info["title"] ?? "API")} reference</title>
<link rel="stylesheet" href="${escapeHtml(options.stylesheet)}">
</head>
<body>
<header><h1>${escapeHtml(info["title"] ?? "API")} <span class="version">${escapeHtml(info["version"] ?? "")}</span></h1>
<p>The machine-readable document: <a href="${escapeHtml(options.documentPath)}">${escapeHtml(options.documentPath)}</a> (OpenAPI ${escapeHtml(document["openapi"] ?? "")}).</p></header>
<div class="layout">
<nav aria-label="Operations"><ul>${toc}</ul></nav>
<main>
<section class="intro">${prose(info["description"])}</section>
${sections}
</main>
</div>
</body>
</html>
`
}
