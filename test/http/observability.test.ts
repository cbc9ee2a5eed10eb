import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { createDeps } from '#src/create-deps.ts';
import { createApp } from '#src/http/app.ts';
import { readiness } from '#src/http/observability.ts';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { type RunningWorkers, startWorkers } from '#src/jobs/workers.ts';
import { createLogger } from '#src/lib/log.ts';
import { createMetrics } from '#src/observability/metrics.ts';
import { httpProviders } from '#src/providers/http-providers.ts';
import { appRouter } from '#src/router.ts';
import { type RunningService, startService } from '#src/service.ts';
import { runWebhooksOnce } from '#src/webhooks/job.ts';
import { createMerchant, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { newOperator } from '../operators/fixtures.ts';
import { bankPayout, payoutReadyMerchant } from '../payouts/fixtures.ts';
import { needsPostgresServer } from '../skip.ts';
import { receiversClosedAfterEach } from '../webhooks/receiver.ts';

/** Log lines a service wrote, parsed. */
type Line = Record<string, unknown> & { msg: string };

/** A second service on the harness's database and sandbox, logging into `lines`, with METRICS_PORT. */
async function startObservedService(lines: Line[]): Promise<RunningService> {
  const h = harness();
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line) as Line);
      done();
    },
  });
  return startService({
    config: { ...h.service.deps.config, PORT: 0, METRICS_PORT: 0 },
    databaseUrl: h.databaseUrl,
    providersUrl: h.sandboxUrl,
    secrets: h.service.deps.secrets,
    log: createLogger({ level: 'info', destination }),
    clock: h.clock,
    corridors: h.service.deps.corridors,
  });
}

