import { type FormEvent, useState } from 'react';
import { ROLES, type Role } from '../../../operators/roles.ts';
import { api } from '../api.ts';
import { consoleStore, useConsole } from '../store.ts';
import {
  ClickAction,
  Failure,
  Id,
  MoreButton,
  Outcome,
  Time,
  useAction,
  useCan,
  useOperatorId,
  usePages,
} from '../ui.tsx';
import { PendingProposals } from './approvals.tsx';

/**
 * Operators (`operator list|create|role|revoke` of the CLI): who works in operations, with which
 * role. Admins create them (the token shown once, here), change roles and revoke them. Raising
 * someone to approver or admin, once two admins exist, is a proposal another admin approves; while
 * one admin exists it is immediate (how a deployment starts). Lowering and revoking are immediate.
 */

function IssuedToken() {
  const issued = useConsole((c) => c.issuedToken);
  if (!issued) return null;
  return (
    <div className="issued" role="status" data-testid="issued-token">
      <p>
        Token of the new operator {issued.name} (<Id id={issued.id} />, now {issued.role}
        {issued.raisedTo ? `; raising to ${issued.raisedTo} waits for another admin's approval` : ''}
        ). Give it to them now: it is shown once and never again.
      </p>
      <code className="secret">{issued.token}</code>
      <button type="button" className="link" onClick={() => consoleStore.trigger.tokenDismissed()}>
        I have passed it on
      </button>
    </div>
  );
}

function CreateOperator() {
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('operator');
  // The token shows and the form clears once the operator exists, before the outcome shows.
  const action = useAction(
    'create-operator',
    'Create operator',
    async (input: { name: string; role: Role }) => {
      const created = await api.admin.operators.create.mutate(input);
      setName('');
      consoleStore.trigger.tokenIssued({
        token: {
          id: created.id,
          name: created.name,
          role: created.role,
          token: created.token,
          raisedTo: created.approval ? input.role : null,
        },
      });
      return created;
    },
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (name.trim()) action.mutate({ name: name.trim(), role });
  };
  return (
    <form className="inline" onSubmit={submit} data-testid="create-operator">
      <label>
        New operator{' '}
        <input
          name="operator-name"
          value={name}
          onChange={(e) => setName(e.target.value)}
          placeholder="name"
          required
        />
      </label>
      <label>
        Role{' '}
        <select name="operator-role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
          {ROLES.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" className="action">
        Create
      </button>
      <Outcome pending={action.pending} done="Created: its token is shown above, once" />
    </form>
  );
}

/** An admin's role change of one operator: lowering at once, raising maybe a proposal. */
function ChangeRole({ operator }: { operator: { id: string; name: string; role: Role } }) {
  const [role, setRole] = useState<Role>(operator.role);
  const action = useAction(`role:${operator.id}`, 'Change role', (r: Role) =>
    api.admin.operators.role.mutate({ operator_id: operator.id, role: r }),
  );
  const done =
    action.data?.approval && action.data.approval.state === 'PENDING'
      ? `Proposed: another admin approves raising ${operator.name} to ${role}`
      : 'Role changed';
  return (
    <form
      className="inline role-change"
      onSubmit={(e) => {
        e.preventDefault();
        if (role !== operator.role) action.mutate(role);
      }}
    >
      <select
        aria-label={`New role of ${operator.name}`}
        value={role}
        onChange={(e) => setRole(e.target.value as Role)}
      >
        {ROLES.map((r) => (
          <option key={r} value={r}>
            {r}
          </option>
        ))}
      </select>
      <button type="submit" className="action" disabled={role === operator.role || action.isPending}>
        Change role
      </button>
      <Outcome pending={action.pending} done={done} />
    </form>
  );
}

export function OperatorsPage() {
  const isAdmin = useCan('admin');
  const me = useOperatorId();
  const [activeOnly, setActiveOnly] = useState(true);
  const list = usePages(['admin.operators.list', activeOnly], (cursor) =>
    api.admin.operators.list.query({ ...(activeOnly ? { active: true } : {}), limit: 50, cursor }),
  );
  const pending = usePages(['admin.approvals.list', 'roles'], (cursor) =>
    api.admin.approvals.list.query({ state: 'PENDING', action: 'operator.role', limit: 50, cursor }),
  );
  return (
    <main className="page operators">
      <h1>Operators</h1>
      <p className="lead">
        Everyone who works in operations, with their role: viewers read, operators propose and manage tenants,
        approvers also decide others' proposals, admins also manage operators and approval rules. While only
        one admin exists, it creates operators alone; from the second admin on, making someone an approver or
        admin needs another admin's approval. Lowering a role and revoking are immediate.
      </p>
      <IssuedToken />
      {isAdmin ? (
        <div className="tools">
          <CreateOperator />
        </div>
      ) : null}
      <label className="filter">
        <input type="checkbox" checked={activeOnly} onChange={(e) => setActiveOnly(e.target.checked)} /> Only
        operators not revoked
      </label>
      <Failure error={list.error} />
      <table data-testid="operators">
        <thead>
          <tr>
            <th>Operator</th>
            <th>Role</th>
            <th>Id</th>
            <th>Created (UTC)</th>
            <th>Revoked (UTC)</th>
            <th>Actions</th>
          </tr>
        </thead>
        <tbody>
          {list.rows.map((o) => (
            <tr key={o.id} data-operator={o.id}>
              <td>
                {o.name}
                {o.id === me ? <span className="muted"> (you)</span> : null}
              </td>
              <td>{o.role}</td>
              <td>
                <Id id={o.id} />
              </td>
              <td>
                <Time at={o.created_at} />
              </td>
              <td>
                {o.revoked_at ? <Time at={o.revoked_at} /> : <span className="muted">not revoked</span>}
              </td>
              <td className="actions">
                {isAdmin && !o.revoked_at && o.token_prefix !== null && o.id !== me ? (
                  <>
                    <ChangeRole operator={o} />{' '}
                    <ClickAction
                      actionKey={`revoke-operator:${o.id}`}
                      label="Revoke"
                      done="Revoked: the token stopped working"
                      confirm={{
                        question: `Revoke ${o.name}? Their token stops working at once, for good.`,
                        yes: 'Yes, revoke',
                      }}
                      run={() => api.admin.operators.revoke.mutate({ operator_id: o.id })}
                    />
                  </>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <MoreButton {...list} />
      <PendingProposals
        queue="role-proposals"
        title="Role raises waiting for a second admin"
        pending={pending}
      />
    </main>
  );
}
