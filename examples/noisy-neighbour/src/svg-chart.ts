/** Small inline-SVG line charts for the HTML report: no script, no network. */

/** Escapes text for HTML and SVG. */
/** The well-behaved clients' colours, in order, and the noisy client's: one palette per report. */
export const WELL_COLOURS: readonly string[] = [
  '#2563eb',
  '#16a34a',
  '#9333ea',
  '#0891b2',
  '#ca8a04',
  '#db2777',
]
export const NOISY_COLOUR = '#dc2626'

export function esc(text: string): string {
  return text.replace(
    /[&<>"]/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c,
  )
}

/**
 * A linear axis from 0 with round ticks: the smallest of 1, 2, 2.5 or 5 times a power of ten
 * that covers `top` (plus a tenth of headroom) in at most 5 steps.
 *
 * @param top - the largest value to show
 * @returns the axis maximum and its ticks
 */
export function niceAxis(top: number): { max: number; ticks: number[] } {
  const want = Math.max(top * 1.1, 1) / 5
  const power = 10 ** Math.floor(Math.log10(want))
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= want) ?? 10 * power
  const n = Math.ceil((top * 1.1) / step)
  return { max: n * step, ticks: Array.from({ length: n + 1 }, (_, i) => i * step) }
}

/** One line of a chart: `[x, y]` points; an undefined y breaks the line. */
export interface Series {
  readonly name: string
  readonly colour: string
  readonly points: readonly (readonly [number, number | undefined])[]
  readonly width?: number | undefined
  /** An SVG dash array (`6 4`) for a dashed line. */
  readonly dash?: string | undefined
  /** Draw as steps (the value holds until the next point), for a value that changes in jumps. */
  readonly step?: boolean | undefined
  /** Shade the area under the line. */
  readonly fill?: boolean | undefined
}

/** A vertical axis: linear from 0, or logarithmic. */
export interface YAxis {
  readonly max: number
  /** Logarithmic from this minimum (the max must be above it). */
  readonly logMin?: number | undefined
  readonly ticks: readonly number[]
  readonly format: (v: number) => string
  /** Written above the axis. */
  readonly label: string
}

/** What {@link lineChart} draws. */
export interface LineChart {
  readonly title: string
  readonly width: number
  readonly height: number
  /** The x axis runs from 0 to this many milliseconds. */
  readonly durationMs: number
  readonly y: YAxis
  readonly series: readonly Series[]
  /** A shaded span of time with a label (the slowdown). */
  readonly band?: { readonly fromMs: number; readonly toMs: number; readonly label: string }
  /** Horizontal reference lines (a target). */
  readonly rules?: readonly {
    readonly y: number
    readonly label: string
    readonly colour: string
  }[]
  /** A short line under the title. */
  readonly subtitle?: string | undefined
}

const M = { left: 58, right: 16, bottom: 30 }

const f1 = (v: number): string => v.toFixed(1)

/**
 * A line chart over time, as an SVG `figure`: grid, axes, a legend above the plot, each
 * series a `path` (with its name in `data-series` and its point count in `data-points`, and a
 * `title` that browsers show on hover).
 *
 * @param c - the chart
 * @returns the HTML of the figure
 */
