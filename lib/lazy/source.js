// @ts-self-types="./source.d.ts"
// The compiled WebAssembly module at a specifier, by a source phase import, which TypeScript
// cannot yet parse (hence this JavaScript file and its declaration file). Not a string literal
// on purpose, as in `./load.ts`.
export function importSource(specifier) {
  return import.source(specifier);
}
