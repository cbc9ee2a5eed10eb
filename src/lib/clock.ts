/** The only source of "now" in the service; tests pass a clock they can move. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that stands still until told to move: deterministic tests without sleeping. */
export class ManualClock implements Clock {
  #ms: number;
  constructor(start: Date = new Date()) {
    this.#ms = start.getTime();
  }
  now(): Date {
    return new Date(this.#ms);
  }
  advance(ms: number): void {
    this.#ms += ms;
  }
  set(to: Date): void {
    this.#ms = to.getTime();
  }
}

/**
 * When money arrived, as a rail reports it (a block's time, a bank's credit time), but never
 * later than `now`: a provider whose clock runs ahead of ours cannot make money look later than it is.
 */
export function arrivalTime(reported: Date, now: Date): Date {
  return reported.getTime() < now.getTime() ? reported : now;
}
