/**
 * Sessions kept as JSONL files, one per session, one folder per project:
 * `<dir>/<project>/<id>.jsonl`: a session's id is its file's name, whatever its header says (a
 * file copied beside it is a session of its own, listed and found by the copy's name). Files are only ever appended to: each entry is one line written
 * with a single `write` before `append` resolves, so a crash loses nothing already appended and
 * at worst leaves a last line cut short, which reading skips and reports. A session has one
 * writer at a time, which holds a lock on its file's handle (see `writer_lock.ts`): a second is
 * refused, so that the lines of two processes never interleave. The files are the truth; the
 * index that finds them is a cache, kept in step with them and made again from them.
 *
 * @module
 */

import { basename, dirname, join, resolve } from "node:path";
import { encodeHeader, parseHeaderLine } from "./jsonl.ts";
import { redactJsonLine } from "../secrets/redact.ts";
import { readSessionFile } from "./file_reader.ts";
import { fileSessionWriter, type WriterState } from "./file_writer.ts";
import { sessionFileIndex } from "./file_index.ts";
import { type FileSummary, subdirs, summarizeSessionFile } from "./file_summary.ts";
import { ensurePrivateDir, ensurePrivateFile } from "../files/private_files.ts";
import { lockSessionFile } from "./writer_lock.ts";
import { sessionQuery } from "./page.ts";
import {
  newSessionHeader,
  replaySession,
  type SessionEntry,
  SessionError,
  type SessionHeader,
  type SessionInfo,
  type SessionListOptions,
  type SessionPage,
  type SessionStore,
} from "./store.ts";

/** Options of {@link fileSessionStore}. */
export interface FileSessionStoreOptions {
  /** Where the sessions are kept (see {@link defaultSessionsDir}). */
  dir: string;
  /** Applied to every line before it is written, e.g. `secretRedactor(secretsFromEnv(…))`. */
  redact?: (text: string) => string;
  /** Whether to fsync after each entry (survives a power cut, not only a crash). Default false. */
  sync?: boolean;
  /** How to list the sessions, said when an id matches none (e.g. the CLI's own flag). */
  listHint?: string;
}

