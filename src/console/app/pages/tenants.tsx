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
                <td>{k.revoked_at ? <Time at={k.revoked_at} /> : <span className="muted">active</span>}</td>
                <td className="actions">
                  {canManage && !k.revoked_at ? (
                    <ClickAction
                      actionKey={`revoke-key:${k.id}`}
                      label="Revoke"
                      done="Revoked: the key stops working at once"
                      run={() => api.admin.key.revoke.mutate({ key_id: k.id })}
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

function CreateTenant() {
  const [name, setName] = useState('');
  const action = useAction('create-tenant', 'Create tenant', (n: string) =>
    api.admin.tenant.create.mutate({ name: n, approved: false }),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (name.trim()) action.mutate(name.trim());
  };
  return (
    <form className="inline" onSubmit={submit}>
      <label>
        New tenant{' '}
        <input value={name} onChange={(e) => setName(e.target.value)} placeholder="name" required />
      </label>
      <button type="submit" className="action">
        Create
      </button>
      <Outcome pending={action.pending} done="Created (not yet approved for payouts)" />
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
                  <td colSpan={4}>
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
