// The Floodgate rules admin page: plain browser JavaScript, no build step. It only talks to
// the /v1 API of the service that serves it. Everything from the server is inserted with
// textContent, never as HTML.

const $ = (selector) => document.querySelector(selector)
const TOKEN_KEY = 'floodgate-rules-token'

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) ?? '',
  services: [],
  service: '',
  revision: undefined,
  /**
   * The set's version (its ETag without quotes): what a write is conditional on. Unlike the
   * revision it names one state for good, even after the service lost its data and counts again.
   */
  version: undefined,
  rules: [],
  /** The id of the rule being edited, or '' for a new one; undefined when the editor is closed. */
  editing: undefined,
  /** Fields of the edited rule that the form has no input for (kept as they are). */
  extra: {},
  /** The edited rule as it was when the editor opened (undefined for a new rule). */
  base: undefined,
  /** The revision and version the editor's rule was loaded at: a save is conditional on the version. */
  editRevision: undefined,
  editVersion: undefined,
  /** Set while a save met someone else's change: { theirs, revision, version } until the user chooses. */
  conflict: undefined,
  /** True while a save is in flight. */
  saving: false,
  /** What the token is: { name, role, services } (role null without a token). */
  me: { name: null, role: null, services: null },
  /** Audit paging: the rule filter, and the `before` cursor of each page shown so far. */
  audit: { rule: '', pages: [undefined] },
  /**
   * Bumped by every load of a service's rules and of an audit page: an answer that arrives
   * after a newer load began (a slow service, and the owner picked another) is dropped.
   */
  loads: { service: 0, audit: 0 },
}

const AUDIT_PAGE = 20

/** May the token change this service's rules? (The service decides; this only hides buttons.) */
function canWrite(service) {
  const { role, services } = state.me
  if (role === 'admin') return true
  return role === 'write' && Array.isArray(services) && services.includes(service)
}

// --- talking to the API ----------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail ?? `HTTP ${status}`)
    this.status = status
    this.problem = problem ?? {}
  }
}

