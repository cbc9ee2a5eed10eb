import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { REPO_ROOT } from '#src/docs/generate.ts';
import { packClient, packRouter } from '#src/docs/pack.ts';
import { createMerchant, uniqueName } from '../client.ts';
import { harness } from '../harness.ts';
import { deliverFor, receiversClosedAfterEach } from '../webhooks/receiver.ts';

const run = promisify(execFile);
const TSC = path.join(REPO_ROOT, 'node_modules/.bin/tsc');

/** One of the project's own packages, by a `file:` link: installed without the network. */
const linked = (name: string) => `file:${path.join(REPO_ROOT, 'node_modules', name)}`;

/**
 * A new package as a merchant or a tool would start one: `package.json`, the tsconfig.json that
 * `tsc --init` writes, the tarball installed with npm (offline: everything it needs is local),
 * and `main.ts`. Type-checks it with the project's tsc; `npm` and `tsc` fail the test on error.
 */
async function scratchPackage(options: {
  tarball: string;
  dependencies: Record<string, string>;
  main: string;
}): Promise<{ dir: string; tsc: () => Promise<string>; node: (...args: string[]) => Promise<string> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'payout-package-'));
  await writeFile(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: 'scratch', private: true, type: 'module', dependencies: options.dependencies }),
  );
  await run(TSC, ['--init'], { cwd: dir });
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', options.tarball], { cwd: dir });
  await writeFile(path.join(dir, 'main.ts'), options.main);
  return {
    dir,
    tsc: async () =>
      (await run(TSC, ['-p', '.', '--noEmit'], { cwd: dir }).catch((e: { stdout: string }) => e)).stdout,
    node: async (...args) => (await run(process.execPath, ['main.ts', ...args], { cwd: dir })).stdout,
  };
}

describe('the packages other programs install (npm run client:pack)', function () {
  this.timeout(180_000);
  const dirs: string[] = [];
  let client: string;
  let router: string;
  const receiver = receiversClosedAfterEach();

  before(async () => {
    const out = await mkdtemp(path.join(os.tmpdir(), 'payout-tarballs-'));
    dirs.push(out);
    [client, router] = await Promise.all([packClient('0.0.0-test', out), packRouter('0.0.0-test', out)]);
  });

  after(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('the merchant client: installs, type-checks under a default tsconfig, calls the service and verifies a webhook', async () => {
    const merchant = await createMerchant({ name: uniqueName('Packaged client merchant') });
    const endpoint = await receiver();
    const scratch = await scratchPackage({
      tarball: client,
      dependencies: {},
      // No Node types: a default tsconfig.json (types: []) has none; what Node gives is declared.
      main: `import { PayoutApiError, PayoutClient, verifyWebhook } from '@payout-service/client';

declare const process: { argv: string[]; env: Record<string, string | undefined> };
const [mode, arg] = process.argv.slice(2);
if (mode === 'call') {
  const api = new PayoutClient({ baseUrl: process.env.SERVICE_URL!, apiKey: process.env.API_KEY! });
  const banks = await api.listBanks({ country: 'NG', currency: 'NGN', destination_type: 'BANK_ACCOUNT' });
  const { signing_secret } = await api.setWebhookConfig({ webhook_url: process.env.WEBHOOK_URL! });
  const sent = await api.sendWebhookTest();
  const missing = await api.getPayout('00000000-0000-4000-8000-000000000000').catch((e: unknown) => e);
  const code = missing instanceof PayoutApiError && missing.is('PAYOUT_NOT_FOUND') ? missing.code : null;
  console.log(JSON.stringify({ banks: banks.map((b) => b.provider_code), secret: signing_secret, event: sent.event_id, code }));
} else {
  const delivery = JSON.parse(arg!) as { body: string; headers: Record<string, string>; secret: string; now: number };
  const rawBody = new TextEncoder().encode(delivery.body);
  const result = verifyWebhook({ rawBody, headers: delivery.headers, secret: delivery.secret, now: delivery.now });
  console.log(JSON.stringify(result.ok ? { ok: true, type: result.event.event_type, id: result.event.event_id } : result));
}
`,
    });
    dirs.push(scratch.dir);
    expect(await scratch.tsc(), 'tsc in the scratch package').to.equal('');
    const called = JSON.parse(
      await run(process.execPath, ['main.ts', 'call'], {
        cwd: scratch.dir,
        env: {
          ...process.env,
          SERVICE_URL: harness().url,
          API_KEY: merchant.key,
          WEBHOOK_URL: `${endpoint.url}/hooks`,
        },
      }).then((r) => r.stdout),
    ) as { banks: string[]; secret: string; event: string; code: string | null };
    expect(called.banks).to.include('058');
    expect(called.code).to.equal('PAYOUT_NOT_FOUND');

    await deliverFor([merchant]);
    const [delivery] = endpoint.received;
    expect(delivery, 'the webhook.test delivery').to.not.equal(undefined);
    const now = Math.floor(harness().clock.now().getTime() / 1000);
    const verify = async (secret: string) => {
      const given = { body: delivery!.body.toString('utf8'), headers: delivery!.headers, secret, now };
      return JSON.parse(await scratch.node('verify', JSON.stringify(given))) as Record<string, unknown>;
    };
    expect(await verify(called.secret)).to.deep.equal({ ok: true, type: 'webhook.test', id: called.event });
    expect(await verify(`${called.secret}x`)).to.deep.equal({ ok: false, reason: 'signature_mismatch' });
  });

  it("the router's types: install beside @trpc/client, type-check under a default tsconfig, and call the service", async () => {
    const scratch = await scratchPackage({
      tarball: router,
      dependencies: {
        '@trpc/client': linked('@trpc/client'),
        '@trpc/server': linked('@trpc/server'),
        typescript: linked('typescript'),
      },
      main: `import { createTRPCClient, httpLink } from '@trpc/client';
import type { AppRouter } from '@payout-service/router';

declare const process: { argv: string[] };
const [url, token] = process.argv.slice(2);
const trpc = createTRPCClient<AppRouter>({
  links: [httpLink({ url: url!, headers: { authorization: \`Bearer \${token}\` } })],
});
const me: { id: string; name: string; role: string } = await trpc.admin.me.query();
const held = await trpc.admin.refunds.held.query({ limit: 20 });
console.log(JSON.stringify({ me, held: held.data.length >= 0 }));
`,
    });
    dirs.push(scratch.dir);
    expect(await scratch.tsc(), 'tsc in the scratch package').to.equal('');
    const out = JSON.parse(
      await scratch.node(`${harness().url}/trpc`, harness().service.deps.secrets.adminToken),
    ) as { me: { name: string; role: string }; held: boolean };
    expect(out.me).to.include({ name: 'root', role: 'admin' });
    expect(out.held).to.equal(true);
  });

  it('the router package fails to type-check a call to a procedure that does not exist', async () => {
    const scratch = await scratchPackage({
      tarball: router,
      dependencies: { '@trpc/client': linked('@trpc/client'), '@trpc/server': linked('@trpc/server') },
      main: `import { createTRPCClient, httpLink } from '@trpc/client';
import type { AppRouter } from '@payout-service/router';
const trpc = createTRPCClient<AppRouter>({ links: [httpLink({ url: 'http://127.0.0.1/trpc' })] });
export const nope = trpc.admin.noSuchProcedure.query();
`,
    });
    dirs.push(scratch.dir);
    expect(await scratch.tsc()).to.include("Property 'noSuchProcedure' does not exist");
  });
});