/**
 * A {@link SessionStore} of JSONL files under `options.dir`: line 1 the header, then one line
 * per entry. Appending costs the same however long the session is (the file is never re-read
 * or rewritten). Sessions are found, by id, prefix or page, through an index beside the files
 * (`<dir>/index.v2.sqlite`, see `file_index.ts`), so that a lookup costs the same however many
 * sessions there are; a file the index has not seen is read from its first and last few KB.
 * Folders are private to the user (0700), files too (0600): created so, and made so when an
 * earlier version left them readable by others.
 *
 * @example
 * ```ts
 * import { fileSessionStore } from "./file_store.ts";
 * const dir = await Deno.makeTempDir();
 * const store = fileSessionStore({ dir });
 * const writer = await store.create({ cwd: "/work", model: "openai/gpt-4.1-mini" });
 * const at = new Date().toISOString();
 * await writer.append({ type: "message", message: { role: "user", content: "Hello" }, at });
 * await writer.close();
 * const session = await store.load(writer.id.slice(0, 8));
 * if (session.messages.length !== 1 || session.warnings.length) throw new Error("unexpected");
 * if ((await store.latest("/work"))?.title !== "Hello") throw new Error("unexpected");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export function fileSessionStore(options: FileSessionStoreOptions): SessionStore {
  const dir = resolve(options.dir);
  const { redact, sync = false } = options;
  const hint = options.listHint ?? `The sessions are the files under ${dir}: ls ${dir}/*/`;
  const index = sessionFileIndex(dir);

  /** Tells the index what a writer wrote: at once when it closes, else at most once a second. */
  const recorder = (path: string) => {
    let last = performance.now();
    return (state: WriterState, closing: boolean) => {
      const now = performance.now();
      if (!closing && now - last < 1000) return;
      last = now;
      const { size, mtime } = state.stat();
      index.written(path, { ...state, size, mtime: mtime?.getTime() ?? -1 });
    };
  };

  function list(cwd?: string): Promise<SessionInfo[]>;
  function list(cwd: string | undefined, options: SessionListOptions): Promise<SessionPage>;
  async function list(
    cwd?: string,
    options?: SessionListOptions,
  ): Promise<SessionInfo[] | SessionPage> {
    const query = options ? sessionQuery(options) : { limit: -1, offset: 0 };
    const where = cwd === undefined ? undefined : resolve(cwd);
    const folder = where === undefined ? undefined : _projectName(where);
    const page = await index.page(where, folder, query, options !== undefined);
    return options ? page : page.sessions;
  }

  return {
    async create(init) {
      const header = newSessionHeader(init);
      // A chosen id may be taken in another project's folder. Random ones are not, nor is a
      // random UUID (what a conversation chooses when given no id): looking for it in every
      // project's folder would cost each new session a look in as many folders as projects.
      if (init.id !== undefined && !_RANDOM_UUID.test(init.id) && await _taken(dir, header.id)) {
        _exists(header.id);
      }
      const name = _projectName(header.cwd);
      const folder = join(dir, name);
      return await index.created(name, async () => {
        ensurePrivateDir(folder);
        ensurePrivateDir(dir);
        const path = join(folder, `${header.id}.jsonl`);
        let file: Deno.FsFile;
        try {
          file = await Deno.open(path, { createNew: true, append: true, mode: 0o600 });
        } catch (error) {
          if (error instanceof Deno.errors.AlreadyExists) _exists(header.id);
          throw error;
        }
        await _lock(file, header.id);
        const onWritten = recorder(path);
        const writer = await fileSessionWriter(file, {
          id: header.id,
          header,
          sync,
          redact,
          onWritten,
        });
        // The header as the file holds it, redacted as its line was (else the index reads it).
        let stored: SessionHeader | undefined = header;
        if (redact) {
          try {
            stored = parseHeaderLine(redactJsonLine(encodeHeader(header), redact), path);
          } catch {
            stored = undefined;
          }
        }
        return { result: writer, path, header: stored };
      });
    },
    async open(idOrPrefix) {
      const path = await index.find(idOrPrefix, hint);
      // Written by an earlier version, it may be readable by all.
      ensurePrivateDir(dir);
      ensurePrivateDir(dirname(path));
      ensurePrivateFile(path);
      const file = await Deno.open(path, { append: true });
      // One writer at a time; what the file holds is read once this one is the writer.
      await _lock(file, basename(path, ".jsonl"));
      let summary: FileSummary;
      try {
        summary = await summarizeSessionFile(path);
      } catch (error) {
        file.close();
        throw error;
      }
      const { info: { messages, title, updated }, endsWithNewline } = summary;
      return await fileSessionWriter(file, {
        id: basename(path, ".jsonl"),
        messages,
        title,
        updated,
        endsWithNewline,
        sync,
        redact,
        onWritten: recorder(path),
      });
    },
    async load(idOrPrefix) {
      const path = await index.find(idOrPrefix, hint);
      // Read as `read` does, a chunk at a time: never the whole file as one string, nor its lines.
      const reader = await readSessionFile(path, { chunkBytes: _LOAD_CHUNK_BYTES });
      const entries: SessionEntry[] = [];
      for await (const entry of reader) entries.push(entry);
      return replaySession(_named(reader.header, path), entries, [...reader.warnings]);
    },
    async read(idOrPrefix) {
      const path = await index.find(idOrPrefix, hint);
      const reader = await readSessionFile(path);
      const header = _named(reader.header, path);
      return header === reader.header ? reader : { ...reader, header };
    },
    close: () => index.close(),
    list,
    async latest(cwd) {
      const where = resolve(cwd);
      const query = sessionQuery({ limit: 1 });
      return (await index.page(where, _projectName(where), query, false)).sessions[0];
    },
  };
}

/**
 * Where sessions are kept by default: `$AGENT_DATA_DIR/sessions`, else
 * `$XDG_DATA_HOME/agent/sessions`, else `$HOME/.local/share/agent/sessions`.
 *
 * @example
 * ```ts
 * import { defaultSessionsDir } from "./file_store.ts";
 * const dir = defaultSessionsDir((name) => name === "HOME" ? "/home/ada" : undefined);
 * if (dir !== "/home/ada/.local/share/agent/sessions") throw new Error(dir);
 * ```
 */
export function defaultSessionsDir(env: (name: string) => string | undefined): string | undefined {
  const data = env("AGENT_DATA_DIR") ||
    (env("XDG_DATA_HOME") && join(env("XDG_DATA_HOME")!, "agent")) ||
    (env("HOME") && join(env("HOME")!, ".local", "share", "agent"));
  return data ? join(data, "sessions") : undefined;
}

/**
 * Whether Deno already lets the agent write in `dir` (asked without prompting), so that a
 * program can warn and run without saving when it does not.
 *
 * @example
 * ```ts
 * import { sessionsWritable } from "./file_store.ts";
 * if (typeof sessionsWritable("/tmp/agent-sessions") !== "boolean") throw new Error("unexpected");
 * ```
 */
export function sessionsWritable(dir: string): boolean {
  return Deno.permissions.querySync({ name: "write", path: dir }).state === "granted";
}

/**
 * The folder of a project's sessions: its path made into a name (`/home/ada/app` →
 * `home-ada-app-<hash>`), where the short hash of the exact path keeps names unique.
 *
 * @example
 * ```ts
 * import { projectSessionsDir } from "./file_store.ts";
 * const folder = projectSessionsDir("/data/sessions", "/home/ada/app");
 * if (!/^\/data\/sessions\/home-ada-app-[0-9a-f]{8}$/.test(folder)) throw new Error(folder);
 * ```
 */
export function projectSessionsDir(dir: string, cwd: string): string {
  return join(dir, _projectName(resolve(cwd)));
}

function _projectName(cwd: string): string {
  let name = cwd.replace(/[\\/:]+/g, "-").replace(/[^A-Za-z0-9._-]+/g, "_");
  if (name.length > 60) name = name.slice(-60);
  name = name.replace(/^[-.]+/, "") || "root";
  let hash = 0x811c9dc5; // FNV-1a over UTF-8
  for (const byte of _encoder.encode(cwd)) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return `${name}-${hash.toString(16).padStart(8, "0")}`;
}

const _encoder = new TextEncoder();

/** Bytes `load` reads at a time: larger than `read`'s, as it keeps the whole session anyway. */
const _LOAD_CHUNK_BYTES = 1024 * 1024;

/** A random (version 4) UUID, as `crypto.randomUUID()` makes. */
const _RANDOM_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Whether a session file of this id is in any project's folder. */
async function _taken(dir: string, id: string): Promise<boolean> {
  const found = await Promise.all(
    (await subdirs(dir)).map((folder) =>
      Deno.lstat(join(dir, folder, `${id}.jsonl`)).then(() => true, () => false)
    ),
  );
  return found.includes(true);
}

/**
 * Locks the session file for its writer, or closes it and throws the `busy` refusal. A lock
 * just released can outlive its `close()` for a moment: a process this one is starting holds a
 * copy of every handle between its fork and its exec. So a refusal is only final after a few
 * short tries (about a quarter of a second in all).
 */
async function _lock(file: Deno.FsFile, id: string): Promise<void> {
  for (let wait = 1;; wait *= 2) {
    try {
      lockSessionFile(file, id);
      return;
    } catch (error) {
      if (wait <= 128 && error instanceof SessionError && error.reason === "busy") {
        await new Promise((done) => setTimeout(done, wait));
        continue;
      }
      file.close();
      throw error;
    }
  }
}

/** A session's header as the store shows it: its id is its file's name. */
function _named(header: SessionHeader, path: string): SessionHeader {
  const id = basename(path, ".jsonl");
  return header.id === id ? header : { ...header, id };
}

function _exists(id: string): never {
  throw new SessionError(`Session ${id} exists already`, { reason: "exists" });
}
