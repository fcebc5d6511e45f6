// The fleet view of the admin page: what the hosts of the service shown reported with their
// polls (GET /v1/services/:service/fleet), as charts of decisions per second per rule, the
// clients refused most often, and for a shadow rule what enforcing it would have refused.
// Plain browser JavaScript; charts by uPlot (window.uPlot, served from this origin).
// Everything from the server is inserted with textContent, never as HTML.

const $ = (selector) => document.querySelector(selector)

/** The series drawn per rule: report field, legend name, colour, dashed. */
const SERIES = [
  ['allowed', 'allowed', '#2f7d32', false],
  ['queued', 'queued', '#1565c0', false],
  ['rejected', 'rejected', '#c62828', false],
  ['shadowRejected', 'would reject (shadow)', '#7b1fa2', true],
]

const fleet = {
  service: '',
  token: '',
  /** The set's version (its ETag without quotes) shown: enforcing a rule is conditional on it. */
  version: undefined,
  /** Whether the token may change this service (admin.js asks GET /v1/me). */
  writable: false,
  /** uPlot instances by rule id, kept across refreshes so the page does not flicker. */
  charts: new Map(),
  timer: undefined,
  /** Bumped by every load, so a slow answer for an older service is dropped. */
  generation: 0,
}

async function call(method, path, { body, ifMatch } = {}) {
  const headers = { accept: 'application/json' }
  if (fleet.token) headers.authorization = `Bearer ${fleet.token}`
  if (body !== undefined) headers['content-type'] = 'application/merge-patch+json'
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
  if (!response.ok) {
    const err = new Error(data?.detail ?? `HTTP ${response.status}`)
    err.status = response.status
    throw err
  }
  return data
}

const servicePath = (service) => `/v1/services/${encodeURIComponent(service)}`

function element(tag, { text, className, attrs } = {}) {
  const el = document.createElement(tag)
  if (text !== undefined) el.textContent = text
  if (className) el.className = className
  for (const [name, value] of Object.entries(attrs ?? {})) el.setAttribute(name, value)
  return el
}

// Characters that show nothing or move the text around them: controls (C0 and C1, which a
// report may carry), format characters (bidi overrides, embeddings, isolates and marks,
// zero-width spaces and joiners, the BOM) and the line and paragraph separators. In a rule id
// or a client key from a host they would let one key look like another ('\u202e' + 'ecila'
// shows as 'alice'), so each is shown as a visible U+XXXX mark instead.
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u

/**
 * An element showing an identifier a host reported (rule id, client key) so that two different
 * ones never look the same: its hidden characters (see HIDDEN) as marked `U+XXXX` code points.
 */
export function identifier(tag, text, className) {
  const el = element(tag, { className })
  let plain = ''
  for (const ch of text) {
    if (!HIDDEN.test(ch)) {
      plain += ch
      continue
    }
    if (plain) el.append(plain)
    plain = ''
    const code = `U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}`
    el.append(
      element('span', {
        text: code,
        className: 'hidden-char',
        attrs: { title: `invisible character ${code}` },
      }),
    )
  }
  if (plain) el.append(plain)
  return el
}

const number = (n) => n.toLocaleString('en-US', { maximumFractionDigits: 2 })
const sum = (values) => values.reduce((a, b) => a + b, 0)

function ago(ms) {
  const s = Math.max(0, Math.round(ms / 1000))
  return s < 60 ? `${s} s ago` : `${Math.round(s / 60)} min ago`
}

