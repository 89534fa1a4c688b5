/**
 * An npm SDK loaded on first use: a provider's module costs nothing to import, and the SDK's
 * bytes are read only when a model (or an embedder) first needs its client.
 *
 * @module
 */

/** An SDK's module and the client made with it. */
export interface SdkClient<Sdk, Client> {
  /** The loaded module: its error classes tell the SDK's failures apart. */
  sdk: Sdk;
  /** The client, made once. */
  client: Client;
}

/**
 * Loads an SDK at the first call and makes its client then; every later call shares both. A
 * failure to load or to make the client is kept, and every call rejects with it.
 *
 * @example
 * ```ts
 * import { sdkClient } from "./sdk_client.ts";
 * const steps: string[] = [];
 * const connect = sdkClient(async () => {
 *   steps.push("load");
 *   return { Client: class { ok = true } };
 * }, (sdk) => new sdk.Client());
 * steps.push("ready");
 * const [a, b] = await Promise.all([connect(), connect()]);
 * if (steps.join() !== "ready,load" || a.client !== b.client || !a.client.ok) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function sdkClient<Sdk, Client>(
  load: () => Promise<Sdk>,
  create: (sdk: Sdk) => Client,
): () => Promise<SdkClient<Sdk, Client>> {
  let connected: Promise<SdkClient<Sdk, Client>> | undefined;
  return () => connected ??= load().then((sdk) => ({ sdk, client: create(sdk) }));
}
