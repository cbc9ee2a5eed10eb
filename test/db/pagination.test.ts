import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { AppError } from '#src/http/errors.ts';
import { decodeCursor, encodeCursor, paginate } from '#src/http/pagination.ts';
import { Tenant } from '#src/tenants/entities.ts';
import { harness } from '../harness.ts';

describe('keyset pagination', () => {
  const key = Buffer.alloc(32, 7);

  describe('cursors', () => {
    const position = {
      l: 'payouts',
      c: '2026-01-01T00:00:00.000Z',
      i: '019a0000-0000-7000-8000-000000000001',
    };

    it('round-trip a position', () => {
      const cursor = encodeCursor(key, position);
      expect(decodeCursor(key, cursor, 'payouts')).to.deep.equal({
        createdAt: new Date(position.c),
        id: position.i,
      });
    });

    const cases: { name: string; cursor: (valid: string) => string; list?: string }[] = [
      { name: 'garbage', cursor: () => 'not-a-cursor' },
      {
        name: 'an edited payload',
        cursor: (valid) =>
          `${Buffer.from(JSON.stringify({ ...position, c: '2030-01-01T00:00:00.000Z' })).toString('base64url')}.${valid.split('.')[1]}`,
      },
      { name: 'a forged signature', cursor: (valid) => `${valid.split('.')[0]}.${'A'.repeat(32)}` },
      { name: 'a cursor of another list', cursor: (valid) => valid, list: 'refunds' },
      { name: 'a cursor signed with another key', cursor: () => encodeCursor(Buffer.alloc(32, 8), position) },
    ];
    for (const c of cases) {
      it(`refuse ${c.name} with INVALID_CURSOR`, () => {
        expect(() => decodeCursor(key, c.cursor(encodeCursor(key, position)), c.list ?? 'payouts'))
          .to.throw(AppError)
          .with.property('code', 'INVALID_CURSOR');
      });
    }
  });

  describe('pages over PostgreSQL', () => {
    const prefix = `page-${randomUUID().slice(0, 8)}`;
    let ids: string[];

    before(async () => {
      const em = harness().service.deps.orm.em.fork();
      const base = Date.parse('2026-03-01T00:00:00Z');
      for (let i = 0; i < 25; i++) {
        // Three rows share each timestamp: the id breaks the tie.
        em.create(Tenant, {
          name: `${prefix}-${i}`,
          payoutsApproved: false,
          createdAt: new Date(base + Math.floor(i / 3) * 1000),
        });
      }
      await em.flush();
      const all = await em.find(
        Tenant,
        { name: { $like: `${prefix}-%` } },
        { orderBy: { createdAt: 'desc', id: 'desc' } },
      );
      ids = all.map((t) => t.id);
    });

    it('walk newest first through every row exactly once, deciding on has_more', async () => {
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      for (;;) {
        const page = await paginate(harness().service.deps.orm.em.fork(), Tenant, {
          where: { name: { $like: `${prefix}-%` } },
          list: `tenants:${prefix}`,
          limit: 10,
          cursor,
          cursorKey: key,
        });
        pages++;
        seen.push(...page.items.map((t) => t.id));
        expect(page.meta.limit).to.equal(10);
        if (!page.meta.has_more) {
          expect(page.meta.next_cursor).to.equal(null);
          break;
        }
        cursor = page.meta.next_cursor ?? undefined;
      }
      expect(pages).to.equal(3);
      expect(seen).to.deep.equal(ids);
    });

    it('reports has_more false on an exactly full last page', async () => {
      const page = await paginate(harness().service.deps.orm.em.fork(), Tenant, {
        where: { name: { $like: `${prefix}-%` } },
        list: `tenants:${prefix}`,
        limit: 25,
        cursor: undefined,
        cursorKey: key,
      });
      expect(page.items).to.have.length(25);
      expect(page.meta).to.deep.equal({ next_cursor: null, has_more: false, limit: 25 });
    });
  });
});
