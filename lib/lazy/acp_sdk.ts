/**
 * `npm:@agentclientprotocol/sdk` (ACP v1), loaded with `loadLazy` (`./load.ts`) when `agent acp`
 * starts.
 *
 * @module
 */

export * from "@agentclientprotocol/sdk";