function span(ms) {
  return ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`
}

// --- charts ----------------------------------------------------------------------------------

function chartData(view, rule) {
  return [view.times.map((t) => t / 1000), ...SERIES.map(([field]) => rule.perSecond[field])]
}

function chartWidth(box) {
  return Math.max(260, Math.floor(box.getBoundingClientRect().width) - 4)
}

function drawChart(box, view, rule) {
  const existing = fleet.charts.get(rule.id)
  const data = chartData(view, rule)
  if (existing && existing.root.isConnected && box.contains(existing.root)) {
    existing.setData(data)
    return
  }
  existing?.destroy()
  const opts = {
    width: chartWidth(box),
    height: 180,
    scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
    axes: [{}, { label: 'per second', size: 56 }],
    series: [
      { label: 'time' },
      ...SERIES.map(([, label, stroke, dashed]) => ({
        label,
        stroke,
        width: 2,
        ...(dashed ? { dash: [6, 4] } : {}),
        value: (_u, v) => (v == null ? '–' : `${number(v)}/s`),
      })),
    ],
    legend: { live: true },
  }
  const chart = new window.uPlot(opts, data, box)
  fleet.charts.set(rule.id, chart)
}

// --- rendering -------------------------------------------------------------------------------

function clientTable(rule, caption, countLabel) {
  const table = element('table', { className: 'fleet-top' })
  table.append(element('caption', { text: caption }))
  const head = element('tr')
  head.append(
    element('th', { text: 'Client', attrs: { scope: 'col' } }),
    element('th', { text: countLabel, attrs: { scope: 'col' } }),
  )
  const thead = element('thead')
  thead.append(head)
  table.append(thead)
  const body = element('tbody')
  for (const { client, count } of rule.top) {
    const row = element('tr')
    row.append(identifier('td', client, 'mono'))
    row.append(element('td', { text: number(count), className: 'num' }))
    body.append(row)
  }
  table.append(body)
  return table
}

function enforceButton(rule) {
  const wrap = element('div', { className: 'inline fleet-enforce' })
  // A token that may not change the service gets no button, only what it would take.
  if (!fleet.writable) {
    wrap.append(
      element('small', {
        className: 'muted',
        text: 'Enforcing needs a token that may change this service.',
      }),
    )
    return wrap
  }
  const button = element('button', {
    text: 'Enforce this rule',
    attrs: { type: 'button', 'data-enforce': rule.id },
  })
  const note = element('small', { className: 'field-error', attrs: { role: 'alert' } })
  // Two clicks on the same button, like Delete: enforcing starts refusing real traffic.
  button.addEventListener('click', () => {
    if (button.dataset.armed !== 'true') {
      button.dataset.armed = 'true'
      button.textContent = 'Click again to enforce'
      setTimeout(() => {
        button.dataset.armed = 'false'
        button.textContent = 'Enforce this rule'
      }, 4000)
      return
    }
    void enforce(rule.id, button, note)
  })
  wrap.append(button, note)
  return wrap
}

async function enforce(id, button, note) {
  button.disabled = true
  note.textContent = ''
  try {
    // One merge patch: the rule loses `shadow`; the service writes the audit entry.
    await call('PATCH', `${servicePath(fleet.service)}/rules/${encodeURIComponent(id)}`, {
      body: { shadow: null },
      ifMatch: fleet.version,
    })
    document.dispatchEvent(new CustomEvent('floodgate:rules-changed'))
  } catch (err) {
    button.disabled = false
    button.dataset.armed = 'false'
    button.textContent = 'Enforce this rule'
    note.textContent =
      err.status === 401 || err.status === 403
        ? `${err.message}. Enforcing needs a token that may change this service.`
        : err.status === 412
          ? 'The rules changed meanwhile: reload and look again before enforcing.'
          : err.message
  }
}

function shadowSummary(view, rule) {
  const box = element('div', { className: 'fleet-shadow' })
  const refused = rule.totals.shadowRejected
  const people = rule.top.length
  box.append(
    element('p', {
      className: 'fleet-would',
      text:
        refused === 0
          ? `Enforcing it would have refused nothing in the last ${span(view.windowMs)}.`
          : `Enforcing it would have refused ${number(refused)} request${refused === 1 ? '' : 's'} in the last ${span(view.windowMs)}` +
            (people > 0 ? `, from the ${people} client${people === 1 ? '' : 's'} below.` : '.'),
      attrs: { 'data-would-refuse': String(refused) },
    }),
  )
  if (people > 0) box.append(clientTable(rule, 'Would have refused', 'Requests'))
  box.append(enforceButton(rule))
  return box
}

function totalsText(view, rule) {
  const t = rule.totals
  // A shadow rule refuses nothing: what it would have refused is its only count.
  if (rule.shadow)
    return `Last ${span(view.windowMs)}: ${number(t.shadowRejected)} would reject (in shadow, it refuses nothing).`
  const parts = [
    `${number(t.allowed)} allowed`,
    `${number(t.queued)} queued`,
    `${number(t.rejected)} rejected`,
    ...(t.shadowRejected ? [`${number(t.shadowRejected)} would reject`] : []),
    ...(t.dropped ? [`${number(t.dropped)} dropped from the queue`] : []),
    ...(t.failedOpen ? [`${number(t.failedOpen)} passed unjudged (store failed)`] : []),
  ]
  return `Last ${span(view.windowMs)}: ${parts.join(', ')}.`
}

function ruleCard(view, rule) {
  const card = element('article', { className: 'fleet-rule', attrs: { 'data-rule': rule.id } })
  const title = element('h3')
  title.append(identifier('span', rule.id, 'mono'))
  if (rule.shadow) title.append(element('span', { text: 'shadow', className: 'badge shadow' }))
  if (rule.shadow === null)
    title.append(element('span', { text: 'not in the rules', className: 'badge' }))
  card.append(title)
  card.append(element('p', { className: 'muted fleet-totals', text: totalsText(view, rule) }))
  const chart = element('div', { className: 'fleet-chart', attrs: { 'data-chart': rule.id } })
  card.append(chart)
  if (rule.shadow) card.append(shadowSummary(view, rule))
  else if (rule.top.length > 0) card.append(clientTable(rule, 'Top limited clients', 'Refused'))
  return { card, chart }
}

function render(view) {
  $('#fleet-section').hidden = false
  $('#fleet-error').hidden = true
  const hosts = view.hosts.map((h) => `${h.host} (${ago(Date.now() - h.lastSeen)})`)
  $('#fleet-hosts').textContent =
    view.hostCount === 0
      ? ''
      : `${view.hostCount} host${view.hostCount === 1 ? '' : 's'} reporting: ${hosts.slice(0, 5).join(', ')}${view.hostCount > 5 ? ', …' : ''} · ${span(view.bucketMs)} steps over ${span(view.windowMs)}`
  $('#fleet-empty').hidden = view.rules.length > 0
  const silent = $('#fleet-silent')
  silent.hidden = view.rules.length === 0 || view.silentRules.length === 0
  silent.textContent = `No host reported decisions of: ${view.silentRules.join(', ')}.`

  // Rebuild everything only when the rules or their shadow flags changed; otherwise each card
  // is rebuilt around its existing chart, which only gets new data (no flicker, and the
  // legend keeps its place). An armed Enforce button stays armed.
  const container = $('#fleet-rules')
  const shape = JSON.stringify(view.rules.map((r) => [r.id, r.shadow]))
  if (container.dataset.shape !== shape) {
    for (const chart of fleet.charts.values()) chart.destroy()
    fleet.charts.clear()
    container.replaceChildren()
    container.dataset.shape = shape
    for (const rule of view.rules) {
      const { card, chart } = ruleCard(view, rule)
      container.append(card)
      drawChart(chart, view, rule)
    }
  } else {
    for (const rule of view.rules) {
      const old = container.querySelector(`[data-rule="${CSS.escape(rule.id)}"]`)
      const armed = old.querySelector('[data-enforce][data-armed="true"]')
      if (armed) continue
      const { card, chart } = ruleCard(view, rule)
      const oldChart = old.querySelector('.fleet-chart')
      chart.replaceWith(oldChart)
      old.replaceWith(card)
      drawChart(oldChart, view, rule)
    }
  }
  // Points per chart, for people and tests: how many complete buckets had any decision.
  for (const rule of view.rules) {
    const box = container.querySelector(`[data-chart="${CSS.escape(rule.id)}"]`)
    box.dataset.points = String(
      view.times.filter((_t, i) => sum(SERIES.map(([f]) => rule.perSecond[f][i])) > 0).length,
    )
  }
}

async function load() {
  const generation = ++fleet.generation
  if (!fleet.service) {
    $('#fleet-section').hidden = true
    return
  }
  try {
    const view = await call('GET', `${servicePath(fleet.service)}/fleet`)
    if (generation !== fleet.generation) return
    render(view)
    clearTimeout(fleet.timer)
    // Refresh once per bucket (a new point), at most every 2 s and at least every 10 s.
    fleet.timer = setTimeout(load, Math.min(10_000, Math.max(2000, view.bucketMs)))
  } catch (err) {
    if (generation !== fleet.generation) return
    // A service without reports (fleet: false) has no /fleet: leave the section out.
    $('#fleet-section').hidden = err.status === 404
    $('#fleet-error').hidden = err.status === 404
    $('#fleet-error').textContent = `Could not load what the hosts reported: ${err.message}`
  }
}

document.addEventListener('floodgate:service', (event) => {
  const { service, token, version, writable } = event.detail
  if (service !== fleet.service) {
    for (const chart of fleet.charts.values()) chart.destroy()
    fleet.charts.clear()
    $('#fleet-rules').replaceChildren()
    delete $('#fleet-rules').dataset.shape
  }
  Object.assign(fleet, { service, token, version, writable })
  clearTimeout(fleet.timer)
  void load()
})

window.addEventListener('resize', () => {
  for (const chart of fleet.charts.values()) {
    const box = chart.root.parentElement
    if (box) chart.setSize({ width: chartWidth(box), height: 180 })
  }
})
