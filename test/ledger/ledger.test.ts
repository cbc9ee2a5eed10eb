import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { emSql, type Sql, statement } from '#src/db/sql.ts';
import { ACCOUNT_KINDS, accountName } from '#src/ledger/chart.ts';
import { flowTransaction } from '#src/ledger/flows.ts';
import { type LedgerTransaction, post } from '#src/ledger/ledger.ts';
import { accountBalances, balances, compactBalances, entries, payoutEntries } from '#src/ledger/read.ts';
import { toDecimal } from '#src/lib/money.ts';
import { harness } from '../harness.ts';

/** A ledger transaction of two entries: `amount` from `from` to `to`. */
function move(args: {
  from: string;
  to: string;
  amount: string;
  currency?: string;
  at?: Date;
}): LedgerTransaction {
  const currency = args.currency ?? 'USDT';
  return {
    tenantId: null,
    payoutId: null,
    cause: { object: 'payout', id: randomUUID(), transition: 'TEST (A → B)' },
    at: args.at ?? new Date(),
    entries: [
      { account: args.from, currency, amount: toDecimal(args.amount).negated() },
      { account: args.to, currency, amount: toDecimal(args.amount) },
    ],
  };
}

const rawInsert = statement(
  'test_ledger_raw_insert',
  `insert into ledger_entries (id, transaction_id, account, currency, amount, cause_object, cause_id, transition, created_at)
   values (gen_random_uuid(), $1, $2, $3, $4, 'payout', gen_random_uuid(), 'TEST (A → B)', now())`,
);

/** The same, at a given time: the month decides the partition. */
const insertAt = statement(
  'test_ledger_raw_insert_at',
  `insert into ledger_entries (id, transaction_id, account, currency, amount, cause_object, cause_id, transition, created_at)
   values (gen_random_uuid(), $1, $2, 'USDT', $3, 'payout', gen_random_uuid(), 'TEST (A → B)', $4)`,
);

/** The error a piece of database work ends with (its transaction rolled back), or null when it committed. */
async function outcome(work: (tx: Sql) => Promise<unknown>): Promise<Error | null> {
  try {
    await sql().transaction(work);
    return null;
  } catch (e) {
    return e as Error;
  }
}

const sql = () => emSql(harness().service.deps.orm.em.fork());
const prefix = () => `test:${randomUUID().slice(0, 8)}`;