async function api(method, path, { body, ifMatch } = {}) {
  const headers = { accept: 'application/json' }
  if (state.token) headers.authorization = `Bearer ${state.token}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (ifMatch !== undefined) headers['if-match'] = `"${ifMatch}"`
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
  })
  const text = await response.text()
  let data
  try {
    data = text ? JSON.parse(text) : undefined
  } catch {
    data = undefined
  }
  if (!response.ok) throw new ApiError(response.status, data)
  return data
}

const servicePath = (service) => `/v1/services/${encodeURIComponent(service)}`

// --- status line -----------------------------------------------------------------------------

function say(message, isError = false) {
  const status = $('#status')
  status.textContent = message
  status.classList.toggle('error', isError)
}

function explain(err) {
  if (!(err instanceof ApiError)) return `Could not reach the service: ${err.message}`
  if (err.status === 401) return `${err.message}. Paste a token at the top of the page.`
  if (err.status === 403) return `${err.message}. Use a token that may change this service.`
  return err.message
}

// --- services --------------------------------------------------------------------------------

async function loadMe() {
  try {
    state.me = await api('GET', '/v1/me')
  } catch (err) {
    state.me = { name: null, role: null, services: null }
    say(explain(err), true)
  }
  showToken()
}

async function loadServices() {
  let loaded = false
  await loadMe()
  try {
    const data = await api('GET', '/v1/services')
    state.services = data.services
    loaded = true
  } catch (err) {
    state.services = []
    say(explain(err), true)
  }
  const select = $('#service')
  select.replaceChildren()
  for (const s of state.services) {
    const option = document.createElement('option')
    option.value = s.name
    option.textContent = `${s.name} (${s.rules} rule${s.rules === 1 ? '' : 's'})`
    select.append(option)
  }
  const wanted = new URLSearchParams(location.hash.slice(1)).get('service')
  const names = state.services.map((s) => s.name)
  state.service = names.includes(wanted) ? wanted : (names[0] ?? '')
  select.value = state.service
  $('#new-service').hidden = state.me.role !== 'admin'
  $('#new-service').open = loaded && state.services.length === 0
  if (loaded && state.services.length === 0) {
    say(
      state.me.role === 'admin'
        ? 'No services yet. Create one below.'
        : 'No services yet. An admin token creates them.',
    )
  }
  await loadService()
}

async function createService(event) {
  event.preventDefault()
  const name = $('#new-service-name').value.trim()
  try {
    await api('PUT', servicePath(name))
    location.hash = `service=${encodeURIComponent(name)}`
    $('#new-service-name').value = ''
    say(`Service ${name} is ready.`)
    await loadServices()
  } catch (err) {
    say(explain(err), true)
  }
}

// --- rules -----------------------------------------------------------------------------------

// One notation for every limit, the rules' own `rate` form: `100/1m`. A rule with tiers shows
// each tier's, by name, then the key part that picks the tier and the tier of other requests:
// `free 100/1m, pro 1000/1m by header:x-plan; others: free`.
function describeLimit(rule) {
  if (rule.algorithm === 'adaptive') return describeAdaptive(rule.adaptive)
  const own = describeOneLimit(rule)
  const tiers = rule.tiers
  if (!isObject(tiers) || !isObject(tiers.values)) return own
  // By name: the database keeps an object's keys in an order of its own, not as written.
  const names = Object.keys(tiers.values).sort()
  const each = names.map((name) => {
    const tier = tiers.values[name]
    const limit = isObject(tier) ? describeOneLimit({ window: rule.window, ...tier }) : ''
    return `${name} ${limit}`.trim()
  })
  const others =
    typeof tiers.default === 'string' ? `others: ${tiers.default}` : own ? `others: ${own}` : ''
  return [`${each.join(', ')} by ${tiers.by}`, others].filter(Boolean).join('; ')
}

/** An adaptive rule's limit moves: what it holds the latency to, and its bounds in flight. */
function describeAdaptive(settings) {
  const a = isObject(settings) ? settings : {}
  const ms = (v) => (typeof v === 'number' ? `${v}ms` : String(v))
  const p = `p${a.percentile ?? 99}`
  const goal = a.target === undefined ? `${p} near its baseline` : `${p} ≤ ${ms(a.target)}`
  const gate = typeof a.gate === 'string' ? `, gate ${a.gate}` : ''
  const priority = a.priority === 'background' ? ', background' : ''
  return `adaptive: ${goal}, ${a.minLimit ?? 1}-${a.maxLimit ?? 1000} in flight${gate}${priority}`
}

function describeOneLimit(rule) {
  if (rule.rate) return String(rule.rate)
  if (rule.limit === undefined) return ''
  if (rule.window === undefined) return `${rule.limit} in flight`
  const window = typeof rule.window === 'number' ? `${rule.window}ms` : rule.window
  return `${rule.limit}/${window}`
}

function describeMatch(match) {
  if (match === undefined) return 'every request'
  if (match === false) return 'no HTTP request (limiter.limit() only)'
  return typeof match === 'string' ? match : JSON.stringify(match)
}

function describeOnLimit(onLimit) {
  if (onLimit === undefined) return 'reject 429'
  if (typeof onLimit === 'string') return onLimit
  if (onLimit.action === 'reject') return `reject ${onLimit.status ?? 429}`
  if (onLimit.action === 'queue') return `queue ≤ ${onLimit.maxWait}`
  return onLimit.action
}

function cell(text, code = false, label = '') {
  const td = document.createElement('td')
  if (label) td.dataset.label = label
  if (code) {
    const c = document.createElement('code')
    c.textContent = text
    td.append(c)
  } else td.textContent = text
  return td
}

function renderRules() {
  const body = $('#rules tbody')
  body.replaceChildren()
  const writable = Boolean(state.service) && canWrite(state.service)
  for (const rule of state.rules) {
    const tr = document.createElement('tr')
    tr.dataset.ruleId = rule.id
    const idCell = cell(rule.id, true, 'Id')
    if (typeof rule.description === 'string' && rule.description) {
      const description = document.createElement('span')
      description.className = 'description'
      description.textContent = rule.description
      idCell.append(description)
    }
    tr.append(
      idCell,
      cell(describeMatch(rule.match), false, 'Match'),
      cell(describeLimit(rule), false, 'Limit'),
      cell(Array.isArray(rule.key) ? rule.key.join(', ') : (rule.key ?? 'ip'), false, 'Key'),
      cell(rule.algorithm ?? 'token-bucket', false, 'Algorithm'),
      cell(describeOnLimit(rule.onLimit) + (rule.shadow ? ' (shadow)' : ''), false, 'Over limit'),
    )
    const actions = document.createElement('td')
    actions.className = 'actions'
    // A token that may not change the service sees no edit controls at all.
    if (!writable) {
      tr.append(actions)
      body.append(tr)
      continue
    }
    const edit = document.createElement('button')
    edit.type = 'button'
    edit.textContent = 'Edit'
    edit.setAttribute('aria-label', `Edit rule ${rule.id}`)
    edit.addEventListener('click', () => openEditor(rule))
    const del = document.createElement('button')
    del.type = 'button'
    del.className = 'danger'
    del.textContent = 'Delete'
    del.setAttribute('aria-label', `Delete rule ${rule.id}`)
    del.addEventListener('click', () => confirmDelete(del, rule.id))
    actions.append(edit, ' ', del)
    tr.append(actions)
    body.append(tr)
  }
  $('#rules-empty').hidden = state.rules.length > 0 || !state.service
  $('#rules').hidden = state.rules.length === 0
  $('#revision').textContent = state.revision === undefined ? '' : `revision ${state.revision}`
  $('#new-rule').hidden = !writable
  $('#read-only').hidden = writable || !state.service
  renderAuditFilter()
}

async function loadService() {
  if (!state.service) {
    state.rules = []
    state.revision = undefined
    state.version = undefined
    renderRules()
    renderAudit([], false)
    return
  }
  // After a change or a reload, the audit shows its newest page again (the filter stays).
  state.audit.pages = [undefined]
  const ticket = ++state.loads.service
  // An audit page still on its way is of what was shown before: drop it too.
  state.loads.audit++
  try {
    const set = await api('GET', `${servicePath(state.service)}/rules`)
    if (ticket !== state.loads.service) return
    state.rules = set.rules
    state.revision = set.revision
    state.version = set.version
    const option = [...$('#service').options].find((o) => o.value === state.service)
    if (option)
      option.textContent = `${state.service} (${set.rules.length} rule${set.rules.length === 1 ? '' : 's'})`
    renderRules()
    // The fleet view (fleet.js) follows the service shown here.
    document.dispatchEvent(
      new CustomEvent('floodgate:service', {
        detail: {
          service: state.service,
          token: state.token,
          version: state.version,
          writable: canWrite(state.service),
        },
      }),
    )
    await loadAudit()
  } catch (err) {
    if (ticket === state.loads.service) say(explain(err), true)
  }
}

// Deleting takes two clicks on the same button, so a slip does not remove a rule.
function confirmDelete(button, id) {
  if (button.dataset.armed !== 'true') {
    button.dataset.armed = 'true'
    button.textContent = 'Really delete?'
    setTimeout(() => {
      if (button.disabled) return
      button.dataset.armed = 'false'
      button.textContent = 'Delete'
    }, 5000)
    return
  }
  // One delete at a time: a further click would send the same revision again and read the
  // first delete as someone else's change.
  button.disabled = true
  button.textContent = 'Deleting…'
  void deleteRule(id).finally(() => {
    // After a delete the list is drawn anew; this button is still shown only if it failed.
    button.disabled = false
    button.dataset.armed = 'false'
    button.textContent = 'Delete'
  })
}

async function deleteRule(id) {
  try {
    const result = await api(
      'DELETE',
      `${servicePath(state.service)}/rules/${encodeURIComponent(id)}`,
      {
        ifMatch: state.version,
      },
    )
    say(`Deleted rule ${id} (revision ${result.revision}).`)
    if (state.editing === id) closeEditor()
    await loadService()
  } catch (err) {
    if (err.status === 412) {
      await loadService()
      say(
        `Not deleted: someone changed these rules (now revision ${state.revision}). Check the list and delete again if you still mean to.`,
        true,
      )
    } else say(explain(err), true)
  }
}

// --- the editor ------------------------------------------------------------------------------

const FORM_FIELDS = [
  'id',
  'description',
  'match',
  'key',
  'limit',
  'window',
  'rate',
  'algorithm',
  'burst',
  'cost',
  'onLimit',
  'shadow',
  'deny',
  'allow',
]
const LISTS = ['deny', 'allow']
const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v)
const field = (name) => $(`#f-${name}`)

/** Fill the form from a rule; fields the form cannot show stay in `state.extra`. */
function fillForm(rule) {
  const extra = { ...rule }
  const set = (name, value) => {
    field(name).value = value === undefined ? '' : String(value)
    delete extra[name]
  }
  set('id', rule.id)
  set('description', rule.description)
  // match: false (a rule used through limiter.limit() only) is the checkbox beside the field.
  field('matchNone').checked = rule.match === false
  if (rule.match === undefined || typeof rule.match === 'string') set('match', rule.match)
  else if (rule.match === false) set('match', undefined)
  else field('match').value = ''
  field('match').disabled = rule.match === false
  if (rule.key === undefined || typeof rule.key === 'string' || Array.isArray(rule.key)) {
    set('key', Array.isArray(rule.key) ? rule.key.join(', ') : rule.key)
  }
  for (const name of ['limit', 'window', 'rate', 'burst', 'cost']) {
    if (rule[name] === undefined || typeof rule[name] !== 'object') set(name, rule[name])
  }
  if (rule.algorithm === undefined || typeof rule.algorithm === 'string')
    set('algorithm', rule.algorithm ?? '')
  field('shadow').checked = rule.shadow === true
  if (rule.shadow === undefined || typeof rule.shadow === 'boolean') delete extra.shadow
  const on = rule.onLimit
  let choice
  if (on === undefined) choice = ''
  else if (on === 'reject' || on === 'drop') choice = on
  else if (typeof on === 'object' && on !== null) {
    if (on.action === 'reject') choice = on.status === 503 ? 'reject-503' : 'reject'
    else if (on.action === 'drop') choice = 'drop'
    else if (on.action === 'queue') {
      choice = 'queue'
      field('maxWait').value = on.maxWait ?? ''
      field('maxQueue').value = on.maxQueue ?? ''
    }
  }
  if (choice !== undefined) {
    field('onLimit').value = choice
    delete extra.onLimit
  }
  $('#queue-fields').hidden = field('onLimit').value !== 'queue'
  // A list's addresses are edited one per line; its other fields (keys, status) stay in the
  // JSON, and a list the form cannot show (not an object, ips not strings) is left to it.
  state.lists = {}
  for (const name of LISTS) {
    const list = rule[name]
    const ips = isObject(list) ? list.ips : undefined
    const shown =
      list === undefined ||
      (isObject(list) &&
        (ips === undefined || (Array.isArray(ips) && ips.every((ip) => typeof ip === 'string'))))
    state.lists[name] = shown
    field(name).value = shown && ips ? ips.join('\n') : ''
  }
  state.extra = extra
}

/** A number when the text is one, else the text itself (so the server names the bad value). */
function numberOrText(text) {
  return text !== '' && Number.isFinite(Number(text)) ? Number(text) : text
}

/** The rule the form describes, plus the fields only the JSON editor knows. */
function readForm() {
  const rule = { ...state.extra }
  const text = (name) => field(name).value.trim()
  const put = (name, value) => {
    if (value === '' || value === undefined) delete rule[name]
    else rule[name] = value
  }
  put('id', text('id'))
  put('description', text('description'))
  if (field('matchNone').checked) rule.match = false
  else if (text('match') !== '' || typeof rule.match !== 'object') put('match', text('match'))
  const parts = text('key')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
  put('key', parts.length > 1 ? parts : parts[0])
  put('limit', numberOrText(text('limit')))
  put('window', numberOrText(text('window')))
  put('rate', text('rate'))
  put('algorithm', text('algorithm'))
  put('burst', numberOrText(text('burst')))
  put('cost', numberOrText(text('cost')))
  const on = text('onLimit')
  if (on === '') delete rule.onLimit
  else if (on === 'reject-503') rule.onLimit = { action: 'reject', status: 503 }
  else if (on === 'queue') {
    rule.onLimit = { action: 'queue', maxWait: numberOrText(text('maxWait')) }
    if (text('maxQueue') !== '') rule.onLimit.maxQueue = numberOrText(text('maxQueue'))
  } else rule.onLimit = on
  if (field('shadow').checked) rule.shadow = true
  else delete rule.shadow
  for (const name of LISTS) {
    if (state.lists?.[name] === false) continue
    const ips = text(name)
      .split(/[\s,]+/)
      .filter(Boolean)
    const { ips: _old, ...rest } = isObject(rule[name]) ? rule[name] : {}
    const list = ips.length > 0 ? { ips, ...rest } : rest
    if (Object.keys(list).length > 0) rule[name] = list
    else delete rule[name]
  }
  // Keep the id first in the JSON view, as people read it.
  const { id, ...rest } = rule
  return id === undefined ? rest : { id, ...rest }
}

function syncJson() {
  field('json').value = JSON.stringify(readForm(), null, 2)
  showFieldError('json', '')
}

function syncFromJson() {
  let rule
  try {
    rule = JSON.parse(field('json').value)
  } catch (err) {
    showFieldError('json', `Not valid JSON yet: ${err.message}`)
    return
  }
  if (rule === null || typeof rule !== 'object' || Array.isArray(rule)) {
    showFieldError('json', 'A rule is a JSON object { … }')
    return
  }
  showFieldError('json', '')
  fillForm(rule)
}

function showFieldError(name, message) {
  const slot = document.querySelector(`.field-error[data-for="${name}"]`)
  if (slot) slot.textContent = message
  const input = name === 'json' ? field('json') : field(name)
  if (input) input.setAttribute('aria-invalid', message ? 'true' : 'false')
}

function clearErrors() {
  for (const slot of document.querySelectorAll('.field-error')) slot.textContent = ''
  for (const input of document.querySelectorAll('[aria-invalid]'))
    input.setAttribute('aria-invalid', 'false')
  const box = $('#editor-errors')
  box.hidden = true
  box.replaceChildren()
}

/** Show the server's `rules[0].limit: …` messages next to the fields they name. */
function showErrors(title, messages) {
  clearErrors()
  const box = $('#editor-errors')
  const heading = document.createElement('strong')
  heading.textContent = title
  const list = document.createElement('ul')
  for (const message of messages) {
    const li = document.createElement('li')
    li.textContent = message
    list.append(li)
    const m = /^rules?(?:\[\d+\])?\.([A-Za-z]+)[^:]*:\s*(.*)$/.exec(message)
    const name = m && FORM_FIELDS.includes(m[1]) ? m[1] : 'json'
    const slot = document.querySelector(`.field-error[data-for="${name}"]`)
    const text = m ? m[2] : message
    if (slot) slot.textContent = slot.textContent ? `${slot.textContent}; ${text}` : text
    const input = name === 'json' ? field('json') : field(name)
    input?.setAttribute('aria-invalid', 'true')
    if (name === 'json') $('#json-details').open = true
  }
  box.append(heading, list)
  box.hidden = false
}

function openEditor(rule) {
  if (!canWrite(state.service)) return
  state.editing = rule ? rule.id : ''
  state.base = rule ? structuredClone(rule) : undefined
  state.editRevision = state.revision
  state.editVersion = state.version
  closeConflict()
  clearErrors()
  for (const name of [...FORM_FIELDS, 'maxWait', 'maxQueue']) {
    const input = field(name)
    if (input.type === 'checkbox') input.checked = false
    else input.value = ''
  }
  fillForm(rule ?? {})
  field('id').readOnly = Boolean(rule)
  $('#editor-title').textContent = rule ? `Edit rule ${rule.id}` : 'New rule'
  $('#editor').hidden = false
  syncJson()
  $('#json-details').open = Object.keys(state.extra).length > 0
  field(rule ? 'limit' : 'id').focus()
}

function closeEditor() {
  state.editing = undefined
  state.base = undefined
  closeConflict()
  $('#editor').hidden = true
  clearErrors()
}

/** A message next to the Save button, where the eye is after clicking it. */
function saveMessage(message, isError = false) {
  const slot = $('#save-message')
  slot.textContent = message
  slot.classList.toggle('error', isError)
}

async function saveRule(event) {
  event.preventDefault()
  // While a conflict is shown, only its two buttons decide: Save would overwrite unseen.
  if (state.conflict) return
  await save(state.editVersion)
}

async function save(ifMatch) {
  // One save at a time: a second click or Enter while the first is in flight would send the
  // same revision again and meet the first save as someone else's change (412).
  if (state.saving) return
  if ($('#json-details').open) syncFromJson()
  const rule = readForm()
  const isNew = state.editing === ''
  state.saving = true
  $('#save').disabled = true
  saveMessage('Saving…')
  try {
    const path = isNew
      ? `${servicePath(state.service)}/rules`
      : `${servicePath(state.service)}/rules/${encodeURIComponent(state.editing)}`
    const result = await api(isNew ? 'POST' : 'PUT', path, { body: rule, ifMatch })
    say(`${isNew ? 'Created' : 'Saved'} rule ${result.rule.id} (revision ${result.revision}).`)
    saveMessage('')
    closeEditor()
    await loadService()
  } catch (err) {
    if (err instanceof ApiError && err.status === 412) {
      saveMessage('Not saved: someone changed these rules; see above.', true)
      await showConflict(rule)
    } else if (err instanceof ApiError && Array.isArray(err.problem.errors)) {
      showErrors('The service refused this rule:', err.problem.errors)
      saveMessage('Not saved: fix the fields marked above.', true)
    } else if (
      err instanceof ApiError &&
      err.status < 500 &&
      err.status !== 401 &&
      err.status !== 403
    ) {
      showErrors('The service refused this rule:', [err.message])
      saveMessage(`Not saved: ${err.message}`, true)
    } else saveMessage(`Not saved: ${explain(err)}`, true)
  } finally {
    state.saving = false
    // A conflict shown keeps Save off until the user picks one of its two buttons.
    $('#save').disabled = state.conflict !== undefined
  }
}

// --- a colleague's change met on save ------------------------------------------------------------

/** Text of a field's value for the diff ('' when absent). */
function shown(value) {
  return value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value)
}

