/**
 * An in-memory index of embedding vectors searched by cosine similarity. Brute force, made fast
 * by scanning int8 copies of the vectors with WebAssembly SIMD (a quarter of the bytes of f32:
 * the scan is bound by memory bandwidth), then ranking the best candidates again exactly with
 * the f32 vectors. Without WebAssembly SIMD it scans the f32 vectors in JavaScript.
 *
 * @module
 */

/** A vector found by {@link VectorIndex.search}. */
export interface VectorHit {
  /** The id it was added with. */
  id: number;
  /** Its cosine similarity to the query (-1 to 1). */
  score: number;
}

/** Options of {@link VectorIndex.search}. */
export interface VectorSearchOptions {
  /** Only vectors whose tag's bit is set in this mask (bit `1 << tag`); default all. */
  tags?: number;
}

/** Vectors of one dimension, by id. */
export interface VectorIndex {
  /** The dimension of the vectors. */
  readonly dimensions: number;
  /** How many vectors it holds. */
  readonly size: number;
  /** Adds a vector (replacing the one of the same id), with a tag from 0 to 31 for filtering. */
  add(id: number, vector: ArrayLike<number>, tag?: number): void;
  /** Removes a vector; whether it was there. */
  remove(id: number): boolean;
  /** The `limit` vectors most similar to `query`, best first. */
  search(query: ArrayLike<number>, limit: number, options?: VectorSearchOptions): VectorHit[];
}

/** Options of {@link vectorIndex}. */
export interface VectorIndexOptions {
  /** Room for this many vectors from the start (it grows as needed anyway). */
  capacity?: number;
  /** Use the WebAssembly SIMD scan when available (default true); false scans f32 in JavaScript. */
  wasm?: boolean;
}

