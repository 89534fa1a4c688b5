/**
 * What compaction leaves of a conversation: a summary standing in for its older messages.
 * The history itself is never changed; this says what is sent instead of its beginning.
 *
 * @module
 */

/** A compacted conversation's state, carried from run to run and kept in sessions. */
export interface CompactionState {
  /** The summary that stands in for the older messages. */
  summary: string;
  /** How many leading messages of the history the summary replaces. */
  replaces: number;
}
