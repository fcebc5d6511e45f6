type Encoding = 'utf-8' | 'utf-16le' | 'utf-16be'

const NAMES: Record<Encoding, string> = {
  'utf-8': 'UTF-8',
  'utf-16le': 'UTF-16LE',
  'utf-16be': 'UTF-16BE',
}

// The bytes a text holding U+FFFD itself has for it: the lenient decoder's replacements are
// told apart from the writer's own by the bytes they stand for.
const REPLACEMENT_BYTES: Record<Encoding, readonly number[]> = {
  'utf-8': [0xef, 0xbf, 0xbd],
  'utf-16le': [0xfd, 0xff],
  'utf-16be': [0xff, 0xfd],
}

/**
 * The text of a rules file or of a rules body: UTF-8, or UTF-16 when a byte order mark says
 * so. A byte order mark is what Windows editors and shells write (Notepad, PowerShell's
 * `Set-Content -Encoding UTF8`, Windows PowerShell's `>` in UTF-16), and it is never part of
 * the text: left in, JSON.parse refuses the file over a character nobody can see.
 *
 * Bytes that are not text in that encoding (a file saved as Latin-1 or Windows-1252, a
 * truncated sequence) are refused, never replaced by U+FFFD: a header value, a key value or a
 * description would otherwise change without a word, and a rule would stop matching.
 *
 * @param bytes - the file or body as read
 * @returns the text, without a byte order mark
 * @throws RangeError saying where the first bad byte is: `is not valid UTF-8 at line 3,
 * column 18 (byte 57)`, to follow the name of what was read
 */
export function decodeText(bytes: Uint8Array): string {
  const encoding: Encoding =
    bytes[0] === 0xff && bytes[1] === 0xfe
      ? 'utf-16le'
      : bytes[0] === 0xfe && bytes[1] === 0xff
        ? 'utf-16be'
        : 'utf-8'
  try {
    // The decoder drops its encoding's byte order mark (ignoreBOM is false by default).
    return new TextDecoder(encoding, { fatal: true }).decode(bytes)
  } catch {
    throw new RangeError(`is not valid ${NAMES[encoding]} at ${firstFault(bytes, encoding)}`)
  }
}

/** Where the first byte that is not text is, as `line 3, column 18 (byte 57)`. */
function firstFault(bytes: Uint8Array, encoding: Encoding): string {
  const text = new TextDecoder(encoding).decode(bytes)
  const utf8 = encoding === 'utf-8'
  const bomLength = utf8 ? (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0) : 2
  const replacement = REPLACEMENT_BYTES[encoding]
  let offset = bomLength
  let from = 0
  for (let i = text.indexOf('\uFFFD'); i >= 0; i = text.indexOf('\uFFFD', i + 1)) {
    offset += utf8 ? Buffer.byteLength(text.slice(from, i)) : 2 * (i - from)
    from = i
    if (!replacement.every((b, k) => bytes[offset + k] === b)) return position(text, i, offset)
  }
  return position(text, text.length, bytes.length)
}

function position(text: string, index: number, offset: number): string {
  const before = text.slice(0, index)
  const line = before.split('\n').length
  const column = index - before.lastIndexOf('\n')
  return `line ${line}, column ${column} (byte ${offset})`
}
