import { type FormEvent, Fragment, useState } from 'react';
import { api } from '../api.ts';
import { consoleStore, useConsole } from '../store.ts';
import { ClickAction, Failure, Id, MoreButton, Outcome, Time, useAction, useCan, usePages } from '../ui.tsx';

/** Tenants, their approval for payouts, and their API keys (a new key is shown once, here). */

function IssuedKey() {
  const issued = useConsole((c) => c.issuedKey);
  if (!issued) return null;
  return (
    <div className="issued" role="status" data-testid="issued-key">
      <p>
        New API key for tenant <Id id={issued.tenant_id} /> (key <Id id={issued.id} />
        ). Copy it now: it is shown once and never again.
      </p>
      <code className="secret">{issued.api_key}</code>
      <button type="button" className="link" onClick={() => consoleStore.trigger.keyDismissed()}>
        I have copied it
      </button>
    </div>
  );
}

/** A tenant's keys, newest first (never the key itself), each revocable by an operator. */
function TenantKeys({ tenantId }: { tenantId: string }) {
  const canManage = useCan('operator');
  const keys = usePages(['admin.key.list', tenantId], (cursor) =>
    api.admin.key.list.query({ tenant_id: tenantId, limit: 20, cursor }),
  );
  return (
    <div className="keys" data-testid="keys">
      <Failure error={keys.error} />
      {keys.isSuccess && keys.rows.length === 0 ? <p className="muted">No API keys yet.</p> : null}
      {keys.rows.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th>Key</th>
              <th>Id</th>
              <th>Scopes</th>
              <th>Issued</th>
              <th>Revoked</th>
              <th>Actions</th>
            </tr>
          </thead>
          <tbody>
            {keys.rows.map((k) => (
              <tr key={k.id} data-key={k.id}>
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>
                  <Id id={k.id} />
                </td>
                <td>{k.scopes.join(', ')}</td>
                <td>
                  <Time at={k.created_at} />
                </td>
                <td>
                  {k.revoked_at ? <Time at={k.revoked_at} /> : <span className="muted">not revoked</span>}
                </td>
                <td className="actions">
                  {canManage && !k.revoked_at ? (
                    <ClickAction
                      actionKey={`revoke-key:${k.id}`}
                      label="Revoke"
                      done="Revoked: the key stopped working"
                      confirm={{
                        question: `Revoke key ${k.prefix}…? It stops working at once, for good.`,
                        yes: 'Yes, revoke it',
                      }}
                      run={async () => {
                        await api.admin.key.revoke.mutate({ key_id: k.id });
                        consoleStore.trigger.keyRevoked({ id: k.id });
                      }}
                    />
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <MoreButton {...keys} />
    </div>
  );
}

const POLICIES = ['allow', 'hold', 'refuse'] as const;
type Policy = (typeof POLICIES)[number];
const POLICY_WORDS: Record<Policy, string> = {
  allow: 'allow: pay it',
  hold: 'hold: for an operator',
  refuse: 'refuse: at creation',
};

function CreateTenant() {
  const [name, setName] = useState('');
  const [approved, setApproved] = useState(false);
  const [policy, setPolicy] = useState<Policy>('allow');
  // The form clears once the tenant exists, before its outcome shows; a refusal (a name taken)
  // keeps what was typed.
  const action = useAction(
    'create-tenant',
    'Create tenant',
    async (input: { name: string; approved: boolean; policy: Policy }) => {
      const created = await api.admin.tenant.create.mutate({
        name: input.name,
        approved: input.approved,
        payee_name_policy: input.policy,
      });
      setName('');
      setApproved(false);
      setPolicy('allow');
      return created;
    },
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (name.trim()) action.mutate({ name: name.trim(), approved, policy });
  };
  return (
    <form className="inline" onSubmit={submit} data-testid="create-tenant">
      <label>
        New tenant{' '}
        <input
          name="tenant-name"
          value={name}
          onChange={(e) => setName(e.target.value)}
          placeholder="name"
          required
        />
      </label>
      <label>
        <input type="checkbox" checked={approved} onChange={(e) => setApproved(e.target.checked)} /> approved
        for payouts (KYC/KYB done)
      </label>
      <label>
        Payee name mismatch{' '}
        <select value={policy} onChange={(e) => setPolicy(e.target.value as Policy)}>
          {POLICIES.map((p) => (
            <option key={p} value={p}>
              {POLICY_WORDS[p]}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" className="action">
        Create
      </button>
      <Outcome
        pending={action.pending}
        done={
          action.variables?.approved
            ? 'Created, approved for payouts'
            : 'Created (not yet approved for payouts)'
        }
      />
    </form>
  );
}

/** A tenant's payee name policy (`tenant payee-policy`), changed by an operator. */
function PayeePolicy({ tenantId, policy }: { tenantId: string; policy: Policy }) {
  const canManage = useCan('operator');
  const [chosen, setChosen] = useState<Policy>(policy);
  const action = useAction(`payee-policy:${tenantId}`, 'Set payee policy', (p: Policy) =>
    api.admin.payees.setPolicy.mutate({ tenant_id: tenantId, policy: p }),
  );
  if (!canManage) return <>{POLICY_WORDS[policy]}</>;
  return (
    <form
      className="inline"
      onSubmit={(e) => {
        e.preventDefault();
        if (chosen !== policy) action.mutate(chosen);
      }}
    >
      <select
        aria-label="Payee name policy"
        value={chosen}
        onChange={(e) => setChosen(e.target.value as Policy)}
      >
        {POLICIES.map((p) => (
          <option key={p} value={p}>
            {POLICY_WORDS[p]}
          </option>
        ))}
      </select>
      {chosen !== policy ? (
        <button type="submit" className="action" disabled={action.isPending}>
          Set
        </button>
      ) : null}
      <Outcome pending={action.pending} done="Set" />
    </form>
  );
}

export function TenantsPage() {
  const canManage = useCan('operator');
  const [shown, setShown] = useState<string | null>(null);
  const list = usePages(['admin.tenant.list'], (cursor) =>
    api.admin.tenant.list.query({ limit: 20, cursor }),
  );
  return (
    <main className="page tenants">
      <h1>Tenants and keys</h1>
      <p className="lead">Every change here is recorded in the audit trail with your name.</p>
      <IssuedKey />
      {canManage ? (
        <div className="tools">
          <CreateTenant />
        </div>
      ) : null}
      <Failure error={list.error} />
      <table>
        <thead>
          <tr>
            <th>Tenant</th>
            <th>Id</th>
            <th>Payouts</th>
            <th>Payee name mismatch</th>
            <th>Actions</th>
          </tr>
        </thead>
        <tbody>
          {list.rows.map((t) => (
            <Fragment key={t.id}>
              <tr data-tenant={t.id}>
                <td>{t.name}</td>
                <td>
                  <Id id={t.id} />
                </td>
                <td>{t.payouts_approved ? 'approved' : 'not approved'}</td>
                <td>
                  <PayeePolicy tenantId={t.id} policy={t.payee_name_policy} />
                </td>
                <td className="actions">
                  <button
                    type="button"
                    className="link"
                    aria-expanded={shown === t.id}
                    onClick={() => setShown(shown === t.id ? null : t.id)}
                  >
                    {shown === t.id ? 'Hide keys' : 'Keys'}
                  </button>
                  {canManage && !t.payouts_approved ? (
                    <ClickAction
                      actionKey={`approve-tenant:${t.id}`}
                      label="Approve for payouts"
                      done="Approved"
                      run={() => api.admin.tenant.approve.mutate({ tenant_id: t.id })}
                    />
                  ) : null}
                  {canManage ? (
                    <ClickAction
                      actionKey={`issue-key:${t.id}`}
                      label="Issue API key"
                      done="Key issued: shown above, once"
                      run={async () => {
                        const key = await api.admin.key.issue.mutate({ tenant_id: t.id });
                        consoleStore.trigger.keyIssued({
                          key: { tenant_id: t.id, id: key.id, api_key: key.api_key },
                        });
                      }}
                    />
                  ) : null}
                </td>
              </tr>
              {shown === t.id ? (
                <tr data-keys-of={t.id}>
                  <td colSpan={5}>
                    <TenantKeys tenantId={t.id} />
                  </td>
                </tr>
              ) : null}
            </Fragment>
          ))}
        </tbody>
      </table>
      <MoreButton {...list} />
    </main>
  );
}
