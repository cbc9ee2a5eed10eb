import { admin } from '../settlement/fixtures.ts';

/** A break as `recon breaks` lists it. */
export interface Break {
  id: string;
  run_id: string;
  day: string;
  rail: string;
  account: string;
  kind: string;
  reference: string;
  currency: string;
  ledger_amount: string | null;
  rail_amount: string | null;
  ledger_state: string | null;
  rail_state: string | null;
  payout_id: string | null;
  inflow_id: string | null;
  outflow_id: string | null;
  status: string;
  resolution: string | null;
}

/** Every break (`recon breaks`, open or resolved), every page of it, newest first. */
export async function allBreaks(): Promise<Break[]> {
  const breaks: Break[] = [];
  let cursor: string | null = null;
  do {
    const page: { data: Break[]; next_cursor: string | null } = await admin(
      'recon',
      'breaks',
      '--limit',
      '100',
      ...(cursor ? ['--cursor', cursor] : []),
    );
    breaks.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return breaks;
}
