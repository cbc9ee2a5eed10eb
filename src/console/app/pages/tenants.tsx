import { type FormEvent, useState } from 'react';
import { api } from '../api.ts';
import { consoleStore, useConsole } from '../store.ts';
import { ClickAction, Failure, Id, MoreButton, Outcome, useAction, useCan, usePages } from '../ui.tsx';

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

function RevokeKey() {
  const [keyId, setKeyId] = useState('');
  const action = useAction('revoke-key', 'Revoke key', (id: string) =>
    api.admin.key.revoke.mutate({ key_id: id }),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (keyId.trim()) action.mutate(keyId.trim());
  };
  return (
    <form className="inline" onSubmit={submit}>
      <label>
        Revoke a key by its id{' '}
        <input value={keyId} onChange={(e) => setKeyId(e.target.value)} placeholder="key id" required />
      </label>
      <button type="submit" className="action">
        Revoke
      </button>
      <Outcome pending={action.pending} done="Revoked: the key stops working at once" />
    </form>
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
          <RevokeKey />
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
            <tr key={t.id} data-tenant={t.id}>
              <td>{t.name}</td>
              <td>
                <Id id={t.id} />
              </td>
              <td>{t.payouts_approved ? 'approved' : 'not approved'}</td>
              <td className="actions">
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
          ))}
        </tbody>
      </table>
      <MoreButton {...list} />
    </main>
  );
}
