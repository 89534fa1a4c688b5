/**
 * Git's index file, read for one thing: its gitlinks, the entries of mode 160000 that register
 * a repository inside the repository (a submodule, or an embedded repository added with `git
 * add`). `git status` looks into each of them that holds a `.git`, and runs there what that
 * repository's config names (`core.fsmonitor`, …). Read here without running git, so that
 * nothing the index or the repositories hold can run code.
 *
 * The format (git's `Documentation/gitformat-index.txt`): a 12-byte header (`DIRC`, the
 * version, the number of entries), the entries sorted by path, extensions, and a checksum.
 * Versions 2 and 3 pad each entry to a multiple of 8 bytes; version 4 does not, and writes each
 * path as how many bytes to drop from the end of the previous one and what follows. Object names
 * are 20 bytes (SHA-1) or 32 (SHA-256). A split index (the `link` extension: entries partly in a
 * shared file) cannot be read from this file alone.
 *
 * @module
 */

/** A gitlink of the index. */
export interface IndexGitlink {
  /** Its path in the work tree, as git wrote it (bytes: git does not require UTF-8). */
  bytes: Uint8Array;
  /** The same path as text; `undefined` when it is not valid UTF-8. */
  path?: string;
}

/** Options of {@link indexGitlinks}. */
export interface IndexGitlinksOptions {
  /** The length of an object name: 20 (SHA-1, the default) or 32 (SHA-256). */
  hashBytes?: 20 | 32;
}

/** What an index holds: its gitlinks, or `split` when part of its entries live elsewhere. */
export type IndexGitlinks = { split: false; gitlinks: IndexGitlink[] } | { split: true };

const _GITLINK = 0o160000;
const _TYPE = 0o170000;
/** Bytes before an entry's object name: times, device, inode, mode, uid, gid, size. */
const _STAT = 40;
const _EXTENDED = 0x4000;
const _NAME_MASK = 0xfff;

/**
 * The gitlinks of an index, read from its bytes, in the index's order (every stage). Throws,
 * saying where, on what is not an index of version 2 to 4 or is cut short; `{ split: true }`
 * for a split index, whose entries this file does not hold alone.
 *
 * @example
 * ```ts
 * import { indexGitlinks } from "./git_index.ts";
 * // An index of version 2 with one entry, a gitlink at `sub`, and a checksum of 20 bytes.
 * const index = new Uint8Array(12 + 72 + 20);
 * const view = new DataView(index.buffer);
 * index.set(new TextEncoder().encode("DIRC"));
 * view.setUint32(4, 2);
 * view.setUint32(8, 1);
 * view.setUint32(12 + 24, 0o160000); // the entry's mode
 * view.setUint16(12 + 60, 3); // its flags: the path's length
 * index.set(new TextEncoder().encode("sub"), 12 + 62);
 * const found = indexGitlinks(index);
 * if (found.split || found.gitlinks[0].path !== "sub") throw new Error("unexpected");
 * ```
 */
export function indexGitlinks(data: Uint8Array, options: IndexGitlinksOptions = {}): IndexGitlinks {
  const hashBytes = options.hashBytes ?? 20;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const end = data.length - hashBytes;
  if (end < 12 || _ascii(data, 0) !== "DIRC") {
    throw new Error("not a git index: it does not start with DIRC");
  }
  const version = view.getUint32(4);
  if (version < 2 || version > 4) throw new Error(`git index version ${version} is not known`);
  const count = view.getUint32(8);
  const fixed = _STAT + hashBytes + 2;
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const gitlinks: IndexGitlink[] = [];
  // Version 4: the previous path, rebuilt in place (`kept` bytes of it are valid).
  let path = new Uint8Array(4096);
  let kept = 0;
  let at = 12;
  for (let entry = 0; entry < count; entry++) {
    if (at + fixed > end) throw new Error(`git index cut short in entry ${entry + 1} of ${count}`);
    const mode = view.getUint32(at + 24);
    const flags = view.getUint16(at + _STAT + hashBytes);
    let nameAt = at + fixed;
    if (flags & _EXTENDED) nameAt += 2;
    let name: Uint8Array;
    if (version === 4) {
      // How many bytes of the previous path to drop: git's variable-length integer.
      let byte = data[nameAt++];
      let drop = byte & 0x7f;
      while (byte & 0x80 && nameAt < end && drop <= kept) {
        byte = data[nameAt++];
        drop = (drop + 1) * 128 + (byte & 0x7f);
      }
      const nul = data.indexOf(0, nameAt);
      if (byte & 0x80 || drop > kept || nul < 0 || nul >= end) {
        throw new Error(`git index entry ${entry + 1}: its path is malformed`);
      }
      const length = kept - drop + nul - nameAt;
      if (length > path.length) {
        const longer = new Uint8Array(Math.max(length, path.length * 2));
        longer.set(path.subarray(0, kept));
        path = longer;
      }
      path.set(data.subarray(nameAt, nul), kept - drop);
      kept = length;
      name = path.subarray(0, length);
      at = nul + 1;
    } else {
      const length = flags & _NAME_MASK;
      const nul = length < _NAME_MASK ? nameAt + length : data.indexOf(0, nameAt);
      if (nul < 0 || nul >= end || data[nul] !== 0) {
        throw new Error(`git index entry ${entry + 1}: its path is malformed`);
      }
      name = data.subarray(nameAt, nul);
      // Padded with 1 to 8 NUL bytes to a multiple of 8.
      at += (nul - at + 8) & ~7;
    }
    if ((mode & _TYPE) === _GITLINK) {
      let text: string | undefined;
      try {
        text = decoder.decode(name);
      } catch {
        text = undefined;
      }
      gitlinks.push({ bytes: name.slice(), path: text });
    }
  }
  while (at + 8 <= end) {
    if (_ascii(data, at) === "link") return { split: true };
    at += 8 + view.getUint32(at + 4);
  }
  if (at > end) throw new Error("git index: an extension runs past its end");
  return { split: false, gitlinks };
}

function _ascii(data: Uint8Array, at: number): string {
  return String.fromCharCode(...data.subarray(at, at + 4));
}