const PAST = { create: 'created', replace: 'replaced', patch: 'patched', delete: 'deleted' }

/**
 * Someone else changed the set since the editor opened: show what they changed (the audit
 * entries since, and the edited rule field by field: as opened, theirs, yours) and let the
 * user choose. Nothing is saved until they do.
 */
async function showConflict(draft) {
  const opened = state.editRevision
  const id = draft.id ?? state.editing
  let theirs
  let revision
  let version
  let changes = []
  try {
    const set = await api('GET', `${servicePath(state.service)}/rules`)
    revision = set.revision
    version = set.version
    theirs = set.rules.find((r) => r.id === id)
    const audit = await api('GET', `${servicePath(state.service)}/audit?limit=50`)
    changes = audit.entries.filter((e) => e.revision > opened)
  } catch (err) {
    saveMessage(`Not saved, and the current rules could not be read: ${explain(err)}`, true)
    return
  }
  state.conflict = { theirs, revision, version }
  $('#save').disabled = true
  $('#conflict-title').textContent =
    `${changes.length === 1 ? 'A change was' : `${changes.length} changes were`} made since you opened this rule (revision ${opened} → ${revision}):`
  const list = $('#conflict-changes')
  list.replaceChildren()
  for (const e of changes.slice().reverse()) {
    const li = document.createElement('li')
    li.textContent = `${e.actor} ${e.action === 'reorder' ? 'reordered the rules' : `${PAST[e.action] ?? e.action} rule ${e.ruleId}`} (revision ${e.revision})`
    list.append(li)
  }
  const body = $('#conflict-diff tbody')
  body.replaceChildren()
  const base = state.base ?? {}
  const theirsOrEmpty = theirs ?? {}
  const fields = [
    ...new Set([...Object.keys(base), ...Object.keys(theirsOrEmpty), ...Object.keys(draft)]),
  ]
  for (const name of fields) {
    const [b, t, m] = [shown(base[name]), shown(theirsOrEmpty[name]), shown(draft[name])]
    if (b === t && t === m) continue
    const tr = document.createElement('tr')
    tr.dataset.field = name
    const th = document.createElement('th')
    th.scope = 'row'
    th.textContent = name
    const cells = [b, t, m].map((text, i) => {
      const td = cell(text || '—', true, ['When you opened it', 'Now on the service', 'Yours'][i])
      // Theirs differs from what you opened: their change, which saving yours would undo.
      if (i === 1 && t !== b) td.className = 'changed-theirs'
      if (i === 2 && m !== b) td.className = 'changed-mine'
      return td
    })
    tr.append(th, ...cells)
    body.append(tr)
  }
  if (theirs === undefined && state.editing !== '') {
    const tr = document.createElement('tr')
    const td = document.createElement('td')
    td.colSpan = 4
    td.textContent = `Rule ${id} was deleted on the service; saving yours creates it again.`
    tr.append(td)
    body.append(tr)
  }
  $('#conflict').hidden = false
  $('#conflict-overwrite').focus()
  // The list and the audit below show the current state too.
  await loadService()
}

