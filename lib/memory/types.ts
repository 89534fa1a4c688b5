/**
 * Run loops (one user goal and everything done for it) and the long-term memory they are
 * archived into.
 *
 * @module
 */

/** How a run loop stands. */
export type RunLoopStatus = "active" | "completed" | "failed";

/** A tool call made in an iteration. */
export interface IterationToolCall {
  /** The call id. */
  id: string;
  /** The tool's name. */
  name: string;
  /** The arguments. */
  input: unknown;
}

/** A tool result of an iteration. */
export interface IterationToolResult {
  /** The call id. */
  id: string;
  /** The tool's name. */
  name: string;
  /** What the tool returned. */
  output: string;
  /** Whether it failed. */
  isError: boolean;
}

/** One round of a run loop: what the user added, and what the agent thought, did and said. */
export interface Iteration {
  /** The position in the run loop, from 0. */
  index: number;
  /** What the user said to start this iteration. */
  userMessage?: string;
  /** The model's reasoning, in order. */
  reasoning: string[];
  /** The tool calls, in order. */
  toolCalls: IterationToolCall[];
  /** The tool results, in call order. */
  toolResults: IterationToolResult[];
  /** The answer. */
  response: string;
  /** When it started (ISO). */
  startedAt: string;
  /** When it ended (ISO). */
  endedAt?: string;
}

/** One user goal and all the iterations spent on it. */
export interface RunLoop {
  /** The id. */
  id: string;
  /** The goal, in the user's words. */
  goal: string;
  /** How it stands. */
  status: RunLoopStatus;
  /** The iterations, in order. */
  iterations: Iteration[];
  /** When it was started (ISO). */
  createdAt: string;
  /** When it was completed or failed (ISO). */
  completedAt?: string;
  /** The run loop this one goes on from, when the user named a completed one. */
  seededFrom?: string;
  /**
   * When the memory's retention dropped its reasoning, tool calls and tool results (ISO),
   * keeping its outline: the goal, what the user said, the answers.
   */
  detailDroppedAt?: string;
}

/** What a segment of an archived run loop holds. */
export type SegmentType = "user" | "reasoning" | "tool_call" | "tool_result" | "response";

/** Where a segment comes from: precise enough to find it again and read around it. */
export interface Anchor {
  /** The run loop. */
  runLoopId: string;
  /** The iteration, from 0. */
  iteration: number;
  /** The segment's position in the run loop, from 0. */
  segment: number;
  /** What it holds. */
  type: SegmentType;
  /** When it happened (ISO). */
  timestamp: string;
}

/** A piece of an archived run loop. */
export interface Segment {
  /** Where it comes from. */
  anchor: Anchor;
  /** Its text. */
  text: string;
}

/** A segment found by a search, with how well it matched. */
export interface RetrievedSegment extends Segment {
  /** The fused relevance, higher is better (0 to 1). */
  relevance: number;
}