/**
 * A new, empty vector index.
 *
 * @example
 * ```ts
 * import { vectorIndex } from "./vector_index.ts";
 * const index = vectorIndex(3);
 * index.add(1, [1, 0, 0]);
 * index.add(2, [0.7, 0.7, 0], 1);
 * index.add(3, [0, 0, 1]);
 * const hits = index.search([1, 0.1, 0], 2);
 * if (hits[0].id !== 1 || hits[1].id !== 2) throw new Error("unexpected");
 * if (index.search([1, 0, 0], 3, { tags: 1 << 1 }).map((hit) => hit.id).join() !== "2") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function vectorIndex(dimensions: number, options: VectorIndexOptions = {}): VectorIndex {
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > 8192) {
    throw new RangeError(`Bad vector dimension ${dimensions}: use 1 to 8192`);
  }
  const module = options.wasm === false ? undefined : _dotsModule();
  const stride = Math.ceil(dimensions / 32) * 32; // bytes of one int8 vector, padded
  const instance = module && new WebAssembly.Instance(module);
  const memory = instance?.exports.memory as WebAssembly.Memory | undefined;
  const dots = instance?.exports.dots as
    | ((codes: number, n: number, stride: number, query: number, out: number) => void)
    | undefined;
  let capacity = 0;
  let size = 0;
  let floats = new Float32Array(0); // normalized vectors, `dimensions` each
  let ids = new Float64Array(0);
  let tags = new Uint8Array(0);
  let scales = new Float32Array(0); // int8 code * scale = component
  let codes: Int8Array = new Int8Array(0); // a view of the WebAssembly memory
  const slots = new Map<number, number>();

  const grow = (wanted: number) => {
    if (wanted <= capacity) return;
    capacity = Math.max(wanted, capacity * 2, 64);
    floats = _resized(floats, capacity * dimensions);
    ids = _resized(ids, capacity);
    tags = _resized(tags, capacity);
    scales = _resized(scales, capacity);
    if (memory) {
      // Layout: the codes from 0, then the query's codes, then the scan's output.
      const bytes = capacity * stride + stride + capacity * 4;
      const missing = bytes - memory.buffer.byteLength;
      if (missing > 0) memory.grow(Math.ceil(missing / 65536));
      codes = new Int8Array(memory.buffer);
    }
  };
  if (options.capacity) grow(options.capacity);

  /** Stores a vector normalized, and its int8 codes. */
  const write = (slot: number, vector: ArrayLike<number>, tag: number) => {
    const f = floats; // locals: the typed arrays are replaced when the index grows
    const at = slot * dimensions;
    const end = at + dimensions;
    let norm = 0;
    for (let j = 0; j < dimensions; j++) {
      const x = +vector[j];
      f[at + j] = x;
      norm += x * x;
    }
    const inverse = norm > 0 && Number.isFinite(norm) ? 1 / Math.sqrt(norm) : 0;
    let max = 0;
    for (let j = at; j < end; j++) {
      const x = f[j] * inverse;
      f[j] = x;
      max = Math.max(max, Math.abs(x));
    }
    tags[slot] = tag;
    if (!memory) return;
    const c = codes;
    const scale = max / 127;
    scales[slot] = scale;
    const factor = scale > 0 ? 1 / scale : 0;
    const base = slot * stride - at;
    // Rounded without a branch on the sign (a branch mispredicts on every other component).
    for (let j = at; j < end; j++) c[base + j] = ((f[j] * factor + 128.5) | 0) - 128;
    c.fill(0, base + end, slot * stride + stride);
  };

  return {
    dimensions,
    get size() {
      return size;
    },
    add(id, vector, tag = 0) {
      if (vector.length !== dimensions) {
        throw new RangeError(
          `A vector of ${vector.length} dimensions in an index of ${dimensions}`,
        );
      }
      if (!Number.isInteger(tag) || tag < 0 || tag > 31) throw new RangeError(`Bad tag ${tag}`);
      let slot = slots.get(id);
      if (slot === undefined) {
        grow(size + 1);
        slot = size++;
        slots.set(id, slot);
        ids[slot] = id;
      }
      write(slot, vector, tag);
    },
    remove(id) {
      const slot = slots.get(id);
      if (slot === undefined) return false;
      slots.delete(id);
      const last = --size;
      if (slot !== last) {
        // Keep the vectors contiguous: the last one moves into the hole.
        floats.copyWithin(slot * dimensions, last * dimensions, (last + 1) * dimensions);
        ids[slot] = ids[last];
        tags[slot] = tags[last];
        scales[slot] = scales[last];
        codes.copyWithin(slot * stride, last * stride, (last + 1) * stride);
        slots.set(ids[slot], slot);
      }
      return true;
    },
    search(query, limit, options = {}) {
      if (query.length !== dimensions) {
        throw new RangeError(`A query of ${query.length} dimensions in an index of ${dimensions}`);
      }
      if (size === 0 || limit < 1) return [];
      const mask = options.tags ?? -1;
      const q = _normalized(query);
      const exact = (slot: number) => {
        let sum = 0;
        for (let j = 0, at = slot * dimensions; j < dimensions; j++, at++) sum += floats[at] * q[j];
        return sum;
      };
      if (!memory || !dots) {
        return _top(size, limit, (slot) => (mask >>> tags[slot]) & 1 ? exact(slot) : NaN)
          .map((slot) => ({ id: ids[slot], score: exact(slot) }));
      }
      // Scan the int8 codes, then rank the best few times `limit` candidates exactly.
      const queryAt = capacity * stride;
      const outAt = queryAt + stride;
      _quantize(q, new Int8Array(memory.buffer, queryAt, stride));
      dots(0, size, stride, queryAt, outAt);
      const out = new Float32Array(memory.buffer, outAt, size);
      const candidates = _top(
        size,
        Math.max(limit * 4, 64),
        (slot) => (mask >>> tags[slot]) & 1 ? out[slot] * scales[slot] : NaN,
      );
      return candidates
        .map((slot) => ({ id: ids[slot], score: exact(slot) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, limit);
    },
  };
}

/** The slots of the `limit` highest scores, best first; NaN scores are left out. */
function _top(size: number, limit: number, score: (slot: number) => number): number[] {
  const best = new Float64Array(limit); // descending
  const slots = new Int32Array(limit);
  let count = 0;
  for (let slot = 0; slot < size; slot++) {
    const value = score(slot);
    if (!(value > (count === limit ? best[limit - 1] : -Infinity))) continue;
    let at = count < limit ? count++ : limit - 1;
    while (at > 0 && best[at - 1] < value) {
      best[at] = best[at - 1];
      slots[at] = slots[at - 1];
      at--;
    }
    best[at] = value;
    slots[at] = slot;
  }
  return Array.from(slots.subarray(0, count));
}

function _normalized(vector: ArrayLike<number>): Float32Array {
  const out = Float32Array.from(vector);
  let norm = 0;
  for (let j = 0; j < out.length; j++) norm += out[j] * out[j];
  if (norm > 0) {
    const inverse = 1 / Math.sqrt(norm);
    for (let j = 0; j < out.length; j++) out[j] *= inverse;
  }
  return out;
}

/** Writes int8 codes of a vector; returns the scale (code * scale ≈ component). */
function _quantize(vector: Float32Array, codes: Int8Array): number {
  let max = 0;
  for (let j = 0; j < vector.length; j++) max = Math.max(max, Math.abs(vector[j]));
  if (max === 0 || !Number.isFinite(max)) {
    codes.fill(0);
    return 0;
  }
  const factor = 127 / max;
  for (let j = 0; j < vector.length; j++) codes[j] = ((vector[j] * factor + 128.5) | 0) - 128;
  codes.fill(0, vector.length); // the padding adds nothing to a dot product
  const scale = max / 127;
  return scale;
}

function _resized<T extends Float32Array | Float64Array | Uint8Array>(array: T, length: number): T {
  const next = new (array.constructor as new (length: number) => T)(length);
  next.set(array.subarray(0, Math.min(array.length, length)));
  return next;
}

let _module: WebAssembly.Module | null | undefined;

/** The compiled scan (`dots_i8.wat`), or undefined where WebAssembly SIMD is missing. */
function _dotsModule(): WebAssembly.Module | undefined {
  if (_module === undefined) {
    const bytes = Uint8Array.from(atob(_DOTS_WASM), (c) => c.charCodeAt(0));
    _module = typeof WebAssembly === "object" && WebAssembly.validate(bytes)
      ? new WebAssembly.Module(bytes)
      : null;
  }
  return _module ?? undefined;
}

/** `dots_i8.wat`, compiled. */
const _DOTS_WASM =
  "AGFzbQEAAAABCQFgBX9/f39/AAMCAQAFAwEAAQcRAgZtZW1vcnkCAARkb3RzAAAK5QEB4gECAn8EeyAAIAEgAmxqIQUCQANAIAAgBU8NAf0MAAAAAAAAAAAAAAAAAAAAACEJIAkhCkEAIQYDQCAAIAZq/QAEACEHIAMgBmr9AAQAIQggCSAHIAj9nAH9fiAHIAj9nQH9fv2uAf2uASEJIAAgBmr9AAQQIQcgAyAGav0ABBAhCCAKIAcgCP2cAf1+IAcgCP2dAf1+/a4B/a4BIQogBkEgaiIGIAJJDQALIAkgCv2uASEJIAQgCf0bACAJ/RsBaiAJ/RsCIAn9GwNqarI4AgAgBEEEaiEEIAAgAmohAAwACwsL";
