import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import type { AnyStateNode } from 'xstate';
import { generateDocs, REPO_ROOT, staleDocs } from '#src/docs/generate.ts';
import { describeMachine, toDot, toMermaid } from '#src/docs/machines.ts';
import { MACHINE_DOCS } from '#src/docs/registry.ts';
import { call, errorOf } from '../client.ts';
import { harness } from '../harness.ts';

/** Every state node below the root, and every event a state declares, read straight from the machine. */
function declared(node: AnyStateNode): { states: string[]; events: string[] } {
  const states: string[] = [];
  const events: string[] = [];
  const walk = (n: AnyStateNode) => {
    events.push(...Object.keys(n.config.on ?? {}));
    for (const child of Object.values(n.states) as AnyStateNode[]) {
      states.push(child.key);
      walk(child);
    }
  };
  walk(node);
  return { states, events };
}

/** URLs in a page that point anywhere but the service itself. */
function foreignUrls(html: string, own: string): string[] {
  return [...html.matchAll(/(?:https?:)?\/\/[^\s"'<>)]+/g)]
    .map((m) => m[0])
    .filter((u) => !u.startsWith(own));
}

describe('generated documentation', () => {
  it('is committed exactly as the code generates it (run `npm run docs` when this fails)', async () => {
    const stale = await staleDocs();
    expect(
      stale.map((s) => `${s.path} (${s.problem})`),
      'stale generated documents: run `npm run docs` and commit the result',
    ).to.deep.equal([]);
  });

  it('comes out identical on a second run', async () => {
    const first = await generateDocs();
    const second = await generateDocs();
    expect([...second.keys()]).to.deep.equal([...first.keys()]);
    for (const [file, content] of first) expect(second.get(file), file).to.equal(content);
  });

  it('covers every machine in machines/ (register a new one in src/docs/registry.ts)', async () => {
    const files = await readdir(path.join(REPO_ROOT, 'machines'));
    const machines = files
      .filter((f) => f.endsWith('.machine.ts'))
      .map((f) => f.slice(0, -'.machine.ts'.length))
      .sort();
    expect(MACHINE_DOCS.map((d) => d.name).sort()).to.deep.equal(machines);
  });

  it('writes an OpenAPI 3.1 document with the stable base URL', async () => {
    const doc = JSON.parse((await generateDocs()).get('docs/openapi.json')!);
    expect(doc.openapi).to.match(/^3\.1\./);
    expect(doc.servers).to.deep.equal([{ url: 'http://127.0.0.1:3000', description: 'This service' }]);
    expect(doc.paths['/v1/payouts'].post.responses).to.have.property('201');
  });

  for (const { name, machine } of MACHINE_DOCS) {
    it(`draws every state and event of the ${name} machine`, () => {
      const model = describeMachine(machine);
      const mermaid = toMermaid(model);
      const dot = toDot(model);
      const { states, events } = declared(machine.root);
      for (const state of states) {
        expect(mermaid, `state ${state}`).to.include(state);
        expect(dot, `state ${state}`).to.include(`label="${state}"`);
      }
      for (const event of events) {
        expect(mermaid, `event ${event}`).to.include(event);
        expect(dot, `event ${event}`).to.include(event);
      }
      for (const guard of model.guards) expect(mermaid, `guard ${guard}`).to.include(`[${guard}]`);
    });
  }

  it("spells out the payout machine's guards, reason codes, webhooks and scheduled work", async () => {
    const md = (await generateDocs()).get('docs/machines/payout.md')!;
    const row = (cells: string[]) => `| ${cells.map((c) => (c ? `\`${c}\`` : '')).join(' | ')} |`;
    expect(md).to.include(
      row([
        'PENDING_PAYMENT.awaiting',
        'SETTLEMENT_CONFIRMED',
        'coversExpected',
        'PAYMENT_RECEIVED',
        'PAYMENT_RECEIVED',
        'payout.payment_received',
        'DISPATCH',
        'recordSettlement',
      ]),
    );
    // A reason code taken from the event is shown as such, not guessed.
    expect(md).to.include(
      row([
        'PROCESSING (any)',
        'PROCESSOR_FAILED',
        'otherwise',
        'FAILED',
        '(from event.failureCode)',
        'payout.failed',
        'RAISE_REFUND',
        'recordAttemptFailure',
      ]),
    );
    expect(md).to.include(
      row([
        '(new)',
        '(created)',
        '',
        'CREATED',
        'PAYOUT_CREATED',
        'payout.created',
        'GENERATE_INSTRUCTION',
        '',
      ]),
    );
    expect(md).to.include('PROCESSOR_FAILED | DISPATCH_FAILED [isRetryable and hasAttemptsLeft]');
  });
});

describe('documentation served by the service', () => {
  it('serves the API reference at /docs with its assets from the service itself', async () => {
    const res = await call('GET', '/docs');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(res.headers.get('content-security-policy')).to.include("default-src 'none'");
    expect(res.text).to.include('href="/docs/machines"');
    expect(res.text).to.include('src="/docs/assets/swagger-ui-bundle.js"');
    expect(foreignUrls(res.text, harness().url)).to.deep.equal([]);
    for (const asset of ['swagger-ui-bundle.js', 'swagger-ui.css', 'reference.js']) {
      const a = await call('GET', `/docs/assets/${asset}`);
      expect(a.status, asset).to.equal(200);
      expect(a.text.length, asset).to.be.greaterThan(0);
    }
  });

  it('serves every machine at /docs/machines, linked back to /docs', async () => {
    const res = await call('GET', '/docs/machines');
    expect(res.status).to.equal(200);
    expect(res.text).to.include('href="/docs"');
    for (const { name } of MACHINE_DOCS) {
      expect(res.text).to.match(new RegExp(`data-machine="${name}"[\\s\\S]*?<svg`));
      const svg = await call('GET', `/docs/machines/${name}.svg`);
      expect(svg.status, name).to.equal(200);
      expect(svg.headers.get('content-type'), name).to.match(/^image\/svg\+xml/);
    }
    expect(foreignUrls(res.text, harness().url)).to.deep.equal([]);
  });

  it('leaves other paths under /docs to the 404 of the API', async () => {
    for (const p of ['/docs/nope', '/docs/assets/package.json', '/docs/machines/nope.svg']) {
      const res = await call('GET', p);
      expect(res.status, p).to.equal(404);
      expect(errorOf(res).code, p).to.equal('ROUTE_NOT_FOUND');
    }
  });
});