function closeConflict() {
  state.conflict = undefined
  $('#conflict').hidden = true
  $('#save').disabled = false
}

/** Save the draft over the colleague's change, knowingly: conditional on the revision shown. */
async function overwrite() {
  const { revision, version, theirs } = state.conflict
  closeConflict()
  // A new rule whose id a colleague created meanwhile: replacing theirs is what was asked.
  if (state.editing === '' && theirs !== undefined) state.editing = theirs.id
  state.editRevision = revision
  state.editVersion = version
  await save(version)
}

/** Drop the draft and edit the rule as it is now on the service. */
function takeTheirs() {
  const { theirs, revision, version } = state.conflict
  closeConflict()
  saveMessage('')
  if (theirs === undefined) {
    closeEditor()
    say('That rule is gone from the service; your draft was discarded.')
    return
  }
  openEditor(theirs)
  state.editRevision = revision
  state.editVersion = version
}

// --- audit trail -----------------------------------------------------------------------------

function json(value) {
  const pre = document.createElement('pre')
  pre.textContent = value === null ? '—' : JSON.stringify(value, null, 2)
  return pre
}

function mark(tag, text) {
  const el = document.createElement(tag)
  el.textContent = text
  return el
}

/**
 * What an entry changed, field by field: removed values struck through, added ones marked,
 * fields that stayed the same left out. A reorder shows the old and the new order.
 */