describe('the ledger', () => {
  describe('in the database', () => {
    it('refuses at commit a transaction that does not sum to zero in each currency', async () => {
      const p = prefix();
      const tx = randomUUID();
      const err = await outcome(async (t) => {
        await t.rows(rawInsert, [tx, `${p}:a`, 'USDT', '-10']);
        await t.rows(rawInsert, [tx, `${p}:b`, 'USDT', '9.999999']);
      });
      expect(err?.message).to.match(/does not balance/);
      expect(await accountBalances(sql(), `${p}:a`)).to.deep.equal([]);
    });

    it('refuses a transaction balanced in total but not per currency', async () => {
      const p = prefix();
      const tx = randomUUID();
      const err = await outcome(async (t) => {
        await t.rows(rawInsert, [tx, `${p}:a`, 'USDT', '-10']);
        await t.rows(rawInsert, [tx, `${p}:b`, 'NGN', '10']);
      });
      expect(err?.message).to.match(/does not balance/);
    });

    it('checks at commit, not per statement: a transaction may be written in several statements', async () => {
      const p = prefix();
      const tx = randomUUID();
      const err = await outcome(async (t) => {
        await t.rows(rawInsert, [tx, `${p}:a`, 'USDT', '-10']);
        await t.rows(rawInsert, [tx, `${p}:b`, 'USDT', '10']);
      });
      expect(err).to.equal(null);
      expect((await accountBalances(sql(), `${p}:b`)).map((b) => b.balance)).to.deep.equal(['10']);
    });

    it('refuses to add an unbalancing entry to a transaction already committed', async () => {
      const p = prefix();
      const tx = randomUUID();
      await sql().transaction(async (t) => {
        await t.rows(rawInsert, [tx, `${p}:a`, 'USDT', '-1']);
        await t.rows(rawInsert, [tx, `${p}:b`, 'USDT', '1']);
      });
      const err = await outcome((t) => t.rows(rawInsert, [tx, `${p}:c`, 'USDT', '5']));
      expect(err?.message).to.match(/does not balance/);
    });

    it('refuses a zero entry', async () => {
      const err = await outcome((t) => t.rows(rawInsert, [randomUUID(), `${prefix()}:a`, 'USDT', '0']));
      expect(err?.message).to.match(/ledger_entries_amount_check/);
    });

    it('refuses to update, delete or truncate entries', async () => {
      const p = prefix();
      await post(sql(), [move({ from: `${p}:a`, to: `${p}:b`, amount: '3' })]);
      const em = () => harness().service.deps.orm.em.fork();
      const attempts = {
        update: `update ledger_entries set amount = amount * 2 where account = '${p}:b'`,
        delete: `delete from ledger_entries where account = '${p}:b'`,
        truncate: 'truncate ledger_entries',
      };
      for (const [op, text] of Object.entries(attempts)) {
        const err = await em()
          .execute(text)
          .then(
            () => null,
            (e: Error) => e,
          );
        expect(err?.message, op).to.match(
          new RegExp(`ledger entries are immutable: ${op.toUpperCase()} refused`),
        );
      }
      expect((await accountBalances(sql(), `${p}:b`)).map((b) => b.balance)).to.deep.equal(['3']);
    });

    // The entries are partitioned by month (src/db/partitions.ts): the rules hold on every
    // partition, and for a transaction whose entries fall in two months.
    it('refuses to truncate any partition of the entries', async () => {
      const em = () => harness().service.deps.orm.em.fork();
      const partitions = await em().execute<{ name: string }[]>(
        `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
          where i.inhparent = 'ledger_entries'::regclass order by 1`,
      );
      // This month's (the table as it was before partitioning), three ahead and the default.
      expect(partitions.length).to.be.at.least(5);
      for (const { name } of partitions) {
        const err = await em()
          .execute(`truncate ${name}`)
          .then(
            () => null,
            (e: Error) => e,
          );
        expect(err?.message, name).to.match(/ledger entries are immutable: TRUNCATE refused/);
      }
    });

    it('checks the balance of a transaction whose entries fall in two months', async () => {
      const p = prefix();
      const now = new Date();
      const nextMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 2));
      const unbalanced = randomUUID();
      const err = await outcome(async (t) => {
        await t.rows(insertAt, [unbalanced, `${p}:a`, '-10', now]);
        await t.rows(insertAt, [unbalanced, `${p}:b`, '9', nextMonth]);
      });
      expect(err?.message).to.match(/does not balance/);
      const balanced = randomUUID();
      expect(
        await outcome(async (t) => {
          await t.rows(insertAt, [balanced, `${p}:a`, '-10', now]);
          await t.rows(insertAt, [balanced, `${p}:b`, '10', nextMonth]);
        }),
      ).to.equal(null);
      // Committed across two partitions, the transaction still takes no entry that unbalances it.
      const late = await outcome((t) => t.rows(insertAt, [balanced, `${p}:c`, '1', nextMonth]));
      expect(late?.message).to.match(/does not balance/);
      const where = await harness()
        .service.deps.orm.em.fork()
        .execute<{ partition: string }[]>(
          `select tableoid::regclass::text as partition from ledger_entries where transaction_id = ? order by created_at`,
          [balanced],
        );
      expect(new Set(where.map((w) => w.partition)).size).to.equal(2);
    });

    it('keeps the balances of entries written into a partition by name', async () => {
      const p = prefix();
      const [partition] = await harness()
        .service.deps.orm.em.fork()
        .execute<{ name: string }[]>(
          `select tableoid::regclass::text as name from ledger_entries where created_at <= now() limit 1`,
        );
      const named = statement(
        'test_ledger_raw_insert_named',
        `insert into ${partition!.name} (id, transaction_id, account, currency, amount, cause_object, cause_id, transition, created_at)
         values (gen_random_uuid(), $1, $2, 'USDT', -7, 'payout', gen_random_uuid(), 'TEST (A → B)', now()),
                (gen_random_uuid(), $1, $3, 'USDT', 7, 'payout', gen_random_uuid(), 'TEST (A → B)', now())`,
      );
      await sql().transaction((t) => t.rows(named, [randomUUID(), `${p}:a`, `${p}:b`]));
      expect(await balances(sql(), p)).to.deep.equal([
        { account: `${p}:a`, currency: 'USDT', balance: '-7', entries: 1 },
        { account: `${p}:b`, currency: 'USDT', balance: '7', entries: 1 },
      ]);
      const err = await outcome((t) =>
        t.rows(
          statement(
            'test_ledger_raw_insert_named_unbalanced',
            `insert into ${partition!.name} (id, transaction_id, account, currency, amount, cause_object, cause_id, transition, created_at)
             values (gen_random_uuid(), $1, $2, 'USDT', 7, 'payout', gen_random_uuid(), 'TEST (A → B)', now())`,
          ),
          [randomUUID(), `${p}:c`],
        ),
      );
      expect(err?.message).to.match(/does not balance/);
    });
  });

  describe('posting', () => {
    it('refuses an unbalanced transaction before it reaches the database', async () => {
      const tx = move({ from: 'test:a', to: 'test:b', amount: '1' });
      tx.entries[1]!.amount = toDecimal('2');
      const err = await post(sql(), [tx]).then(
        () => null,
        (e: Error) => e,
      );
      expect(err?.message).to.match(/off by 1 USDT/);
    });

    it('writes many transactions in one statement and keeps balances by account and currency', async () => {
      const p = prefix();
      const at = new Date();
      await post(sql(), [
        move({ from: `${p}:rail`, to: `${p}:held`, amount: '100.000001', at }),
        move({ from: `${p}:rail`, to: `${p}:held`, amount: '50', currency: 'NGN', at }),
        move({ from: `${p}:held`, to: `${p}:gone`, amount: '40', at }),
      ]);
      const expected = [
        { account: `${p}:gone`, currency: 'USDT', balance: '40', entries: 1 },
        { account: `${p}:held`, currency: 'NGN', balance: '50', entries: 1 },
        { account: `${p}:held`, currency: 'USDT', balance: '60.000001', entries: 2 },
        { account: `${p}:rail`, currency: 'NGN', balance: '-50', entries: 1 },
        { account: `${p}:rail`, currency: 'USDT', balance: '-100.000001', entries: 1 },
      ];
      expect(await balances(sql(), p)).to.deep.equal(expected);
      // Folding the pending sums into the balances changes no balance.
      await compactBalances(sql(), new Date());
      expect(await balances(sql(), p)).to.deep.equal(expected);

      const held = await entries(sql(), {
        account: `${p}:held`,
        exact: true,
        from: new Date(at.getTime() - 1),
        to: new Date(at.getTime() + 1),
        limit: 10,
      });
      expect(held.map((e) => [e.currency, e.amount])).to.deep.equal([
        ['USDT', '100.000001'],
        ['NGN', '50'],
        ['USDT', '-40'],
      ]);
      // A prefix, paged two at a time, returns every entry under it once, account by account.
      const seen: string[] = [];
      let after = null;
      for (;;) {
        const page = await entries(sql(), {
          account: `${p}:`,
          from: new Date(0),
          to: new Date(at.getTime() + 1),
          limit: 2,
          after,
        });
        seen.push(...page.map((e) => `${e.account}:${e.amount}`));
        if (page.length < 2) break;
        const last = page.at(-1)!;
        after = { account: last.account, created_at: new Date(last.created_at), id: last.id };
      }
      expect(seen).to.deep.equal([
        `${p}:gone:40`,
        `${p}:held:100.000001`,
        `${p}:held:50`,
        `${p}:held:-40`,
        `${p}:rail:-100.000001`,
        `${p}:rail:-50`,
      ]);
    });

    it('sums one payout and one virtual account into their parent line, and reads them from their entries', async () => {
      const tenant = randomUUID();
      const payout = randomUUID();
      const va = `99${Date.now()}`.slice(0, 10);
      const flow = {
        cause: 'inflow' as const,
        name: 'TEST',
        description: 'test',
        legs: [
          {
            from: 'virtualAccount',
            to: 'payout',
            amount: 'x',
            currency: 'c',
            movement: { type: 'money_received', on: 'to' },
          },
        ] as const,
      };
      const tx = flowTransaction(
        flow,
        {
          accounts: {
            virtualAccount: accountName('virtualAccount', { account_number: va }),
            payout: accountName('payout', { tenant, payout }),
          },
          amounts: { x: toDecimal('2500') },
          currencies: { c: 'NGN' },
        },
        {
          tenantId: tenant,
          payoutId: payout,
          causeId: randomUUID(),
          transition: 'ATTRIBUTED (CONFIRMED → MATCHED)',
          at: new Date(),
        },
      );
      await post(sql(), [tx]);
      expect(await balances(sql(), `tenants:${tenant}:`)).to.deep.equal([
        { account: `tenants:${tenant}:payouts`, currency: 'NGN', balance: '2500', entries: 1 },
      ]);
      expect(await accountBalances(sql(), `tenants:${tenant}:payouts:${payout}`)).to.deep.equal([
        { account: `tenants:${tenant}:payouts:${payout}`, currency: 'NGN', balance: '2500', entries: 1 },
      ]);
      const statement = await payoutEntries(sql(), payout);
      expect(statement.map((e) => [e.account, e.amount, e.movement])).to.deep.equal([
        [`collection:bank:${va}`, '-2500', null],
        [`tenants:${tenant}:payouts:${payout}`, '2500', 'money_received'],
      ]);
      expect(ACCOUNT_KINDS.virtualAccount.summary).to.equal('collection:bank');
    });
  });
});
