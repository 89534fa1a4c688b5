/** The compiled WebAssembly module at `specifier` (a source phase import). */
export declare function importSource(specifier: string): Promise<WebAssembly.Module>;