export function lineChart(c: LineChart): string {
  // The legend, in rows under the title (and subtitle); the plot starts below it.
  const legend: string[] = []
  let lx = M.left
  let ly = c.subtitle ? 48 : 34
  for (const s of c.series) {
    const w = 30 + s.name.length * 6.2
    if (lx + w > c.width - M.right) {
      lx = M.left
      ly += 15
    }
    legend.push(
      `<g class="legend-item"><line x1="${f1(lx)}" x2="${f1(lx + 18)}" y1="${ly - 4}" y2="${ly - 4}" stroke="${s.colour}" stroke-width="${Math.max(2, s.width ?? 1.8)}"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>` +
        `<text x="${f1(lx + 22)}" y="${ly}">${esc(s.name)}</text></g>`,
    )
    lx += w
  }
  const top = ly + 22
  const plotW = c.width - M.left - M.right
  const plotH = c.height - top - M.bottom
  const bottom = c.height - M.bottom
  const x = (t: number): number =>
    M.left + (Math.min(Math.max(t, 0), c.durationMs) / c.durationMs) * plotW
  const y = (v: number): number => {
    const { max, logMin } = c.y
    const frac =
      logMin === undefined
        ? Math.min(Math.max(v, 0), max) / max
        : Math.log(Math.min(Math.max(v, logMin), max) / logMin) / Math.log(max / logMin)
    return bottom - frac * plotH
  }
  const parts: string[] = []
  if (c.band) {
    const from = x(c.band.fromMs)
    const to = x(c.band.toMs)
    parts.push(
      `<rect class="band" x="${f1(from)}" y="${top}" width="${f1(to - from)}" height="${plotH}" fill="#f1f5f9"/>` +
        `<line x1="${f1(from)}" x2="${f1(from)}" y1="${top}" y2="${bottom}" stroke="#64748b" stroke-dasharray="3 3"/>` +
        `<text x="${f1(from + 6)}" y="${top + 13}" style="fill:#475569">${esc(c.band.label)}</text>`,
    )
  }
  for (const v of c.y.ticks) {
    parts.push(
      `<line x1="${M.left}" x2="${c.width - M.right}" y1="${f1(y(v))}" y2="${f1(y(v))}" stroke="#e5e7eb"/>` +
        `<text x="${M.left - 6}" y="${f1(y(v) + 4)}" text-anchor="end">${esc(c.y.format(v))}</text>`,
    )
  }
  parts.push(
    `<text x="${M.left - 6}" y="${top - 14}" text-anchor="end" style="fill:#555">${esc(c.y.label)}</text>`,
  )
  const step = c.durationMs > 20_000 ? 5000 : c.durationMs > 6000 ? 1000 : 500
  parts.push(
    `<line x1="${M.left}" x2="${c.width - M.right}" y1="${bottom}" y2="${bottom}" stroke="#555"/>`,
  )
  for (let t = 0; t <= c.durationMs; t += step) {
    parts.push(
      `<line x1="${f1(x(t))}" x2="${f1(x(t))}" y1="${bottom}" y2="${bottom + 4}" stroke="#555"/>` +
        `<text x="${f1(x(t))}" y="${bottom + 16}" text-anchor="middle">${t / 1000}s</text>`,
    )
  }
  for (const r of c.rules ?? []) {
    parts.push(
      `<line class="rule" x1="${M.left}" x2="${c.width - M.right}" y1="${f1(y(r.y))}" y2="${f1(y(r.y))}" stroke="${r.colour}" stroke-dasharray="6 4"/>` +
        `<text x="${M.left + 4}" y="${f1(y(r.y) - 4)}" style="fill:${r.colour}">${esc(r.label)}</text>`,
    )
  }
  for (const s of c.series) {
    const segments: string[] = []
    let open = false
    let count = 0
    for (const [t, v] of s.points) {
      if (v === undefined) {
        open = false
        continue
      }
      count++
      const px = f1(x(t))
      const py = f1(y(v))
      if (!open) segments.push(`M${px} ${py}`)
      else if (s.step) segments.push(`H${px}V${py}`)
      else segments.push(`L${px} ${py}`)
      open = true
    }
    const d = segments.join('')
    if (s.fill && d) {
      const defined = s.points.filter((p) => p[1] !== undefined)
      const first = defined[0]
      const last = defined[defined.length - 1]
      if (first && last) {
        parts.push(
          `<path d="${d}V${bottom}H${f1(x(first[0]))}Z" fill="${s.colour}" fill-opacity="0.12" stroke="none"/>`,
        )
      }
    }
    parts.push(
      `<path class="series" data-series="${esc(s.name)}" data-points="${count}" d="${d}" fill="none" stroke="${s.colour}" stroke-width="${s.width ?? 1.8}" stroke-linejoin="round"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}><title>${esc(s.name)}</title></path>`,
    )
  }
  const subtitle = c.subtitle
    ? `<text x="${M.left}" y="31" style="fill:#555">${esc(c.subtitle)}</text>`
    : ''
  return (
    `<figure><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${c.width} ${c.height}" width="${c.width}" height="${c.height}" role="img" aria-label="${esc(c.title)}">` +
    `<text class="title" x="${M.left}" y="16" font-weight="600">${esc(c.title)}</text>${subtitle}${legend.join('')}${parts.join('')}</svg></figure>`
  )
}