function describeChange(e) {
  const box = document.createElement('div')
  box.className = 'change'
  if (e.action === 'reorder') {
    const line = document.createElement('div')
    line.append('order: ', mark('del', e.before.join(', ')), ' → ', mark('ins', e.after.join(', ')))
    box.append(line)
    return box
  }
  const before = e.before ?? {}
  const after = e.after ?? {}
  for (const name of [...new Set([...Object.keys(before), ...Object.keys(after)])]) {
    const [b, a] = [shown(before[name]), shown(after[name])]
    if (b === a) continue
    const line = document.createElement('div')
    line.dataset.field = name
    line.append(`${name}: `)
    if (b) line.append(mark('del', b))
    if (b && a) line.append(' → ')
    if (a) line.append(mark('ins', a))
    box.append(line)
  }
  const details = document.createElement('details')
  const summary = document.createElement('summary')
  summary.textContent = 'whole rule'
  const diff = document.createElement('div')
  diff.className = 'diff'
  diff.append(json(e.before), json(e.after))
  details.append(summary, diff)
  box.append(details)
  return box
}

function renderAudit(entries, more) {
  const body = $('#audit tbody')
  body.replaceChildren()
  for (const e of entries) {
    const tr = document.createElement('tr')
    tr.dataset.entryId = String(e.id)
    const when = cell(new Date(e.at).toLocaleString(), false, 'When')
    when.title = e.at
    const change = document.createElement('td')
    change.dataset.label = 'Change'
    change.append(describeChange(e))
    tr.append(
      when,
      cell(e.actor, false, 'Who'),
      cell(e.action, false, 'Action'),
      cell(e.ruleId ?? '', true, 'Rule'),
      cell(String(e.revision), false, 'Revision'),
      change,
    )
    body.append(tr)
  }
  const { pages } = state.audit
  $('#audit-empty').hidden = entries.length > 0
  $('#audit-empty').textContent = state.audit.rule
    ? `No changes to rule ${state.audit.rule}.`
    : 'No changes yet.'
  $('#audit').hidden = entries.length === 0
  $('#audit-newer').disabled = pages.length <= 1
  $('#audit-older').disabled = !more
  $('#audit-page').textContent = pages.length > 1 || more ? `page ${pages.length}` : ''
  state.audit.last = entries.at(-1)?.id
}

