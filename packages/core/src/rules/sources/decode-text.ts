/**
 * The text of a rules file or of a rules body: UTF-8, or UTF-16 when a byte order mark says
 * so. A byte order mark is what Windows editors and shells write (Notepad, PowerShell's
 * `Set-Content -Encoding UTF8`, Windows PowerShell's `>` in UTF-16), and it is never part of
 * the text: left in, JSON.parse refuses the file over a character nobody can see.
 *
 * @param bytes - the file or body as read
 * @returns the text, without a byte order mark
 */
export function decodeText(bytes: Uint8Array): string {
  const encoding =
    bytes[0] === 0xff && bytes[1] === 0xfe
      ? 'utf-16le'
      : bytes[0] === 0xfe && bytes[1] === 0xff
        ? 'utf-16be'
        : 'utf-8'
  // The decoder drops its encoding's byte order mark (ignoreBOM is false by default).
  return new TextDecoder(encoding).decode(bytes)
}
