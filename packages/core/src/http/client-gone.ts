/** What {@link clientGone} reads of a request's socket (HTTP/2's is a proxy of the session's). */
export interface ConnectionSocket {
  readonly destroyed?: boolean | undefined
  readonly remoteAddress?: string | undefined
  readonly localAddress?: string | undefined
}

/**
 * Whether the client that sent a request has left before the limiter saw the request: its
 * connection is closed, or the connection's peer is gone while Node has not read so yet.
 *
 * The second case is a TCP connection whose peer reset it in the same read as its request: the
 * socket is not destroyed yet, but its remote address can no longer be read (the kernel answers
 * `ENOTCONN`), while its local one still can. (A peer that only closed its side, with a FIN, still
 * has an address: Node reads the close and destroys the socket soon after.) On HTTP/2 it is the usual way a
 * destroyed session's last requests arrive. Decided, such a request has no address, so every
 * such client would be charged to one shared bucket. A Unix socket has neither address, and a
 * socket whose address was read once keeps it, so neither reads as gone.
 *
 * @param socket - the request's socket (`req.socket`)
 * @returns true when nobody is there to answer
 */
export function clientGone(socket: ConnectionSocket | undefined | null): boolean {
  if (socket === undefined || socket === null) return false
  if (socket.destroyed === true) return true
  return socket.remoteAddress === undefined && socket.localAddress !== undefined
}
