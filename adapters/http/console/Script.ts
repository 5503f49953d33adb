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
const json = (value) => h("code", { className: "json" }, JSON.stringify(value))
const definitions = (pairs) =>
  h("dl", {}, pairs.filter((pair) => pair !== null).map(([term, value]) => [h("dt", {}, term), h("dd", {}, value instanceof Node ? value : text(value))]))
const table = (caption, headings, rows) =>
  h("table", {},
    h("caption", { className: "note" }, caption),
    h("thead", {}, h("tr", {}, headings.map((heading) => h("th", { scope: "col" }, heading)))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell) => h("td", {}, cell instanceof Node ? cell : text(cell)))))))

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
const state = { pendingAccount: null }

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
      listSlot.replaceChildren(page.data.length === 0 ? h("p", {}, "No keys yet.") : table(
        "Keys of this workspace; secrets are never shown again.",
        ["Name", "Scope", "Id", "Created", "Status", ""],
        page.data.map((key) => [key.name || "(unnamed)", key.scope, h("code", {}, key.id), key.createdAt,
          key.revokedAt ? "revoked " + key.revokedAt : "live", key.revokedAt ? "" : revokeCell(key)])))
    } catch (error) {
      failure(listSlot, error)
    }
  }
  const revokeCell = (key) => {
    const cell = h("div", { className: "actions" })
    const label = key.name || key.id
    const ask = () => {
      const confirm = h("button", { type: "button", className: "danger", "aria-label": "Confirm revoking key " + label, onclick: async () => {
        showProblem(listProblem, null, null)
        try {
          await api("DELETE", "/api-keys/" + encodeURIComponent(key.id))
        } catch (error) {
          showProblem(listProblem, null, error)
        }
        await load()
      } }, "Confirm revoke")
      cell.replaceChildren(h("span", {}, "Requests with this key will be refused."), confirm,
        h("button", { type: "button", className: "quiet", onclick: idle }, "Cancel"))
      confirm.focus()
    }
    const idle = () => cell.replaceChildren(h("button", { type: "button", className: "quiet", "aria-label": "Revoke key " + label, onclick: ask }, "Revoke"))
    idle()
    return cell
  }
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
          event.event_id, event.value, event.received_at, event.properties ? json(event.properties) : ""])),
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
  })
  main.append(h("section", {}, h("h3", {}, "Filters"), filters), h("section", {}, h("h3", {}, "Events"), slot))
  load()
}

const accountScreen = (main) => {
  const slot = h("div")
  const open = async (accountId) => {
    const profile = await api("GET", "/accounts/" + encodeURIComponent(accountId))
    slot.replaceChildren(
      definitions([["Account", profile.accountId], ["Last event", profile.lastEventAt || "none"]]),
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
    } }, account.accountId + " · " + account.factCount + (account.factCount === 1 ? " fact" : " facts") + " · last " + account.lastObservedAt),
    "No account has a profile yet.", "More accounts")
  main.append(h("section", {}, lookup), h("section", { "aria-label": "Profile" }, slot),
    h("section", { "aria-labelledby": "accounts-heading" }, h("h3", { id: "accounts-heading" }, "Accounts with a profile"), accounts))
  if (state.pendingAccount) {
    lookup.elements.namedItem("accountId").value = state.pendingAccount
    state.pendingAccount = null
    lookup.requestSubmit()
  }
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
      if (error instanceof ApiError && error.status === 404) current.replaceChildren(h("p", {}, "No payment backend is connected yet."))
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
    h("p", { className: "note" }, "Sends a signed handshake to the pending revision (else the active one) and records the payment modes it proves.")
  ], "Check payment connection", async () => {
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
    h("p", { className: "crumbs" }, "Setup > Connect payment backend"),
    h("section", {}, h("h3", {}, "Current connection"), current),
    h("section", {}, h("h3", { id: "connect-heading" }, "Connect payment backend"), connect),
    h("section", {}, h("h3", { id: "check-heading" }, "Check payment connection"), check, checkResult))
  load()
}

const actionsScreen = (main) => {
  const slot = h("div")
  const lookup = form({ id: "action-lookup", className: "inline", "aria-label": "Open an action request" }, [
    field("Action request id", { name: "actionRequestId", required: true }, "The id the intake answered, or one from the list below.")
  ], "Open action request", async (formElement) => {
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
        action.history.map((entry) => [entry.seq, entry.at, entry.trigger, entry.fromState || "", entry.toState, entry.detail ? json(entry.detail) : ""])))
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
  main.append(h("section", {}, lookup), h("section", { "aria-label": "Action request" }, slot),
    h("section", { "aria-labelledby": "recent-actions-heading" }, h("h3", { id: "recent-actions-heading" }, "Recent action requests"), recentFilters, recentSlot))
  showRecent({})
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
  ], "Open gate", async (formElement) => show(await api("GET", "/feature-gates/" + encodeURIComponent(value(formElement, "gateId")))))
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
    h("section", { "aria-label": "Feature gate" }, slot),
    h("section", {}, h("h3", { id: "create-gate-heading" }, "Create a gate"), create),
    h("section", { "aria-labelledby": "gates-heading" }, h("h3", { id: "gates-heading" }, "Recent feature gates"), gates))
}

// ---- navigation ----
const screens = {
  keys: { title: "Direct API keys", render: keysScreen },
  events: { title: "Events", render: eventsScreen },
  account: { title: "Account profile", render: accountScreen },
  connector: { title: "Payment backend", render: connectorScreen },
  actions: { title: "Action requests", render: actionsScreen },
  gates: { title: "Feature gates", render: gatesScreen }
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
  history.replaceState(null, "", "#/")
  render()
})
window.addEventListener("hashchange", render)
render()
`
