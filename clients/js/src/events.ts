/**
 * Server-Sent Events read from a `fetch` body, which (unlike `EventSource`) can send the
 * `Authorization` header and `Last-Event-ID`, and runs in Node without a dependency.
 *
 * @module
 */

/** One event of a stream. */
export interface ServerEvent {
  /** Its `event:` field (`message` when it has none). */
  type: string;
  /** Its `data:` lines, joined by newlines. */
  data: string;
  /** Its `id:` field, to resume after it with `Last-Event-ID`. */
  id: string | undefined;
}

/**
 * Events from a stream's text as it arrives: the HTML standard's "Interpreting an event
 * stream", without `retry` (reconnecting is the caller's).
 * https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */
export class EventStreamParser {
  #unread = "";
  #type = "";
  #data: string[] = [];
  #id: string | undefined;

  /** The events that `text` completes. */
  push(text: string): ServerEvent[] {
    this.#unread += text;
    const events: ServerEvent[] = [];
    for (;;) {
      const end = /\r\n|\r|\n/.exec(this.#unread);
      // A `\r` last may be the first half of a `\r\n` still on its way.
      if (end === null || (end[0] === "\r" && end.index === this.#unread.length - 1)) {
        return events;
      }
      const line = this.#unread.slice(0, end.index);
      this.#unread = this.#unread.slice(end.index + end[0].length);
      const event = this.#line(line);
      if (event !== undefined) {
        events.push(event);
      }
    }
  }

  /** Take one line; an empty one dispatches the event it ends. */
  #line(line: string): ServerEvent | undefined {
    if (line === "") {
      const event =
        this.#data.length === 0
          ? undefined
          : { type: this.#type || "message", data: this.#data.join("\n"), id: this.#id };
      this.#type = "";
      this.#data = [];
      this.#id = undefined;
      return event;
    }
    if (line.startsWith(":")) {
      return undefined;
    }
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) {
      value = value.slice(1);
    }
    switch (field) {
      case "event":
        this.#type = value;
        break;
      case "data":
        this.#data.push(value);
        break;
      case "id":
        if (!value.includes("\0")) {
          this.#id = value;
        }
        break;
    }
    return undefined;
  }
}
