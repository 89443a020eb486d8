import type { Transport } from "@connectrpc/connect";

/**
 * The header that carries read-your-writes tokens. A server with a read
 * replica answers every successful write (and every read the primary
 * served) with a token in this response header; a read that sends back the
 * greatest token its client has seen is served only by a database that has
 * replayed that far (the replica once it has caught up, bounded, else the
 * primary). Tokens are opaque, of one fixed width, and order as strings in
 * the order of the writes they stand for.
 */
export const readAfterHeader = "Converge-Read-After";

/**
 * ReadAfter remembers the greatest token a client has been answered with,
 * so that a program reads its own writes without doing anything.
 */
export class ReadAfter {
  private token = "";

  /** The greatest token seen so far; "" before the first. */
  get latest(): string {
    return this.token;
  }

  /**
   * observe keeps tok if it is later than the one held. A token of another
   * width is not one this client knows how to order, and is ignored.
   */
  observe(tok: string | null | undefined): void {
    if (!tok) {
      return;
    }
    if (this.token === "" || (tok.length === this.token.length && tok > this.token)) {
      this.token = tok;
    }
  }

  /**
   * wrap returns a transport that sends the latest token with every call,
   * streams included, unless the caller set the header itself, and keeps
   * the token each successful response carries.
   */
  wrap(inner: Transport): Transport {
    const withToken = (init: Parameters<Transport["unary"]>[3]): Headers => {
      const h = new Headers(init);
      if (this.token !== "" && !h.has(readAfterHeader)) {
        h.set(readAfterHeader, this.token);
      }
      return h;
    };
    return {
      unary: async (method, signal, timeoutMs, header, input, contextValues) => {
        const res = await inner.unary(method, signal, timeoutMs, withToken(header), input, contextValues);
        this.observe(res.header.get(readAfterHeader));
        return res;
      },
      stream: async (method, signal, timeoutMs, header, input, contextValues) => {
        const res = await inner.stream(method, signal, timeoutMs, withToken(header), input, contextValues);
        this.observe(res.header.get(readAfterHeader));
        return res;
      },
    };
  }
}
