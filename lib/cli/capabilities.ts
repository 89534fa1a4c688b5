/**
 * Capabilities are Deno permissions: what the runtime grants decides which tools are offered.
 *
 * @module
 */

import { CAPABILITIES, type Capability, type Tool } from "../tool.ts";

/** What Deno says about a permission: granted, would ask, or refused. */
export type PermissionState = "granted" | "prompt" | "denied";

/** The state of every capability. */
export type CapabilityStates = Record<Capability, PermissionState>;

/** Whether the agent runs one task headless or talks with a person in a terminal. */
export type SessionMode = "headless" | "interactive";

/** The Deno flag that grants each capability. */
export const CAPABILITY_FLAGS: Readonly<Record<Capability, string>> = {
  read: "--allow-read",
  write: "--allow-write",
  run: "--allow-run",
  net: "--allow-net",
  env: "--allow-env",
};

/**
 * Asks Deno what it grants, for the working directory where the permission is path-scoped and
 * for `bash` where it is command-scoped.
 *
 * @example
 * ```ts
 * import { queryCapabilities } from "./capabilities.ts";
 * const states = await queryCapabilities(Deno.cwd());
 * if (!["granted", "prompt", "denied"].includes(states.read)) throw new Error("unexpected");
 * ```
 */
export async function queryCapabilities(cwd: string, shell = "bash"): Promise<CapabilityStates> {
  const descriptors: Record<Capability, Deno.PermissionDescriptor> = {
    read: { name: "read", path: cwd },
    write: { name: "write", path: cwd },
    run: { name: "run", command: shell },
    net: { name: "net" },
    env: { name: "env" },
  };
  const states = await Promise.all(
    CAPABILITIES.map((capability) => Deno.permissions.query(descriptors[capability])),
  );
  return Object.fromEntries(
    CAPABILITIES.map((capability, i) => [capability, states[i].state]),
  ) as CapabilityStates;
}

/** A tool left out, and why. */
export interface WithheldTool {
  /** The tool's name. */
  name: string;
  /** The first capability that kept it out. */
  capability: Capability;
  /** What Deno said about that capability. */
  state: PermissionState;
}

/**
 * Splits tools into those offered and those withheld, by the permission table: headless runs
 * offer a tool only when Deno grants all it needs; interactive sessions also offer tools whose
 * permissions Deno would ask for at first use; refused permissions withhold the tool in both.
 *
 * @example
 * ```ts
 * import { offerTools } from "./capabilities.ts";
 * const states = { read: "granted", write: "prompt", run: "denied", net: "denied", env: "denied" } as const;
 * const tool = (name: string, capability: "read" | "write") =>
 *   ({ name, description: "", inputSchema: {}, capabilities: [capability], execute: () => "" });
 * const { offered } = offerTools([tool("read", "read"), tool("write", "write")], states, "headless");
 * if (offered.map((t) => t.name).join() !== "read") throw new Error("unexpected");
 * ```
 */
export function offerTools<T extends Tool>(
  tools: readonly T[],
  states: CapabilityStates,
  mode: SessionMode,
): { offered: T[]; withheld: WithheldTool[] } {
  const offered: T[] = [];
  const withheld: WithheldTool[] = [];
  for (const tool of tools) {
    const missing = tool.capabilities.find((capability) => {
      const state = states[capability];
      return !(state === "granted" || (state === "prompt" && mode === "interactive"));
    });
    if (missing === undefined) offered.push(tool);
    else withheld.push({ name: tool.name, capability: missing, state: states[missing] });
  }
  return { offered, withheld };
}

/**
 * A one-line summary of the capabilities, e.g. `read: granted, write: denied, run: prompt, …`.
 *
 * @example
 * ```ts
 * import { describeCapabilities } from "./capabilities.ts";
 * const line = describeCapabilities({ read: "granted", write: "denied", run: "prompt", net: "granted", env: "granted" });
 * if (!line.startsWith("read: granted")) throw new Error("unexpected");
 * ```
 */
export function describeCapabilities(states: CapabilityStates): string {
  return CAPABILITIES.map((capability) => `${capability}: ${states[capability]}`).join(", ");
}
