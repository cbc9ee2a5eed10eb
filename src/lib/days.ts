/**
 * UTC days, as the rails' daily records (a processor's settlement report, a day of a bank
 * statement) and reconciliation runs name them: `YYYY-MM-DD`, from midnight to midnight UTC.
 */

/** Whether `value` is a calendar day written `YYYY-MM-DD`. */
export function isDay(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const start = Date.parse(`${value}T00:00:00Z`);
  return !Number.isNaN(start) && new Date(start).toISOString().startsWith(value);
}

/** The UTC day of a time. */
export function dayOf(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** The first instant of a UTC day. */
export function dayStart(day: string): Date {
  return new Date(`${day}T00:00:00.000Z`);
}

/** The first instant after a UTC day. */
export function dayEnd(day: string): Date {
  return new Date(dayStart(day).getTime() + 86_400_000);
}

/** The day before `day`. */
export function dayBefore(day: string): string {
  return dayOf(new Date(dayStart(day).getTime() - 86_400_000));
}
