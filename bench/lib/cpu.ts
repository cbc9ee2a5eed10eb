import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';

/**
 * CPU time by party during a run, from /proc: the server process (all its threads), every
 * PostgreSQL process, and this process (the load generator). On two cores shared by all three,
 * CPU milliseconds per request say who the limit is better than a profile of one of them.
 * PostgreSQL processes of other databases on the same server count too (the run owns its database,
 * not the server), so a busy neighbour shows up as PostgreSQL time.
 */

/** /proc reports process times in USER_HZ ticks, 100 per second on Linux. */
const TICK_MS = 10;

export interface CpuSample {
  serverMs: number;
  postgresMs: number;
  loadMs: number;
  /**
   * With a database name: each PostgreSQL session of that database (its process title names it)
   * and its CPU so far, so that other sessions' work on a shared server does not count.
   */
  sessions?: Map<number, number>;
  /** All CPUs together, busy and idle, from os.cpus(). */
  machineBusyMs: number;
  machineTotalMs: number;
}

/**
 * A process's CPU time; with `reaped`, plus that of its children that ended and were waited for
 * (the postmaster collects its backends' time that way, so sessions closing mid-run still count).
 */
function processMs(pid: number, reaped = false): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const own = Number(fields[11]) + Number(fields[12]);
    const children = reaped ? Number(fields[13]) + Number(fields[14]) : 0;
    return (own + children) * TICK_MS;
  } catch {
    return 0;
  }
}

function postgresPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

/** The backends of `database`, by their process title (`postgres: ... <user> <database> <client> ...`). */
function sessionsOf(database: string): Map<number, number> {
  const sessions = new Map<number, number>();
  for (const pid of postgresPids()) {
    try {
      const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (title.includes(` ${database} `)) sessions.set(pid, processMs(pid));
    } catch {
      // The session ended while we looked.
    }
  }
  return sessions;
}

export function cpuSample(serverPids: readonly number[], database?: string): CpuSample {
  let busy = 0;
  let total = 0;
  for (const cpu of os.cpus()) {
    const t = cpu.times;
    busy += t.user + t.nice + t.sys + t.irq;
    total += t.user + t.nice + t.sys + t.irq + t.idle;
  }
  return {
    serverMs: serverPids.reduce((sum, pid) => sum + processMs(pid), 0),
    postgresMs: postgresPids().reduce((sum, pid) => sum + processMs(pid, true), 0),
    loadMs: processMs(process.pid),
    ...(database === undefined ? {} : { sessions: sessionsOf(database) }),
    machineBusyMs: busy,
    machineTotalMs: total,
  };
}

export interface CpuUse {
  /** CPU milliseconds per operation. */
  serverMsPerOp: number;
  postgresMsPerOp: number;
  /**
   * The sessions of the sampled database alone (when one was named): sessions that ended before
   * the second sample are left out, and so are PostgreSQL's background processes (WAL writer,
   * checkpointer, autovacuum).
   */
  sessionsMsPerOp?: number;
  loadMsPerOp: number;
  /** Share of the whole machine (all cores) that was busy, 0..1. */
  machineBusy: number;
}

export function cpuUse(before: CpuSample, after: CpuSample, operations: number): CpuUse {
  const per = (a: number, b: number) => Math.round(((b - a) / Math.max(1, operations)) * 100) / 100;
  return {
    serverMsPerOp: per(before.serverMs, after.serverMs),
    postgresMsPerOp: per(before.postgresMs, after.postgresMs),
    ...(before.sessions && after.sessions
      ? {
          sessionsMsPerOp: per(
            0,
            [...after.sessions].reduce((sum, [pid, ms]) => sum + ms - (before.sessions!.get(pid) ?? 0), 0),
          ),
        }
      : {}),
    loadMsPerOp: per(before.loadMs, after.loadMs),
    machineBusy:
      Math.round(
        ((after.machineBusyMs - before.machineBusyMs) /
          Math.max(1, after.machineTotalMs - before.machineTotalMs)) *
          100,
      ) / 100,
  };
}
