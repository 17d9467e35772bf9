/**
 * Waiting until an upload has its CID: by following its operation's events
 * (`GET /api/operations/{id}/events`), resumed with `Last-Event-ID` where the stream is cut, and
 * by polling where no stream can be had (a proxy that buffers or keeps cutting it); for an
 * upload made through a link, with no credential, by polling its TUS URL.
 *
 * @module
 */

import { CairnError, isErrorBody } from "./errors.js";
import { EventStreamParser, type ServerEvent } from "./events.js";
import { segment, type Api } from "./http.js";
import type { ErrorBody, OperationRecord, UploadState } from "./records.js";

/** Streams cut in a row, with no event between, before polling takes over. */
const CUTS_BEFORE_POLLING = 3;
/** Longer than the server's 15 s keep-alive: a stream this quiet is not reaching us. */
const QUIET_LIMIT_MS = 40_000;
/** Polling starts this soon and backs off to {@link POLL_MAX_MS}. */
const POLL_FIRST_MS = 100;
const POLL_MAX_MS = 2_000;
/** A failure the server gave no reason for, in the words its own event stream uses for one. */
const NO_REASON: ErrorBody = { error: "internal", message: "the operation failed" };

/** An upload that has its CID. */
export interface CompletedUpload {
  /** The upload's id. */
  id: string;
  /** The operation that processed it. */
  operationId: number;
  /** Its root CID. */
  cid: string;
}

/** Where an operation ended, as the server tells it. */
type Ending = { completed: CompletedUpload } | { failed: ErrorBody };

/**
 * The operation `id` (its number, or its upload's id) once it completed; a {@link CairnError}
 * if it failed.
 */
export async function operationCompleted(
  api: Api,
  id: string,
  signal: AbortSignal,
): Promise<CompletedUpload> {
  const ending = (await followedToItsEnd(api, id, signal)) ?? (await polledToItsEnd(api, id, signal));
  return completedOrThrow(ending);
}

/** The TUS upload at `tusUrl` once its operation completed, read with no credential. */
export async function tusUploadCompleted(tusUrl: string, signal: AbortSignal): Promise<CompletedUpload> {
  const read = async (): Promise<Ending | undefined> => {
    const response = await fetch(tusUrl, { headers: { Accept: "application/json" }, signal });
    if (!response.ok) {
      throw await CairnError.fromResponse(response);
    }
    const state = (await response.json()) as UploadState;
    if (state.status === "failed") {
      return { failed: state.error ?? NO_REASON };
    }
    if (state.status === "completed" && state.cid !== null && state.operationId !== null) {
      return { completed: { id: state.id, operationId: state.operationId, cid: state.cid } };
    }
    return undefined;
  };
  return completedOrThrow(await polled(read, signal));
}

function completedOrThrow(ending: Ending): CompletedUpload {
  if ("failed" in ending) {
    throw new CairnError(ending.failed.error, ending.failed.message);
  }
  return ending.completed;
}

function endingOf(operation: OperationRecord): Ending | undefined {
  if (operation.status === "failed") {
    return { failed: operation.error ?? NO_REASON };
  }
  if (operation.status === "completed" && operation.cid !== null) {
    return { completed: { id: operation.uploadId, operationId: operation.id, cid: operation.cid } };
  }
  return undefined;
}

/** The operation's final event; `undefined` when its stream cannot be followed. */
async function followedToItsEnd(api: Api, id: string, signal: AbortSignal): Promise<Ending | undefined> {
  const url = `${api.uploadUrl}/api/operations/${segment(id)}/events`;
  let lastEventId: string | undefined;
  let cuts = 0;
  while (cuts < CUTS_BEFORE_POLLING) {
    let moved = false;
    let events: AsyncGenerator<ServerEvent>;
    try {
      events = await opened(api, url, lastEventId, signal);
    } catch {
      signal.throwIfAborted();
      // Refused or unreachable: polling says which, in its own words.
      return undefined;
    }
    try {
      for await (const event of events) {
        moved = true;
        lastEventId = event.id ?? lastEventId;
        if (event.type === "completed") {
          return endingOf(JSON.parse(event.data) as OperationRecord);
        }
        if (event.type === "failed") {
          const error: unknown = JSON.parse(event.data);
          return { failed: isErrorBody(error) ? error : NO_REASON };
        }
        // `progress`, and `dropped` (we read too slowly; the stream ends): read on.
      }
    } catch {
      signal.throwIfAborted();
      // Cut, or silent too long: resume after the last event.
    }
    cuts = moved ? 1 : cuts + 1;
  }
  return undefined;
}

/** The events of the stream at `url`, after `lastEventId`; throws when it is not answered with 2xx. */
async function opened(
  api: Api,
  url: string,
  lastEventId: string | undefined,
  signal: AbortSignal,
): Promise<AsyncGenerator<ServerEvent>> {
  const quiet = new AbortController();
  const headers: Record<string, string> = { ...api.authorization(), Accept: "text/event-stream" };
  if (lastEventId !== undefined) {
    headers["Last-Event-ID"] = lastEventId;
  }
  const response = await fetch(url, { headers, signal: AbortSignal.any([signal, quiet.signal]) });
  if (!response.ok || response.body === null) {
    await response.body?.cancel();
    throw new Error(`the event stream answered ${response.status}`);
  }
  return eventsOf(response.body, quiet);
}

/** The events of `body`, ending it through `quiet` when it stays silent too long. */
async function* eventsOf(
  body: ReadableStream<Uint8Array>,
  quiet: AbortController,
): AsyncGenerator<ServerEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new EventStreamParser();
  let silence = setTimeout(() => quiet.abort(), QUIET_LIMIT_MS);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        return;
      }
      clearTimeout(silence);
      silence = setTimeout(() => quiet.abort(), QUIET_LIMIT_MS);
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
  } finally {
    clearTimeout(silence);
    // Stops the stream when the caller has its event before the server ends it.
    await reader.cancel().catch(() => undefined);
  }
}

/** The operation, read until it is completed or failed. */
function polledToItsEnd(api: Api, id: string, signal: AbortSignal): Promise<Ending> {
  const url = `${api.uploadUrl}/api/operations/${segment(id)}`;
  return polled(async () => endingOf(await api.json<OperationRecord>("GET", url, { signal })), signal);
}

/** `read` until it tells an ending, waiting longer each time. */
async function polled(read: () => Promise<Ending | undefined>, signal: AbortSignal): Promise<Ending> {
  let delay = POLL_FIRST_MS;
  for (;;) {
    const ending = await read();
    if (ending !== undefined) {
      return ending;
    }
    await sleep(delay, signal);
    delay = Math.min(delay * 2, POLL_MAX_MS);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const aborted = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", aborted);
      resolve();
    }, ms);
    signal.addEventListener("abort", aborted, { once: true });
  });
}
