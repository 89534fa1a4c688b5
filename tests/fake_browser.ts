/**
 * A browser whose user says yes, for the tests of `agent mcp login`: it is given the
 * authorization URL, follows the authorization server's redirect, and lands on the agent's
 * loopback callback.
 *
 * Run: `deno run -A tests/fake_browser.ts <url>`.
 *
 * @module
 */

const authorized = await fetch(Deno.args[0], { redirect: "manual" });
await authorized.body?.cancel();
const back = authorized.headers.get("location");
if (!back) throw new Error(`no redirect from ${Deno.args[0]}: ${authorized.status}`);
const landed = await fetch(back);
await landed.body?.cancel();