/** The filter lists the rules in the set, and keeps a chosen rule that was since deleted. */
function renderAuditFilter() {
  const select = $('#audit-rule')
  const ids = state.rules.map((r) => r.id)
  if (state.audit.rule && !ids.includes(state.audit.rule)) ids.push(state.audit.rule)
  select.replaceChildren(new Option('every rule', ''), ...ids.map((id) => new Option(id, id)))
  select.value = state.audit.rule
}

/** Load the page whose cursor is the last in `state.audit.pages` (newest first). */
async function loadAudit() {
  const before = state.audit.pages.at(-1)
  const query = new URLSearchParams({ limit: String(AUDIT_PAGE + 1) })
  if (before !== undefined) query.set('before', String(before))
  if (state.audit.rule) query.set('rule', state.audit.rule)
  const ticket = ++state.loads.audit
  try {
    const data = await api('GET', `${servicePath(state.service)}/audit?${query}`)
    if (ticket !== state.loads.audit) return
    renderAudit(data.entries.slice(0, AUDIT_PAGE), data.entries.length > AUDIT_PAGE)
  } catch (err) {
    if (ticket === state.loads.audit) say(explain(err), true)
  }
}

function resetAudit(rule = '') {
  state.audit = { rule, pages: [undefined] }
}

// --- token -----------------------------------------------------------------------------------

