// Shared pieces of the TypeScript-SDK bench peers (see SCENARIO.md and the
// Rust equivalents in bench/peers/src/lib.rs).
import { appendFileSync, readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

/** The fixed fs/read_text_file answer: the scenario's line repeated 16 times. */
export const FS_CONTENT =
  "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n".repeat(16);
export const SESSION_ID = "bench-session";
export const FS_PATH = "/tmp/x";
export const SESSION_CWD = "/tmp";
export const SHUTDOWN_GRACE_MS = 10_000;

/** Parses the prompt text into a workload. */
export function parseScenario(text) {
  const [kind, a, b] = text.trim().split(/\s+/);
  const n = (w) => (w !== undefined && /^\d+$/.test(w) ? Number(w) : undefined);
  if (kind === "stream" && n(a) !== undefined && n(b) !== undefined) {
    return { kind, count: n(a), size: n(b) };
  }
  if (kind === "rpc" && n(a) !== undefined) return { kind, count: n(a) };
  if (kind === "rpcpar" && n(a) !== undefined && n(b) !== undefined) {
    return { kind, count: n(a), inFlight: Math.max(1, n(b)) };
  }
  return { kind: "hello" };
}

/** Milliseconds since process start. */
export const nowMs = () => performance.now();

function vmHwmKb() {
  try {
    const m = /^VmHWM:\s+(\d+)/m.exec(readFileSync("/proc/self/status", "utf8"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Appends the resource self-report line to $BENCH_RUSAGE_OUT, if set. */
export function reportRusage(role, impl) {
  const path = process.env.BENCH_RUSAGE_OUT;
  if (!path) return;
  const u = process.resourceUsage();
  const line =
    `role=${role} impl=${impl} pid=${process.pid} user_us=${u.userCPUTime} ` +
    `sys_us=${u.systemCPUTime} maxrss_kb=${vmHwmKb()} vcsw=${u.voluntaryContextSwitches} ` +
    `ivcsw=${u.involuntaryContextSwitches} wall_ms=${nowMs().toFixed(3)}\n`;
  appendFileSync(path, line);
}
