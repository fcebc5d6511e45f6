// The summaries every benchmark reports, computed one way: medians of interleaved rounds, and
// each round's ratio to a reference measured in the same round, with the range over rounds
// (on this kind of shared machine a ratio moves more between runs than most changes do, so
// the range is printed beside it).

/** The median of `xs`: the middle value, or the mean of the two middle values. */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

/** Each round's value over the reference's value of the same round. */
export function pairedRatios(values, references) {
  return values.map((x, r) => x / references[r])
}

/** Ratios as `1.23x (1.10-1.40)`: their median, then the lowest and highest. */
export function ratioRange(ratios, digits = 2) {
  const f = (x) => x.toFixed(digits)
  return `${f(median(ratios))}x (${f(Math.min(...ratios))}-${f(Math.max(...ratios))})`
}