function showToken() {
  const { name, role } = state.me
  $('#token-state').textContent = !state.token
    ? 'no token: read-only'
    : role
      ? `token set: ${name} (${role}; kept for this tab only)`
      : 'token set (kept for this tab only)'
}

async function useToken(event) {
  event.preventDefault()
  state.token = $('#token').value.trim()
  $('#token').value = ''
  if (state.token) sessionStorage.setItem(TOKEN_KEY, state.token)
  else sessionStorage.removeItem(TOKEN_KEY)
  closeEditor()
  say('')
  await loadServices()
}

// --- wiring ----------------------------------------------------------------------------------

function main() {
  $('#token-form').addEventListener('submit', (e) => void useToken(e))
  $('#new-service-form').addEventListener('submit', (e) => void createService(e))
  $('#service').addEventListener('change', () => {
    state.service = $('#service').value
    location.hash = `service=${encodeURIComponent(state.service)}`
    closeEditor()
    resetAudit()
    void loadService()
  })
  $('#audit-rule').addEventListener('change', () => {
    resetAudit($('#audit-rule').value)
    void loadAudit()
  })
  $('#audit-older').addEventListener('click', () => {
    state.audit.pages.push(state.audit.last)
    void loadAudit()
  })
  $('#audit-newer').addEventListener('click', () => {
    if (state.audit.pages.length > 1) state.audit.pages.pop()
    void loadAudit()
  })
  $('#conflict-overwrite').addEventListener('click', () => void overwrite())
  $('#conflict-theirs').addEventListener('click', takeTheirs)
  $('#reload').addEventListener('click', () => void loadServices())
  $('#new-rule').addEventListener('click', () => openEditor(undefined))
  $('#cancel').addEventListener('click', closeEditor)
  $('#rule-form').addEventListener('submit', (e) => void saveRule(e))
  $('#rule-form').addEventListener('input', (e) => {
    if (e.target === field('json')) syncFromJson()
    else {
      $('#queue-fields').hidden = field('onLimit').value !== 'queue'
      field('match').disabled = field('matchNone').checked
      syncJson()
    }
  })
  window.addEventListener('hashchange', () => {
    const wanted = new URLSearchParams(location.hash.slice(1)).get('service')
    if (wanted && wanted !== state.service && state.services.some((s) => s.name === wanted)) {
      state.service = wanted
      $('#service').value = wanted
      resetAudit()
      void loadService()
    }
  })
  // fleet.js changed a rule (enforced a shadow rule): show the new set and its audit entry.
  document.addEventListener('floodgate:rules-changed', () => void loadService())
  showToken()
  void loadServices()
}

main()
