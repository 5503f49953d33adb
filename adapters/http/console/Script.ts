/**
 * The admin console's script (`GET /console/console.js`), one ES module with no dependencies and
 * no build step. It calls only the administrative routes (`/api/admin/v1/workspaces/{workspaceId}`),
 * with the workspace administrator key as `Authorization: Bearer`.
 *
 * Rules it keeps:
 * - the workspace id and the key live in `sessionStorage` only (gone when the tab closes or on
 *   sign-out), never in `localStorage`, a cookie or the URL;
 * - every node is built with `createElement` and `textContent`, never from HTML text, so nothing a
 *   server or a user sends can become markup (and Trusted Types can forbid every HTML sink);
 * - a created key's secret exists only in the node that shows it, removed when dismissed or when the
 *   screen changes; connector secrets are read from their inputs, sent, and the inputs cleared;
 * - errors are shown from the RFC 9457 problem's `title`, `detail` and `errors`.
 *
 * Written without template literals so it can sit in this TypeScript string unchanged.
 */

export const consoleScript: string = String.raw`
const sessionKey = "accord.console.session"
const adminBase = "/api/admin/v1/workspaces/"

// ---- session (sessionStorage only) ----
const readSession = () => {
  try {
    const value = JSON.parse(sessionStorage.getItem(sessionKey) || "null")
    return value && typeof value.workspaceId === "string" && typeof value.adminKey === "string" ? value : null
  } catch {
    return null
  }
}
const writeSession = (session) => sessionStorage.setItem(sessionKey, JSON.stringify(session))
const clearSession = () => sessionStorage.removeItem(sessionKey)

// ---- DOM building: text only, never HTML ----
const append = (parent, children) => {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)))
  }
  return parent
}
const h = (tag, props, ...children) => {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue
    if (name.startsWith("on") && typeof value === "function") element.addEventListener(name.slice(2), value)
    else if (name === "className") element.className = value
    else element.setAttribute(name, value === true ? "" : String(value))
  }
  return append(element, children)
}
const text = (value) => (value === null || value === undefined ? "" : typeof value === "string" ? value : JSON.stringify(value))
// JSON for people: an object of a few levels as nested key/value rows, a list of plain values as one
// line, anything deeper as a pretty-printed block that wraps only between tokens
const readable = (value, depth = 0) => {
  if (value === null || value === undefined) return h("span", { className: "note" }, "none")
  if (typeof value !== "object") return h("span", {}, String(value))
  if (Array.isArray(value) && value.every((item) => item === null || typeof item !== "object")) return h("span", {}, value.map(String).join(", "))
  if (!Array.isArray(value) && depth < 3) {
    const entries = Object.entries(value)
    if (entries.length === 0) return h("span", { className: "note" }, "empty")
    return h("dl", { className: "kv" }, entries.map(([key, item]) => [h("dt", {}, key), h("dd", {}, readable(item, depth + 1))]))
  }
  return h("pre", { className: "json" }, JSON.stringify(value, null, 2))
}
const definitions = (pairs) =>
  h("dl", {}, pairs.filter((pair) => pair !== null).map(([term, value]) => [h("dt", {}, term), h("dd", {}, value instanceof Node ? value : text(value))]))
const table = (caption, headings, rows) =>
  h("table", {},
    h("caption", { className: "note" }, caption),
    h("thead", {}, h("tr", {}, headings.map((heading) => h("th", { scope: "col" }, heading)))),
    // each cell names its column, so a narrow screen can show a row as labelled lines
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell, i) => h("td", { "data-label": headings[i] }, cell instanceof Node ? cell : text(cell)))))))

// ---- charts: inline SVG built node by node, no library and no markup from text ----
const svgNs = "http://www.w3.org/2000/svg"
const svg = (tag, attributes, ...children) => {
  const element = document.createElementNS(svgNs, tag)
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value))
  for (const child of children.flat(Infinity)) element.append(child instanceof Node ? child : document.createTextNode(String(child)))
  return element
}
const utcDay = (timestamp) => String(timestamp).slice(0, 10)
// Stacked bars: one bar per bucket (in the order given), one colour per series; a legend and a
// caption in text, so the figure is read without the picture too.
const barChart = (title, buckets, series) => {
  const width = 320
  const height = 120
  const left = 28
  const bottom = 18
  const totals = buckets.map((_, i) => series.reduce((sum, one) => sum + (one.values[i] || 0), 0))
  const top = Math.max(1, ...totals)
  const slot = (width - left) / Math.max(1, buckets.length)
  const barWidth = Math.max(2, Math.min(28, slot * 0.7))
  const scale = (height - bottom - 6) / top
  const bars = []
  buckets.forEach((bucket, i) => {
    let base = height - bottom
    series.forEach((one, s) => {
      const amount = one.values[i] || 0
      if (amount <= 0) return
      const tall = amount * scale
      base -= tall
      bars.push(svg("rect", { x: (left + i * slot + (slot - barWidth) / 2).toFixed(1), y: base.toFixed(1), width: barWidth.toFixed(1), height: tall.toFixed(1), class: "series-" + (s % 8) },
        svg("title", {}, bucket + " · " + one.name + ": " + amount)))
    })
  })
  const labels = buckets.length <= 8 ? buckets : [buckets[0], buckets[buckets.length - 1]]
  const figure = h("figure", { className: "chart" },
    svg("svg", { viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": title, class: "chart-svg" },
      svg("line", { x1: left, y1: height - bottom, x2: width, y2: height - bottom, class: "axis" }),
      svg("text", { x: left - 4, y: 10, class: "tick", "text-anchor": "end" }, String(top)),
      svg("text", { x: left - 4, y: height - bottom, class: "tick", "text-anchor": "end" }, "0"),
      bars,
      labels.map((label) => svg("text", { x: (left + buckets.indexOf(label) * slot + slot / 2).toFixed(1), y: height - 4, class: "tick", "text-anchor": "middle" }, label.length > 5 ? label.slice(5) : label))),
    h("figcaption", {}, h("strong", {}, title),
      series.length > 1 || series[0].name !== "" ? h("ul", { className: "legend" }, series.map((one, s) => h("li", {}, h("span", { className: "swatch series-" + (s % 8) }), one.name + " (" + one.values.reduce((a, b) => a + b, 0) + ")"))) : null))
  return figure
}
// Counts of rows per UTC day and per series key: the days in order, one value list per key.
const perDay = (rows, timeOf, keyOf) => {
  const days = [...new Set(rows.map((row) => utcDay(timeOf(row))))].sort()
  const keys = [...new Set(rows.map(keyOf))].sort()
  return { days, series: keys.map((key) => ({ name: key, values: days.map((day) => rows.filter((row) => keyOf(row) === key && utcDay(timeOf(row)) === day).length) })) }
}
const chartBound = 1000
// Every page of a list route, up to a bound (the charts read at most that many rows).
const allPages = async (path, params, bound) => {
  const rows = []
  let cursor = null
  do {
    const page = await api("GET", withQuery(path, params, cursor))
    rows.push(...page.data)
    cursor = page.nextCursor
  } while (cursor && rows.length < bound)
  return rows
}
// A section that holds one screen's looked-up result; it shows no border while it is empty.
const resultSection = (label, slot) => h("section", { className: "result", "aria-label": label }, slot)

// ---- the admin API ----
class ApiError extends Error {
  constructor(status, problem) {
    super(problem && typeof problem.detail === "string" ? problem.detail : "HTTP " + status)
    this.status = status
    this.problem = problem
  }
}
class NetworkError extends Error {}

const api = async (method, path, body, session = readSession()) => {
  if (!session) throw new ApiError(401, { title: "Signed out", detail: "Sign in again." })
  const headers = { authorization: "Bearer " + session.adminKey, accept: "application/json" }
  if (body !== undefined) headers["content-type"] = "application/json"
  let response
  try {
    response = await fetch(adminBase + encodeURIComponent(session.workspaceId) + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
      redirect: "error",
      referrerPolicy: "no-referrer"
    })
  } catch {
    throw new NetworkError("The server could not be reached.")
  }
  const raw = await response.text()
  let parsed = null
  try {
    parsed = raw === "" ? null : JSON.parse(raw)
  } catch {
    parsed = null
  }
  if (!response.ok) throw new ApiError(response.status, parsed)
  return parsed
}

// ---- problems (RFC 9457) ----
const problemBox = () => h("div", { className: "problem", role: "alert" })
const showProblem = (box, form, error) => {
  box.replaceChildren()
  if (form) for (const element of form.querySelectorAll("[aria-invalid]")) element.removeAttribute("aria-invalid")
  if (!error) return
  if (!(error instanceof ApiError)) {
    if (!(error instanceof NetworkError)) console.warn("console: unexpected failure", error)
    append(box, [h("p", {}, h("strong", {}, "The server could not be reached."), " Check the connection and try again.")])
    return
  }
  const problem = error.problem && typeof error.problem === "object" ? error.problem : {}
  append(box, [
    h("p", {}, h("strong", {}, problem.title || "Request failed"), " (HTTP " + error.status + (problem.code ? ", " + problem.code : "") + ")"),
    problem.detail ? h("p", { className: "problem-detail" }, problem.detail) : null
  ])
  const errors = Array.isArray(problem.errors) ? problem.errors : []
  if (errors.length > 0) {
    box.append(h("ul", {}, errors.map((issue) => h("li", {}, (issue.path ? issue.path + ": " : "") + issue.message))))
    for (const issue of errors) {
      const input = form && issue.path ? form.elements.namedItem(issue.path) : null
      if (input instanceof Element) input.setAttribute("aria-invalid", "true")
    }
  }
  if (problem.errors_omitted) box.append(h("p", {}, problem.errors_omitted + " more not shown."))
  if (error.status === 401 && readSession() !== null) box.append(h("p", {}, "The key is unknown or revoked: sign out and sign in with a valid administrator key."))
}

// ---- forms: labelled fields, Enter submits, one request at a time ----
let fieldCount = 0
const field = (label, props, hint) => {
  const id = "field-" + ++fieldCount
  const hintId = hint ? id + "-hint" : undefined
  return h("div", { className: "field" },
    h("label", { for: id }, label),
    h("input", { id, type: "text", autocomplete: "off", spellcheck: "false", "aria-describedby": hintId, ...props }),
    hint ? h("p", { id: hintId, className: "hint" }, hint) : null)
}
const selectField = (label, name, options) => {
  const id = "field-" + ++fieldCount
  return h("div", { className: "field" },
    h("label", { for: id }, label),
    h("select", { id, name }, options.map(([value, caption]) => h("option", { value }, caption))))
}
const form = (props, fields, submitLabel, onSubmit) => {
  const box = problemBox()
  const button = h("button", { type: "submit" }, submitLabel)
  const element = h("form", props, fields, h("div", { className: "actions" }, button), box)
  element.addEventListener("submit", async (event) => {
    event.preventDefault()
    if (element.getAttribute("aria-busy") === "true") return
    element.setAttribute("aria-busy", "true")
    showProblem(box, element, null)
    try {
      await onSubmit(element)
    } catch (error) {
      showProblem(box, element, error)
    } finally {
      element.removeAttribute("aria-busy")
    }
  })
  return element
}
const value = (formElement, name) => formElement.elements.namedItem(name).value.trim()
const loading = (slot) => slot.replaceChildren(h("p", { className: "note" }, "Loading…"))
const failure = (slot, error) => {
  const box = problemBox()
  slot.replaceChildren(box)
  showProblem(box, null, error)
}

// Revoking from a row: Revoke, then an in-page Confirm revoke (or Cancel), so a keyboard or a
// screen reader meets the note and any warning before the request is sent.
const revokeStep = ({ what, path, note, warning, problem, done }) => {
  const cell = h("div", { className: "actions" })
  const ask = () => {
    const confirm = h("button", { type: "button", className: "danger", "aria-label": "Confirm revoking " + what, onclick: async () => {
      showProblem(problem, null, null)
      try {
        await api("DELETE", path)
      } catch (error) {
        showProblem(problem, null, error)
      }
      await done()
    } }, "Confirm revoke")
    cell.replaceChildren(h("span", {}, note), warning ? h("strong", { className: "warning", role: "alert" }, warning) : null, confirm,
      h("button", { type: "button", className: "quiet", onclick: idle }, "Cancel"))
    confirm.focus()
  }
  const idle = () => cell.replaceChildren(h("button", { type: "button", className: "quiet", "aria-label": "Revoke " + what, onclick: ask }, "Revoke"))
  idle()
  return cell
}

// A list route's pages ({ data, nextCursor }) as a list of items, "more" appending the next page.
const pagedList = (label, fetchPage, item, emptyText, moreLabel) => {
  const list = h("ul", { className: "items", "aria-label": label })
  const slot = h("div", {}, list)
  let cursor = null
  const more = h("button", { type: "button", className: "quiet", hidden: true, onclick: () => load() }, moreLabel)
  const box = problemBox()
  const load = async () => {
    showProblem(box, null, null)
    try {
      const page = await fetchPage(cursor)
      append(list, page.data.map((row) => h("li", {}, item(row))))
      if (list.childElementCount === 0) list.replaceWith(h("p", {}, emptyText))
      cursor = page.nextCursor
      more.hidden = !cursor
    } catch (error) {
      showProblem(box, null, error)
    }
  }
  append(slot, [h("div", { className: "actions" }, more), box])
  load()
  return slot
}
const withQuery = (path, params, cursor) => {
  const query = new URLSearchParams(params)
  if (cursor) query.set("cursor", cursor)
  const text = query.toString()
  return text === "" ? path : path + "?" + text
}

// ---- screens ----
const state = { pendingAccount: null, pendingAction: null }

const signInScreen = (main) => {
  main.append(
    h("h1", { tabindex: "-1" }, "Sign in to a workspace"),
    h("p", {}, "Use the workspace id and an administrator key. The key stays in this tab's session storage only: it is forgotten when the tab closes or when you sign out."),
    form({ id: "sign-in", "aria-label": "Sign in" }, [
      field("Workspace id", { name: "workspaceId", required: true }),
      field("Administrator key", { name: "adminKey", type: "password", required: true })
    ], "Sign in", async (formElement) => {
      const candidate = { workspaceId: value(formElement, "workspaceId"), adminKey: formElement.elements.namedItem("adminKey").value }
      formElement.elements.namedItem("adminKey").value = ""
      // an admin-only read: proves the key is live, belongs to the workspace and has the admin scope
      await api("GET", "/api-keys", undefined, candidate)
      writeSession(candidate)
      go("keys")
    }))
}

const keysScreen = (main) => {
  const secretSlot = h("div")
  const listSlot = h("div")
  const listProblem = problemBox()
  const load = async () => {
    try {
      const page = await api("GET", "/api-keys")
      const liveAdmins = page.data.filter((key) => key.scope === "admin" && !key.revokedAt).length
      listSlot.replaceChildren(page.data.length === 0 ? h("p", {}, "No keys yet.") : table(
        "Keys of this workspace; secrets are never shown again.",
        ["Name", "Scope", "Id", "Created", "Status", ""],
        page.data.map((key) => [key.name || "(unnamed)", key.scope, h("code", {}, key.id), key.createdAt,
          key.revokedAt ? "revoked " + key.revokedAt : "live", key.revokedAt ? "" : revokeCell(key, liveAdmins)])))
    } catch (error) {
      // the key this tab signed in with was just revoked: the session is over
      if (error instanceof ApiError && error.status === 401) {
        clearSession()
        render()
        return
      }
      failure(listSlot, error)
    }
  }
  // The list holds no secret or hash, so the console cannot tell which admin key is its own: revoking
  // any admin key warns that it may end this session, and the last live one certainly does.
  const revokeCell = (key, liveAdmins) => revokeStep({
    what: "key " + (key.name || key.id),
    path: "/api-keys/" + encodeURIComponent(key.id),
    note: "Requests with this key will be refused.",
    warning: key.scope !== "admin" ? null : liveAdmins === 1
      ? "This is the only live admin key, so it is the one you are signed in with: revoking it signs you out and no admin key is left."
      : "If this is the key you are signed in with, revoking it signs you out.",
    problem: listProblem,
    done: load
  })
  const showSecret = (created) => {
    const secret = h("code", { className: "secret-value", id: "new-key-secret" }, created.secret)
    const status = h("p", { role: "status" })
    const panel = h("section", { className: "secret", "aria-labelledby": "secret-heading", tabindex: "-1" },
      h("h3", { id: "secret-heading" }, "Copy the new key's secret now"),
      h("p", {}, "Key " + (created.name || created.id) + " (" + created.scope + "). This is the only time its secret is shown: Accord keeps only a hash of it."),
      secret,
      h("div", { className: "actions" },
        h("button", { type: "button", className: "quiet", onclick: async () => {
          try {
            await navigator.clipboard.writeText(secret.textContent)
            status.textContent = "Copied."
          } catch {
            status.textContent = "Copying is not allowed here: select the secret and copy it."
          }
        } }, "Copy secret"),
        h("button", { type: "button", id: "dismiss-secret", onclick: () => {
          secretSlot.replaceChildren()
          createForm.elements.namedItem("scope").focus()
        } }, "I have saved it: hide the secret")),
      status)
    secretSlot.replaceChildren(panel)
    panel.focus()
  }
  const createForm = form({ id: "create-key", "aria-labelledby": "create-key-heading" }, [
    selectField("Scope", "scope", [["ingest", "ingest: send events"], ["developer:read", "developer:read: read events, profiles, connector"], ["admin", "admin: administer the workspace"]]),
    field("Name (optional)", { name: "name", maxlength: "200" })
  ], "Create key", async (formElement) => {
    const scope = value(formElement, "scope")
    const name = value(formElement, "name")
    const created = await api("POST", "/api-keys", name === "" ? { scope } : { scope, name })
    formElement.elements.namedItem("name").value = ""
    showSecret(created)
    await load()
  })
  main.append(
    h("p", { className: "crumbs" }, "Settings > Integrations > Direct API"),
    h("section", {}, h("h3", { id: "create-key-heading" }, "Create a key"), createForm),
    secretSlot,
    h("section", {}, h("h3", {}, "Keys"), listProblem, listSlot))
  loading(listSlot)
  load()
}

const eventsScreen = (main) => {
  const slot = h("div")
  const chartSlot = h("div", { className: "charts" })
  let drawn = 0
  const drawChart = async (filters) => {
    // only the newest filters' chart is drawn, whichever answer arrives last
    const mine = ++drawn
    const { limit, ...rest } = filters
    try {
      const rows = await allPages("/events", { ...rest, limit: "200" }, chartBound)
      if (mine !== drawn) return
      if (rows.length === 0) return chartSlot.replaceChildren()
      const { days, series } = perDay(rows, (event) => event.timestamp, (event) => event.event_name)
      chartSlot.replaceChildren(barChart("Events per day (UTC), by event name" + (rows.length >= chartBound ? ", newest " + chartBound : ""), days, series))
    } catch (error) {
      failure(chartSlot, error)
    }
  }
  const view = { filters: {}, cursors: [null], index: 0 }
  const fetchPage = (filters, cursor) => {
    const query = new URLSearchParams(filters)
    if (cursor) query.set("cursor", cursor)
    return api("GET", "/events?" + query.toString())
  }
  const show = (page) => {
    const older = h("button", { type: "button", className: "quiet", disabled: !page.nextCursor, onclick: () => {
      view.cursors[view.index + 1] = page.nextCursor
      view.index += 1
      load()
    } }, "Older events")
    const newer = h("button", { type: "button", className: "quiet", disabled: view.index === 0, onclick: () => {
      view.index -= 1
      load()
    } }, "Newer events")
    slot.replaceChildren(
      page.data.length === 0 ? h("p", {}, "No events match these filters.") : table(
        "Newest first.",
        ["Occurred", "Event", "Account", "Event id", "Value", "Received", "Properties"],
        page.data.map((event) => [event.timestamp, event.event_name,
          event.account_id ? h("button", { type: "button", className: "quiet", "aria-label": "Open the profile of account " + event.account_id, onclick: () => {
            state.pendingAccount = event.account_id
            go("account")
          } }, event.account_id) : "",
          event.event_id ? h("code", {}, event.event_id) : "", event.value === undefined ? h("span", { className: "note" }, "none") : event.value, event.received_at, event.properties ? readable(event.properties) : ""])),
      h("div", { className: "pager", role: "group", "aria-label": "Pages" }, newer, h("span", { id: "events-page" }, "Page " + (view.index + 1)), older))
  }
  const load = async () => {
    loading(slot)
    try {
      show(await fetchPage(view.filters, view.cursors[view.index]))
    } catch (error) {
      failure(slot, error)
    }
  }
  const filters = form({ id: "event-filters", className: "inline", "aria-label": "Event filters" }, [
    field("Account id", { name: "account_id" }),
    field("Event name", { name: "event_name" }),
    field("From", { name: "from", placeholder: "2026-11-01T00:00:00Z" }),
    field("To", { name: "to", placeholder: "2026-11-30T00:00:00Z" }),
    field("Page size", { name: "limit", type: "number", min: "1", max: "200", value: "50" })
  ], "Apply filters", async (formElement) => {
    const chosen = {}
    for (const name of ["account_id", "event_name", "from", "to", "limit"]) {
      const entered = value(formElement, name)
      if (entered !== "") chosen[name] = entered
    }
    // fetched before the view changes, so refused filters show their problem beside the form
    const page = await fetchPage(chosen, null)
    view.filters = chosen
    view.cursors = [null]
    view.index = 0
    show(page)
    drawChart(chosen)
  })
  main.append(h("section", {}, h("h3", {}, "Filters"), filters), h("section", {}, h("h3", {}, "Events"), chartSlot, slot))
  load()
  drawChart({})
}

const accountScreen = (main) => {
  const slot = h("div")
  const open = async (accountId) => {
    // the previous profile goes first: a refused lookup must not leave another account's facts
    slot.replaceChildren()
    const profile = await api("GET", "/accounts/" + encodeURIComponent(accountId))
    // the facts the account list counts: those an event set (the rest are counted at this read)
    const stored = profile.facts.filter((fact) => fact.sourceEventId !== null)
    const lastFact = stored.reduce((last, fact) => (last === null || fact.observedAt > last ? fact.observedAt : last), null)
    const usage = await allPages("/events", { account_id: profile.accountId, event_name: "usage_rollup_recorded", limit: "200" }, chartBound)
    slot.replaceChildren(
      definitions([["Account", profile.accountId], ["Last event", profile.lastEventAt || "none"],
        ["Facts from events", stored.length + (lastFact ? ", the newest observed " + lastFact : "")],
        ["Counted at this read", profile.facts.length - stored.length]]),
      usageCharts(usage),
      h("h3", {}, "Facts"),
      profile.facts.length === 0 ? h("p", {}, "No facts yet.") : table("Each fact with the event that set it.", ["Fact", "Value", "Observed", "Source event"],
        profile.facts.map((fact) => [fact.name, text(fact.value), fact.observedAt,
          fact.sourceEvent ? fact.sourceEvent.event_name + " (" + (fact.sourceEvent.event_id || fact.sourceEvent.id) + ")" : "counted at this read"])),
      h("h3", {}, "Feature gates"),
      gatesTable(profile.featureGates))
  }
  const lookup = form({ id: "account-lookup", className: "inline", "aria-label": "Open an account profile" }, [
    field("Account id", { name: "accountId", required: true })
  ], "Open profile", (formElement) => open(value(formElement, "accountId")))
  const accounts = pagedList("Accounts", (cursor) => api("GET", withQuery("/accounts", {}, cursor)), (account) =>
    h("button", { type: "button", className: "quiet", "aria-label": "Open the profile of account " + account.accountId, onclick: () => {
      lookup.elements.namedItem("accountId").value = account.accountId
      lookup.requestSubmit()
    } }, account.accountId + " · " + account.factCount + (account.factCount === 1 ? " fact" : " facts") + " from events · newest observed " + account.lastObservedAt),
    "No account has a profile yet.", "More accounts")
  main.append(h("section", {}, lookup), resultSection("Profile", slot),
    h("section", { "aria-labelledby": "accounts-heading" }, h("h3", { id: "accounts-heading" }, "Accounts with a profile"), accounts))
  if (state.pendingAccount) {
    lookup.elements.namedItem("accountId").value = state.pendingAccount
    state.pendingAccount = null
    lookup.requestSubmit()
  }
}

// Usage over time, one chart per meter (product, metric and unit), from the account's usage rollup
// events: each bar one closed bucket, at its usage_start.
const usageCharts = (events) => {
  if (events.length === 0) return h("p", { className: "note" }, "No usage recorded for this account.")
  const meters = new Map()
  for (const event of events) {
    const p = event.properties || {}
    const meter = p.product_key + " · " + p.metric_key + " (" + p.unit + ")"
    if (!meters.has(meter)) meters.set(meter, new Map())
    const buckets = meters.get(meter)
    buckets.set(p.usage_start, (buckets.get(p.usage_start) || 0) + (typeof event.value === "number" ? event.value : 0))
  }
  return h("div", { className: "charts" }, h("h3", {}, "Usage over time"), [...meters].map(([meter, buckets]) => {
    const starts = [...buckets.keys()].sort()
    return barChart(meter, starts.map((start) => String(start).slice(0, 16).replace("T", " ")), [{ name: "", values: starts.map((start) => buckets.get(start)) }])
  }))
}

const gatesTable = (gates) =>
  gates.length === 0 ? h("p", {}, "No feature gates.") : table("Feature gates and their state.", ["Gate id", "Account", "Feature", "State", "Started", "Unlocked"],
    gates.map((gate) => [h("code", {}, gate.id), gate.accountId, gate.featureKey, gate.state, gate.startedAt, gate.unlockedAt || ""]))

const connectorScreen = (main) => {
  const current = h("div")
  const checkResult = h("div", { role: "status" })
  const load = async () => {
    loading(current)
    try {
      const connection = await api("GET", "/connector")
      const capabilities = connection.paymentCapabilities
      current.replaceChildren(
        definitions([
          ["Endpoint host", connection.endpointHost || "none"],
          ["Connection id", h("code", {}, connection.connectionId)],
          ["Active revision", connection.activeRevision === null ? "none" : connection.activeRevision],
          ["Pending revision", connection.pendingRevision === null ? "none" : connection.pendingRevision],
          ["Last check", connection.lastCheck ? "revision " + connection.lastCheck.revision + " at " + connection.lastCheck.at + ": " + connection.lastCheck.outcome + (connection.lastCheck.problem ? " (" + connection.lastCheck.problem + ")" : "") : "never"]
        ]),
        h("h3", {}, "Revisions"),
        table("Each revision of the endpoint and its secrets.", ["Revision", "State", "Endpoint host", "Created", "Activated", "Retired"],
          connection.revisions.map((r) => [r.revision, r.state, r.endpointHost, r.createdAt, r.activatedAt || "", r.retiredAt || ""])),
        h("h3", {}, "Payment capabilities"),
        capabilities === null ? h("p", {}, "No current payment capability proof.") : definitions([
          ["Modes", capabilities.modes.length === 0 ? "none" : capabilities.modes.join(", ")],
          ["Revision", capabilities.revision],
          ["Live mode", capabilities.livemode ? "yes" : "no"],
          ["Recorded", capabilities.recordedAt],
          ["Expires", capabilities.expiresAt]
        ]))
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) current.replaceChildren(h("p", {}, "No action backend is connected yet."))
      else failure(current, error)
    }
  }
  const connect = form({ id: "connect-backend", "aria-labelledby": "connect-heading" }, [
    field("Endpoint URL", { name: "endpoint", type: "url", required: true, placeholder: "https://billing.example.com/accord" }),
    field("Action signing secret", { name: "actionSigningSecret", type: "password", autocomplete: "new-password", required: true }, "32 to 512 characters; never shown again."),
    field("Completion secret", { name: "completionSecret", type: "password", autocomplete: "new-password", required: true }, "Different from the action signing secret; never shown again.")
  ], "Save connection", async (formElement) => {
    const body = {
      endpoint: value(formElement, "endpoint"),
      actionSigningSecret: formElement.elements.namedItem("actionSigningSecret").value,
      completionSecret: formElement.elements.namedItem("completionSecret").value
    }
    formElement.elements.namedItem("actionSigningSecret").value = ""
    formElement.elements.namedItem("completionSecret").value = ""
    const saved = await api("PUT", "/connector", body)
    formElement.elements.namedItem("endpoint").value = ""
    checkResult.replaceChildren(h("p", { className: "status" }, "Revision " + saved.revision + " saved as " + saved.state + ". Run the check to activate it."))
    await load()
  })
  const check = form({ id: "check-connection", "aria-labelledby": "check-heading" }, [
    h("p", { className: "note" }, "Sends a signed handshake to the pending revision (else the active one); a backend that takes payments also proves its payment modes.")
  ], "Check connection", async () => {
    checkResult.replaceChildren(h("p", { className: "note" }, "Checking…"))
    try {
      const result = await api("POST", "/connector/check", {})
      checkResult.replaceChildren(h("div", { className: result.problem ? "status failed" : "status" },
        h("p", {}, h("strong", {}, result.problem ? "Check failed" : "Check passed"), ": revision " + result.revision + " is " + result.state + "."),
        definitions([
          ["Payment modes", result.paymentModes.length === 0 ? "none" : result.paymentModes.join(", ")],
          result.problem ? ["Problem", result.problem] : null
        ])))
    } catch (error) {
      checkResult.replaceChildren()
      throw error
    }
    await load()
  })
  main.append(
    h("p", { className: "crumbs" }, "Setup > Connect the backend that executes actions"),
    h("p", { className: "note" }, "Your backend receives every signed action (extend a trial, take a payment, ...) and reports its completion."),
    h("section", {}, h("h3", {}, "Current connection"), current),
    h("section", {}, h("h3", { id: "connect-heading" }, "Connect action backend"), connect),
    h("section", {}, h("h3", { id: "check-heading" }, "Check connection"), check, checkResult))
  load()
}

const actionsScreen = (main) => {
  const slot = h("div")
  const lookup = form({ id: "action-lookup", className: "inline", "aria-label": "Open an action request" }, [
    field("Action request id", { name: "actionRequestId", required: true }, "The id the intake answered, or one from the list below.")
  ], "Open action request", async (formElement) => {
    slot.replaceChildren()
    const action = await api("GET", "/action-requests/" + encodeURIComponent(value(formElement, "actionRequestId")))
    slot.replaceChildren(
      definitions([
        ["Action request", h("code", {}, action.actionRequestId)],
        ["State", action.state],
        action.state === "evidence_overdue" ? ["Evidence", "overdue: the evidence its completion pointed to did not arrive within the matching window"] : null,
        ["Account", action.accountId],
        ["Revision", action.revision],
        ["Provider idempotency key", h("code", {}, action.providerIdempotencyKey)],
        ["Created", action.createdAt],
        ["Updated", action.updatedAt],
        action.errorCode ? ["Error code", action.errorCode] : null
      ]),
      h("h3", {}, "History"),
      table("Every transition, oldest first.", ["#", "At", "Trigger", "From", "To", "Detail"],
        action.history.map((entry) => [entry.seq, entry.at, entry.trigger, entry.fromState || "", entry.toState, entry.detail ? readable(entry.detail) : ""])))
  })
  const recentSlot = h("div")
  const open = (id) => {
    lookup.elements.namedItem("actionRequestId").value = id
    lookup.requestSubmit()
  }
  const showRecent = (filters) => recentSlot.replaceChildren(pagedList("Action requests", (cursor) => api("GET", withQuery("/action-requests", filters, cursor)),
    (action) => h("button", { type: "button", className: "quiet", "aria-label": "Open action request " + action.actionRequestId, onclick: () => open(action.actionRequestId) },
      action.createdAt + " · " + action.state + " · " + action.accountId + " · " + action.actionRequestId),
    "No action requests match.", "Older action requests"))
  const recentFilters = form({ id: "action-filters", className: "inline", "aria-label": "Action request filters" }, [
    selectField("State", "state", [["", "any state"], ["dispatching", "dispatching"], ["accepted", "accepted"], ["pending", "pending"],
      ["evidence_overdue", "evidence_overdue (evidence window passed)"], ["verified", "verified"],
      ["rejected", "rejected"], ["unknown_outcome", "unknown_outcome"], ["failed", "failed"], ["unresolved", "unresolved"], ["reversed", "reversed"], ["blocked", "blocked"]]),
    field("Account id", { name: "account_id" })
  ], "Apply filters", async (formElement) => {
    const chosen = {}
    for (const name of ["state", "account_id"]) {
      const entered = value(formElement, name)
      if (entered !== "") chosen[name] = entered
    }
    // checked before the list changes, so refused filters show their problem beside the form
    await api("GET", withQuery("/action-requests", { ...chosen, limit: "1" }, null))
    showRecent(chosen)
  })
  const chartSlot = h("div", { className: "charts" })
  const drawChart = async () => {
    try {
      const rows = await allPages("/action-requests", { limit: "200" }, chartBound)
      if (rows.length === 0) return chartSlot.replaceChildren()
      const { days, series } = perDay(rows, (action) => action.createdAt, (action) => action.state)
      chartSlot.replaceChildren(barChart("Action requests created per day (UTC), by current state" + (rows.length >= chartBound ? ", newest " + chartBound : ""), days, series))
    } catch (error) {
      failure(chartSlot, error)
    }
  }
  main.append(h("section", {}, lookup), resultSection("Action request", slot),
    h("section", { "aria-labelledby": "actions-chart-heading" }, h("h3", { id: "actions-chart-heading" }, "Actions by state over time"), chartSlot),
    h("section", { "aria-labelledby": "recent-actions-heading" }, h("h3", { id: "recent-actions-heading" }, "Recent action requests"), recentFilters, recentSlot))
  showRecent({})
  drawChart()
  // opened from another screen (an approval's action): looked up once the form is in the page
  if (state.pendingAction) {
    lookup.elements.namedItem("actionRequestId").value = state.pendingAction
    state.pendingAction = null
    lookup.requestSubmit()
  }
}

const gatesScreen = (main) => {
  const slot = h("div")
  const show = (gate) => slot.replaceChildren(definitions([
    ["Gate id", h("code", {}, gate.id)],
    ["Account", gate.accountId],
    ["Feature", gate.featureKey],
    ["Journey", gate.journeyId],
    ["Version", gate.versionId],
    ["State", gate.state],
    ["Started", gate.startedAt],
    ["Unlocked", gate.unlockedAt || "not yet"],
    ["Unlock event", gate.unlockEventId || "none"]
  ]))
  const lookup = form({ id: "gate-lookup", className: "inline", "aria-label": "Open a feature gate" }, [
    field("Gate id", { name: "gateId", required: true })
  ], "Open gate", async (formElement) => {
    slot.replaceChildren()
    show(await api("GET", "/feature-gates/" + encodeURIComponent(value(formElement, "gateId"))))
  })
  const create = form({ id: "create-gate", "aria-labelledby": "create-gate-heading" }, [
    field("Account id", { name: "accountId", required: true }),
    field("Journey id", { name: "journeyId", required: true }, "A UUID."),
    field("Version id", { name: "versionId", required: true }, "A UUID."),
    field("Feature key", { name: "featureKey", required: true }, "Lower-case code, e.g. advanced_reports."),
    field("Journey started at", { name: "startedAt", required: true, value: new Date().toISOString() }, "RFC 3339 time.")
  ], "Create gate", async (formElement) => {
    const body = {}
    for (const name of ["accountId", "journeyId", "versionId", "featureKey", "startedAt"]) body[name] = value(formElement, name)
    show(await api("POST", "/feature-gates", body))
  })
  const gates = pagedList("Feature gates", (cursor) => api("GET", withQuery("/feature-gates", {}, cursor)), (gate) =>
    h("button", { type: "button", className: "quiet", "aria-label": "Open feature gate " + gate.id, onclick: () => show(gate) },
      gate.startedAt + " · " + gate.state + " · " + gate.accountId + " · " + gate.featureKey),
    "No feature gates yet.", "Older gates")
  main.append(
    h("p", { className: "note" }, "A gate stays checking until an entitlement_active event sent with a server ingest key unlocks it. Gates are also listed on each account profile."),
    h("section", {}, lookup),
    resultSection("Feature gate", slot),
    h("section", {}, h("h3", { id: "create-gate-heading" }, "Create a gate"), create),
    h("section", { "aria-labelledby": "gates-heading" }, h("h3", { id: "gates-heading" }, "Recent feature gates"), gates))
}

const catalogScreen = (main) => {
  const current = h("div")
  const historySlot = h("div")
  const versionSlot = h("div")
  // One version: its summary, then each action with its family, evidence, frequency and terms.
  const versionView = (version) => {
    const catalog = version.document || {}
    const actions = Array.isArray(catalog.actions) ? catalog.actions : []
    return [
      definitions([
        ["Version", version.version],
        ["Published version id", h("code", {}, version.publishedVersionId)],
        ["Published", version.publishedAt],
        ["Published by", version.publishedBy],
        ["Offers", Array.isArray(catalog.offers) ? catalog.offers.length : 0],
        ["Decisions", Array.isArray(catalog.decisions) ? catalog.decisions.length : 0]
      ]),
      h("h3", {}, "Actions and their terms"),
      actions.length === 0 ? h("p", {}, "No actions.") : table("Each action the catalog allows, with the terms every request of it must match.",
        ["Key", "Family", "Evidence", "Frequency", "Terms"],
        actions.map((action) => [h("code", {}, action.key), action.family, readable(action.evidence),
          action.frequency ? action.frequency.limit + " per " + Math.round(action.frequency.windowSeconds / 86400 * 10) / 10 + " days" : "no limit",
          readable({ ...(action.operation ? { operation: action.operation } : {}), ...(action.safeTerms ? { safeTerms: action.safeTerms } : {}), ...(action.offerId ? { offerId: action.offerId } : {}) })]))
    ]
  }
  const load = async () => {
    loading(current)
    try {
      current.replaceChildren(...versionView(await api("GET", "/catalog")))
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) current.replaceChildren(h("p", {}, "No catalog is published yet."))
      else failure(current, error)
    }
    try {
      const versions = await allPages("/catalog/versions", { limit: "200" }, chartBound)
      historySlot.replaceChildren(versions.length === 0 ? h("p", {}, "No versions yet.") : table(
        versions.length >= chartBound ? "The newest " + versions.length + " published versions, newest first." : "Every published version, newest first.",
        ["Version", "Published", "Published by", ""],
        versions.map((version) => [version.version, version.publishedAt, version.publishedBy,
          h("button", { type: "button", className: "quiet", "aria-label": "Open catalog version " + version.version, onclick: async () => {
            versionSlot.replaceChildren()
            try {
              const opened = await api("GET", "/catalog/versions/" + encodeURIComponent(version.version))
              versionSlot.replaceChildren(h("h3", {}, "Version " + opened.version), ...versionView(opened))
            } catch (error) {
              failure(versionSlot, error)
            }
          } }, "Open")])))
    } catch (error) {
      failure(historySlot, error)
    }
  }
  main.append(
    h("section", { "aria-labelledby": "catalog-current-heading" }, h("h3", { id: "catalog-current-heading" }, "Current version"), current),
    h("section", { "aria-labelledby": "catalog-history-heading" }, h("h3", { id: "catalog-history-heading" }, "History"), historySlot),
    resultSection("Catalog version", versionSlot))
  load()
}

const sessionsScreen = (main) => {
  const tokenSlot = h("div")
  const listSlot = h("div")
  const listProblem = problemBox()
  const load = async () => {
    try {
      const sessions = await allPages("/runtime-sessions", { limit: "200" }, chartBound)
      listSlot.replaceChildren(sessions.length === 0 ? h("p", {}, "No runtime sessions yet.") : table(
        "Sessions of this workspace, newest first; tokens are never shown again.",
        ["Subject", "Role", "Account", "Authorities", "Status", "Created", "Expires", ""],
        sessions.map((session) => [session.subject, session.role, session.accountId, session.authorities.join(", "),
          session.status === "revoked" ? "revoked " + session.revokedAt : session.status, session.createdAt, session.expiresAt,
          session.status === "live" ? revokeCell(session) : ""])))
    } catch (error) {
      failure(listSlot, error)
    }
  }
  const revokeCell = (session) => revokeStep({
    what: "session " + session.subject + " (" + session.sessionId + ")",
    path: "/runtime-sessions/" + encodeURIComponent(session.sessionId),
    note: "Its pending approval requests are cancelled.",
    warning: null,
    problem: listProblem,
    done: load
  })
  const issue = form({ id: "issue-session", "aria-labelledby": "issue-session-heading" }, [
    field("Account id", { name: "accountId", required: true }),
    field("Subject", { name: "subject", required: true }, "The end user the session speaks for."),
    field("Role", { name: "role", required: true }, "Their role in your product, e.g. billing_owner or viewer."),
    selectField("Authorities", "authorities", [["funnels.actions.request", "request actions"], ["funnels.actions.execute", "approve and execute actions"], ["both", "both"]])
  ], "Issue session", async (formElement) => {
    const chosen = value(formElement, "authorities")
    const created = await api("POST", "/runtime-sessions", {
      accountId: value(formElement, "accountId"), subject: value(formElement, "subject"), role: value(formElement, "role"),
      authorities: chosen === "both" ? ["funnels.actions.request", "funnels.actions.execute"] : [chosen]
    })
    // the token is handed to the host once, like a key's secret, and leaves with the screen
    tokenSlot.replaceChildren(h("section", { className: "secret" }, h("h3", {}, "The session's token, shown once"),
      h("p", {}, "Session " + created.sessionId + " for " + created.subject + ", until " + created.expiresAt + "."),
      h("code", { className: "secret-value", id: "new-session-token" }, created.token),
      h("div", { className: "actions" }, h("button", { type: "button", id: "dismiss-token", onclick: () => tokenSlot.replaceChildren() }, "Hide the token"))))
    await load()
  })
  main.append(
    h("p", { className: "note" }, "Sessions let an end user of the embedded runtime request or approve actions. Your server issues them; one can be issued here to try the flow."),
    h("section", { "aria-labelledby": "sessions-heading" }, h("h3", { id: "sessions-heading" }, "Sessions"), listProblem, listSlot),
    tokenSlot,
    h("section", {}, h("h3", { id: "issue-session-heading" }, "Issue a session"), issue))
  loading(listSlot)
  load()
}

const approvalsScreen = (main) => {
  const listSlot = h("div")
  const party = (who) => (who === null ? "" : (who.subject || "a session no longer stored") + (who.role ? " (" + who.role + ")" : ""))
  const show = (filters) => {
    loading(listSlot)
    return allPages("/approvals", { ...filters, limit: "200" }, chartBound).then((approvals) => listSlot.replaceChildren(
      approvals.length === 0 ? h("p", {}, "No approvals match.") : table("Approvals, newest first.",
        ["Status", "Action", "Account", "Asked by", "Asked", "Resolved by", "Resolved", "Action created"],
        approvals.map((approval) => [approval.status, approval.actionKey + " (" + approval.family + ")", approval.accountId,
          party(approval.requestedBy), approval.createdAt,
          approval.status === "expired" ? "expired " + approval.expiresAt : party(approval.resolvedBy) || (approval.status === "pending" ? "waiting until " + approval.expiresAt : ""),
          approval.resolvedAt || "",
          approval.actionRequestId ? h("button", { type: "button", className: "quiet", "aria-label": "Open action request " + approval.actionRequestId, onclick: () => {
            state.pendingAction = approval.actionRequestId
            go("actions")
          } }, approval.actionRequestId) : ""]))))
  }
  const filters = form({ id: "approval-filters", className: "inline", "aria-label": "Approval filters" }, [
    selectField("Status", "status", [["", "any status"], ["pending", "pending"], ["expired", "expired"], ["approving", "approving"], ["approved", "approved"], ["denied", "denied"], ["cancelled", "cancelled"]])
  ], "Apply filters", async (formElement) => {
    const status = value(formElement, "status")
    // fetched before the list changes, so a refused filter shows its problem beside the form
    await api("GET", withQuery("/approvals", status === "" ? { limit: "1" } : { status, limit: "1" }, null))
    await show(status === "" ? {} : { status })
  })
  main.append(
    h("p", { className: "note" }, "An end user asked for an action; a billing owner approves or denies it in the embedded runtime. An approved one created the action request shown."),
    h("section", { "aria-labelledby": "approvals-heading" }, h("h3", { id: "approvals-heading" }, "Approvals"), filters, listSlot))
  show({}).catch((error) => failure(listSlot, error))
}

// Erasure: a subject's data removed, and its later events suppressed; each erasure listed with its
// audit. Erasing takes a second, in-page step, as revoking does: it cannot be undone.
const erasuresScreen = (main) => {
  const listSlot = h("div")
  const confirmSlot = h("div")
  const resultSlot = h("div")
  const removedText = (removed) => Object.entries(removed).filter(([, count]) => count > 0).map(([kind, count]) => kind + " " + count).join(", ") || "nothing"
  const load = async () => {
    try {
      const erasures = await allPages("/suppressions", { limit: "200" }, chartBound)
      listSlot.replaceChildren(erasures.length === 0 ? h("p", {}, "Nothing erased yet.") : table(
        "Erased subjects, newest first; their later events are not stored.",
        ["Subject", "Id", "First erased", "By", "Last erased", "Removed"],
        erasures.map((erasure) => [erasure.subject.kind, erasure.subject.id, erasure.createdAt, erasure.createdBy,
          erasure.lastErasedAt + " by " + erasure.lastErasedBy, removedText(erasure.removed)])))
    } catch (error) {
      failure(listSlot, error)
    }
  }
  const erase = form({ id: "erase-subject", "aria-labelledby": "erase-heading" }, [
    selectField("Subject", "kind", [["account", "an account (account_id)"], ["user", "a user (user_id), in every account"]]),
    field("Id", { name: "subjectId", required: true }, "As events carry it.")
  ], "Erase", async (formElement) => {
    resultSlot.replaceChildren()
    const kind = value(formElement, "kind")
    const subjectId = value(formElement, "subjectId")
    const path = (kind === "user" ? "/users/" : "/accounts/") + encodeURIComponent(subjectId)
    const box = problemBox()
    const confirm = h("button", { type: "button", className: "danger", "aria-label": "Confirm erasing " + kind + " " + subjectId, onclick: async () => {
      showProblem(box, null, null)
      try {
        const erased = await api("DELETE", path)
        confirmSlot.replaceChildren()
        resultSlot.replaceChildren(h("section", { "aria-label": "Erased" }, h("h3", {}, "Erased"),
          definitions([["Subject", erased.subject.kind + " " + erased.subject.id], ["First erased", erased.createdAt + " by " + erased.createdBy],
            ["Removed in total", removedText(erased.removed)]])))
        await load()
      } catch (error) {
        showProblem(box, null, error)
      }
    } }, "Confirm erase")
    confirmSlot.replaceChildren(h("div", { className: "actions", role: "group", "aria-label": "Confirm the erasure" },
      h("span", {}, "Erasing " + kind + " " + subjectId + " removes its events, profile, users, gates, sessions and approvals, keeps its actions without personal fields, and drops its later events. It cannot be undone."),
      confirm, h("button", { type: "button", className: "quiet", onclick: () => confirmSlot.replaceChildren() }, "Cancel"), box))
    confirm.focus()
  })
  main.append(
    h("p", { className: "note" }, "An erasure answers a deletion request: the subject's data is removed and a suppression keeps its later events from being stored."),
    h("section", { "aria-labelledby": "erasures-heading" }, h("h3", { id: "erasures-heading" }, "Erased subjects"), listSlot),
    resultSlot,
    h("section", {}, h("h3", { id: "erase-heading" }, "Erase a subject"), erase, confirmSlot))
  loading(listSlot)
  load()
}

// ---- navigation ----
const screens = {
  keys: { title: "Direct API keys", render: keysScreen },
  events: { title: "Events", render: eventsScreen },
  account: { title: "Account profile", render: accountScreen },
  catalog: { title: "Catalog", render: catalogScreen },
  connector: { title: "Action connector", render: connectorScreen },
  actions: { title: "Action requests", render: actionsScreen },
  gates: { title: "Feature gates", render: gatesScreen },
  sessions: { title: "Runtime sessions", render: sessionsScreen },
  approvals: { title: "Approvals", render: approvalsScreen },
  erasures: { title: "Erasures", render: erasuresScreen }
}

const go = (name) => {
  if (location.hash === "#/" + name) render()
  else location.hash = "#/" + name
}

const render = () => {
  const main = document.getElementById("main")
  const nav = document.getElementById("nav")
  const who = document.getElementById("who")
  const signOut = document.getElementById("sign-out")
  // every screen starts from an empty main: a secret shown on the last one is gone with it
  main.replaceChildren()
  const session = readSession()
  nav.hidden = session === null
  who.hidden = session === null
  signOut.hidden = session === null
  if (session === null) {
    who.textContent = ""
    document.title = "Sign in · Accord console"
    signInScreen(main)
    return
  }
  const requested = location.hash.replace(/^#\/?/, "")
  const name = Object.hasOwn(screens, requested) ? requested : "keys"
  const screen = screens[name]
  who.textContent = "Workspace " + session.workspaceId
  document.title = screen.title + " · Accord console"
  for (const link of nav.querySelectorAll("a[data-screen]")) {
    if (link.dataset.screen === name) link.setAttribute("aria-current", "page")
    else link.removeAttribute("aria-current")
  }
  const heading = h("h1", { tabindex: "-1" }, screen.title)
  main.append(heading)
  screen.render(main)
  heading.focus()
}

document.getElementById("sign-out").addEventListener("click", () => {
  clearSession()
  state.pendingAccount = null
  state.pendingAction = null
  history.replaceState(null, "", "#/")
  render()
})
window.addEventListener("hashchange", render)
render()
`