/** The value of one sample in Prometheus text (0 when absent). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labelText = /\{(.*)\}/.exec(line)?.[1] ?? '';
    if (Object.entries(labels).every(([k, v]) => labelText.includes(`${k}="${v}"`))) {
      return Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return 0;
}

describe('operations: metrics, health and logs', function () {
  this.timeout(60_000);
  let service: RunningService;
  let merchant: Merchant;
  const lines: Line[] = [];
  const startReceiver = receiversClosedAfterEach();

  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${service.url}${path}`, { headers });
  const api = async (method: string, path: string, body?: unknown, key = merchant.key) => {
    const res = await fetch(`${service.url}${path}`, {
      method,
      headers: {
        'x-api-key': key,
        ...(body ? { 'content-type': 'application/json', 'idempotency-key': randomUUID() } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const admin = () => ({ authorization: `Bearer ${harness().adminToken}` });
  const scrape = async () => {
    const res = await get('/metrics', admin());
    expect(res.status).to.equal(200);
    return res.text();
  };

  before(async () => {
    service = await startObservedService(lines);
    merchant = await payoutReadyMerchant();
  });
  after(async () => {
    await service?.close();
  });

  describe('health', () => {
    it('/health/live and /health/ready answer ok; /health is as it was', async () => {
      for (const path of ['/health/live', '/health/ready', '/health']) {
        const res = await get(path);
        expect(res.status, path).to.equal(200);
        expect(await res.json(), path).to.deep.equal({ status: 'ok' });
      }
    });

    it('/health/ready is 503 NOT_READY with the envelope while migrations are missing or the database is gone', async function () {
      needsPostgresServer(this, 'a second, unmigrated database');
      const name = `payout_ready_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      const url = new URL(harness().databaseUrl);
      const adminDeps = harness().service.deps;
      await adminDeps.orm.em.fork().execute(`create database "${name}"`);
      url.pathname = `/${name}`;
      const deps = await createDeps({
        config: adminDeps.config,
        databaseUrl: url.toString(),
        providersUrl: harness().sandboxUrl,
        secrets: adminDeps.secrets,
        log: adminDeps.log,
      });
      try {
        const fresh = await readiness(deps);
        expect(fresh.ready).to.equal(false);
        expect(fresh)
          .to.have.property('reason')
          .that.matches(/migration\(s\) not applied/);
        const server = createApp(deps, appRouter).listen(0, '127.0.0.1');
        await once(server, 'listening');
        try {
          const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/health/ready`);
          expect(res.status).to.equal(503);
          const body = (await res.json()) as any;
          expect(body.error).to.include({ code: 'NOT_READY' });
          expect(body.error.details[0]).to.include({ field: 'database' });
          expect(body.error.request_id).to.be.a('string');
        } finally {
          server.close();
        }
        await deps.orm.migrator.up();
        expect(await readiness(deps)).to.deep.equal({ ready: true });
      } finally {
        await deps.orm.close();
        await adminDeps.orm.em.fork().execute(`drop database if exists "${name}" with (force)`);
      }
      expect(await readiness(deps)).to.include({ ready: false });
    });
  });

  it('GET / points to the reference, the state machines and the console', async () => {
    const json = await get('/');
    expect(json.status).to.equal(200);
    expect(((await json.json()) as any).links).to.include({
      docs: '/docs',
      machines: '/docs/machines',
      console: '/console',
    });
    const html = await get('/', { accept: 'text/html' });
    const page = await html.text();
    for (const href of ['/docs', '/docs/machines', '/console']) expect(page).to.include(`href="${href}"`);
  });

  describe('/metrics', () => {
    it('is 401 with the envelope without a bearer token, with a wrong one, or with an API key', async () => {
      const attempts: Record<string, string>[] = [
        {},
        { authorization: 'Bearer not-the-token' },
        { authorization: `Basic ${harness().adminToken}` },
        { 'x-api-key': merchant.key },
      ];
      for (const headers of attempts) {
        const res = await get('/metrics', headers);
        expect(res.status).to.equal(401);
        expect(((await res.json()) as any).error.code).to.equal('ADMIN_UNAUTHORIZED');
      }
    });

    it('answers the admin token and an operator token in Prometheus text', async () => {
      const res = await get('/metrics', admin());
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
      const operator = await newOperator('viewer');
      const asOperator = await get('/metrics', { authorization: `Bearer ${operator.token}` });
      expect(asOperator.status).to.equal(200);
      expect(await asOperator.text()).to.include('# TYPE payout_http_requests_total counter');
    });

    it('counts requests by route template, method and status, with latency histograms, never by raw path', async () => {
      const before = await scrape();
      const created = await api('POST', '/v1/payouts', bankPayout());
      expect(created.status).to.equal(201);
      const read = await api('GET', `/v1/payouts/${created.body.id}`);
      expect(read.status).to.equal(200);
      const missing = await api('GET', `/v1/payouts/${randomUUID()}`);
      expect(missing.status).to.equal(404);
      await get(`/no/such/${randomUUID()}`);
      const after = await scrape();

      const post = { route: '/v1/payouts', method: 'POST', status: '201' };
      expect(sample(after, 'payout_http_requests_total', post)).to.equal(
        sample(before, 'payout_http_requests_total', post) + 1,
      );
      const one = { route: '/v1/payouts/:id', method: 'GET', status: '200' };
      expect(sample(after, 'payout_http_request_duration_seconds_count', one)).to.equal(
        sample(before, 'payout_http_request_duration_seconds_count', one) + 1,
      );
      expect(
        sample(after, 'payout_http_request_duration_seconds_bucket', { ...one, le: '+Inf' }),
      ).to.be.greaterThan(0);
      expect(
        sample(after, 'payout_http_requests_total', { route: '/v1/payouts/:id', status: '404' }),
      ).to.be.greaterThan(0);
      expect(
        sample(after, 'payout_http_requests_total', { route: 'unmatched', status: '404' }),
      ).to.be.greaterThan(0);
      expect(after).to.not.include(created.body.id);
      expect(after).to.not.include('/no/such');
      expect(sample(after, 'payout_transitions_total', { from: 'none', to: 'CREATED' })).to.be.greaterThan(0);
    });

    it('keeps one registry per service instance', async () => {
      const harnessBefore = await harness().service.deps.metrics.registry.metrics();
      const created = await api('POST', '/v1/payouts', bankPayout());
      expect(created.status).to.equal(201);
      const harnessAfter = await harness().service.deps.metrics.registry.metrics();
      const post = { route: '/v1/payouts', method: 'POST', status: '201' };
      expect(sample(harnessAfter, 'payout_http_requests_total', post)).to.equal(
        sample(harnessBefore, 'payout_http_requests_total', post),
      );
    });

    it('reports the queues (due tasks, unpublished events, due deliveries) and the pool at scrape time', async () => {
      const before = await scrape();
      const created = await api('POST', '/v1/payouts', bankPayout());
      expect(created.status).to.equal(201);
      const after = await scrape();
      expect(sample(after, 'payout_outbox_unpublished_events')).to.be.greaterThan(
        sample(before, 'payout_outbox_unpublished_events'),
      );
      const due = (text: string) =>
        text
          .split('\n')
          .filter((l) => l.startsWith('payout_tasks_due{'))
          .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
      expect(due(after)).to.be.greaterThan(due(before));
      expect(after).to.match(/^payout_webhook_deliveries_due \d+$/m);
      expect(after).to.match(/^payout_db_pool_connections_in_use \d+$/m);
      expect(after).to.match(/^payout_db_pool_waiting \d+$/m);
    });

    it('counts provider calls and webhook attempts by outcome, and every payout transition', async () => {
      const receiver = await startReceiver(() => 200);
      const webhooked = await payoutReadyMerchant();
      const config = await api('PUT', '/v1/webhooks/config', { webhook_url: receiver.url }, webhooked.key);
      expect(config.status).to.equal(200);
      const before = await scrape();
      const created = await api('POST', '/v1/payouts', bankPayout(), webhooked.key);
      expect(created.status).to.equal(201);
      await runInstructionsOnce(service.deps);
      await runWebhooksOnce(service.deps, { tenantIds: [webhooked.tenantId] });
      const after = await scrape();

      const rates = { provider: 'rates', outcome: 'ok' };
      expect(sample(after, 'payout_provider_calls_total', rates)).to.be.greaterThan(
        sample(before, 'payout_provider_calls_total', rates),
      );
      expect(sample(after, 'payout_provider_call_duration_seconds_count', rates)).to.be.greaterThan(0);
      const success = { outcome: 'success' };
      expect(sample(after, 'payout_webhook_attempts_total', success)).to.be.greaterThan(
        sample(before, 'payout_webhook_attempts_total', success),
      );
      const generated = { from: 'CREATED', to: 'PENDING_PAYMENT' };
      // The pass generates every due instruction, this payout's among them.
      expect(sample(after, 'payout_transitions_total', generated)).to.be.greaterThan(
        sample(before, 'payout_transitions_total', generated),
      );
    });

    it('counts a provider that does not answer as network_error', async () => {
      const metrics = createMetrics();
      const providers = httpProviders({
        baseUrl: 'http://127.0.0.1:9',
        timeoutMs: 500,
        log: harness().service.deps.log,
        metrics,
        retryBaseMs: 1,
      });
      await providers.rates.midMarket('USDT', 'NGN').then(
        () => expect.fail('a closed port answered'),
        () => undefined,
      );
      const text = await metrics.registry.metrics();
      // A GET is tried three times (two retries).
      expect(
        sample(text, 'payout_provider_calls_total', { provider: 'rates', outcome: 'network_error' }),
      ).to.equal(3);
    });

    it('is served on METRICS_PORT too, with the same token, and nothing else there', async () => {
      const base = `http://127.0.0.1:${service.metricsPort}`;
      expect((await fetch(`${base}/metrics`)).status).to.equal(401);
      const res = await fetch(`${base}/metrics`, { headers: admin() });
      expect(res.status).to.equal(200);
      expect(await res.text()).to.include('payout_http_requests_total');
      const other = await fetch(`${base}/v1/payouts`, { headers: admin() });
      expect(other.status).to.equal(404);
      expect(((await other.json()) as any).error.code).to.equal('ROUTE_NOT_FOUND');
    });

    it("adds the job threads' metrics to the instance's", async () => {
      const deps = service.deps;
      let workers: RunningWorkers | undefined;
      try {
        // Retention only: the other jobs would take work that other tests leave in the shared database.
        workers = await startWorkers({
          config: deps.config,
          jobs: ['retention'],
          databaseUrl: harness().databaseUrl,
          providersUrl: harness().sandboxUrl,
          callbackBaseUrl: deps.callbackBaseUrl,
          secrets: deps.secrets,
          log: deps.log,
        });
        const threads = await workers.metrics();
        expect(threads).to.have.length(1);
        expect(threads[0]?.map((m) => m.name)).to.include('payout_db_pool_connections_in_use');
        deps.jobs = workers;
        const text = await scrape();
        expect(text.match(/^# TYPE payout_db_pool_connections_in_use gauge$/gm)).to.have.length(1);
        expect(text).to.include('# TYPE payout_process_cpu_seconds_total counter');
      } finally {
        deps.jobs = undefined;
        await workers?.stop();
      }
    });
  });

  describe('logs', () => {
    it('request lines carry the tenant and the error code, and no account number', async () => {
      const account = '0234567891';
      const ok = await api('POST', '/v1/payouts', bankPayout({ destination_account_unique: account }));
      expect(ok.status).to.equal(201);
      const invalid = await api('POST', '/v1/payouts', bankPayout({ destination_amount: -1 }));
      expect(invalid.status).to.equal(400);
      const stranger = await createMerchant();
      const unauthenticated = await api('GET', '/v1/payouts', undefined, 'sk_not_a_key');
      expect(unauthenticated.status).to.equal(401);

      const requests = lines.filter((l) => l.msg === 'request');
      const byId = (id: string) => requests.find((l) => l.request_id === id);
      const created = requests.findLast((l) => l.route === '/v1/payouts' && l.status === 201);
      expect(created).to.include({ tenant_id: merchant.tenantId, method: 'POST' });
      expect(created).to.not.have.property('error_code');
      expect(byId(invalid.body.error.request_id)).to.include({
        tenant_id: merchant.tenantId,
        error_code: 'VALIDATION_FAILED',
        status: 400,
      });
      const refused = byId(unauthenticated.body.error.request_id);
      expect(refused).to.include({ error_code: 'UNAUTHENTICATED', status: 401 });
      expect(refused).to.not.have.property('tenant_id');
      expect(JSON.stringify(lines)).to.not.include(account).and.not.include(stranger.key);
    });

    it("keeps the console's successful reads out of the info-level log, not its refusals", async () => {
      const admin = { authorization: `Bearer ${service.deps.secrets.adminToken}` };
      const read = await get('/trpc/admin.me', admin);
      expect(read.status).to.equal(200);
      const page = await get('/console');
      expect(page.status).to.equal(200);
      const refused = await get('/trpc/admin.me', { authorization: 'Bearer not-a-token' });
      expect(refused.status).to.equal(401);
      const whoami = lines.filter((l) => l.msg === 'request' && l.path === '/trpc/admin.me');
      expect(whoami.map((l) => l.status)).to.deep.equal([401]);
      expect(lines.filter((l) => l.msg === 'request' && l.path === '/console')).to.deep.equal([]);
    });

    it('every payout status change logs one line: id, from, to, reason, tenant', async () => {
      const created = await api('POST', '/v1/payouts', bankPayout());
      expect(created.status).to.equal(201);
      await runInstructionsOnce(service.deps);
      const changes = lines.filter(
        (l) => l.msg === 'payout status changed' && l.payout_id === created.body.id,
      );
      expect(changes).to.have.length(1);
      expect(changes[0]).to.include({
        tenant_id: merchant.tenantId,
        from: 'CREATED',
        to: 'PENDING_PAYMENT',
        triggered_by: 'SYSTEM',
      });
      expect(changes[0]?.reason).to.be.a('string').and.not.be.empty;
    });
  });
});
