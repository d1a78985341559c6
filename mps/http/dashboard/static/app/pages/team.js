// Team: the members and their roles (a role changed, a member removed), the invitations (invite
// by email with a role, revoke one still open) and the roles with their scopes (custom ones
// created, edited and deleted; built-in ones read-only). Every change needs team:write; nobody can give the owner role here (ownership moves only by a transfer),
// and the server refuses a role wider than the member's own. The owner alone may make another
// member the owner, becoming an admin.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { FilterSelect, Filters } from '../filters.js';
import { dateTime } from '../format.js';
import { Saved, typed, useAction } from '../forms.js';
import { setQuery, useQuery } from '../router.js';
import { session } from '../session.js';
import { PagedTable, Table } from '../table.js';
import { ActionButton, Card, count, ErrorNote, Loading, Status, useLoad } from '../ui.js';

const OWNER = 'role_owner';
const INVITATION_STATUSES = ['PENDING', 'ACCEPTED', 'REJECTED', 'REVOKED', 'EXPIRED'];
const PAGE_SIZE = 20;

/** The roles a member may be given: every one but the owner's. */
function grantable(roles) {
  return roles.filter((r) => r.id !== OWNER);
}

function RoleChange({ person, roles, changed }) {
  const [roleId, setRoleId] = useState(person.roleId);
  const [saved, setSaved] = useState(false);
  const { busy, error, submit } = useAction();
  const save = submit(async () => {
    setSaved(false);
    await api.patch(`/team/members/${encodeURIComponent(person.id)}`, { roleId });
    setSaved(true);
    changed();
  });
  return html`<form class="inline" onSubmit=${save}>
    <label>
      <span class="visually-hidden">Role of ${person.email}</span>
      <select
        id=${`role-${person.id}`}
        value=${roleId}
        onChange=${(e) => {
          setRoleId(e.currentTarget.value);
          setSaved(false);
        }}
      >
        ${grantable(roles).map((r) => html`<option value=${r.id}>${r.name}</option>`)}
      </select>
    </label>
    <button
      type="submit"
      class="secondary"
      id=${`save-role-${person.id}`}
      disabled=${busy || roleId === person.roleId}
    >
      Change role
    </button>
    <${Saved} when=${saved} className="muted small" id=${`role-saved-${person.id}`} />
    <${ErrorNote} error=${error} />
  </form>`;
}

function Members({ member, roles, rolesChanged }) {
  const people = useLoad(() => api.get('/team/members'), []);
  // Each role shows how many members hold it: a member's change changes those counts.
  const changed = () => {
    people.reload();
    rolesChanged();
  };
  const canWrite = member.scopes.includes('team:write');
  // Only the owner hands ownership on (decisions 9), by the transfer route.
  const owner = member.role.id === OWNER;
  // The owner's role moves only by a transfer, and a member does not remove themselves here.
  const changeable = (p) => canWrite && p.roleId !== OWNER && p.id !== member.user.id;
  const transfer = (p) => async () => {
    await api.post('/team/transfer-ownership', { userId: p.id });
    // This member's own role changed: what the dashboard shows them follows.
    session.setMember(await api.get('/auth/me'));
    people.reload();
  };
  const remove = (p) => async () => {
    await api.delete(`/team/members/${encodeURIComponent(p.id)}`);
    changed();
  };
  const columns = [
    {
      title: 'Email',
      cell: (p) =>
        html`${p.email}${p.id === member.user.id && html` <span class="muted small">(you)</span>`}`,
    },
    { title: 'Name', cell: (p) => p.name || '' },
    {
      title: 'Role',
      className: 'role-cell',
      cell: (p) =>
        changeable(p) && roles
          ? html`<${RoleChange} person=${p} roles=${roles} changed=${changed} />`
          : html`<span class="role-name">${p.roleName || p.roleId}</span>`,
    },
    { title: 'Joined', cell: (p) => dateTime(p.joinedAt) },
    canWrite && {
      title: 'Actions',
      hidden: true,
      cell: (p) => html`${
        owner &&
        p.id !== member.user.id &&
        html`<${ActionButton}
          id=${`transfer-${p.id}`}
          inRow
          tone="danger"
          text="Make owner"
          question=${`Make ${p.email} the owner? You become an admin.`}
          yes="Yes, transfer"
          act=${transfer(p)}
        />`
      }
      ${
        changeable(p) &&
        html`<${ActionButton}
          id=${`remove-${p.id}`}
          inRow
          tone="danger"
          text="Remove"
          question=${`Remove ${p.email}? Their sessions end at once.`}
          yes="Yes, remove"
          act=${remove(p)}
        />`
      }`,
    },
  ];
  return html`<${Card} title="Members" id="members">
    <${ErrorNote} error=${people.error} />
    ${people.loading && html`<${Loading} what="Loading members" />`}
    ${
      people.data &&
      html`<${Table}
        id="members-table"
        label="Members"
        columns=${columns}
        rows=${people.data.data}
        rowProps=${(p) => ({ 'data-id': p.id, 'data-email': p.email })}
      />`
    }
  <//>`;
}

function Invite({ roles, done }) {
  const choices = grantable(roles);
  const [email, setEmail] = useState('');
  // The narrowest built-in role first: a wider one is a choice made on purpose.
  const first = choices.some((r) => r.id === 'role_viewer') ? 'role_viewer' : choices[0].id;
  const [roleId, setRoleId] = useState(first);
  const [sent, setSent] = useState(null);
  const { busy, error, submit } = useAction();
  const invite = submit(async () => {
    setSent(null);
    setSent(await api.post('/team/invitations', { email: email.trim(), roleId }));
    setEmail('');
    done();
  });
  return html`<form class="row" id="invite" aria-label="Invite a teammate" onSubmit=${invite}>
    <label>
      Email
      <input
        id="invite-email"
        type="email"
        required
        value=${email}
        onInput=${typed(setEmail)}
      />
    </label>
    <label>
      Role
      <select id="invite-role" value=${roleId} onChange=${typed(setRoleId)}>
        ${choices.map((r) => html`<option value=${r.id}>${r.name}</option>`)}
      </select>
    </label>
    <button type="submit" id="invite-submit" disabled=${busy}>Send invitation</button>
    ${sent &&
    html`<p role="status" id="invite-sent" class="grow">
      ${sent.emailStatus === 'FAILED'
        ? `The invitation to ${sent.email} was made, but its email could not be sent ` +
          `(${sent.emailError || 'unknown reason'}). Invite again to send a new link.`
        : `Invitation sent to ${sent.email}. The link in the email is valid for 7 days.`}
    </p>`}
    <${ErrorNote} error=${error} />
  </form>`;
}

function Invitations({ member, roles }) {
  const { invitations: status, invitationsCursor: cursor } = useQuery(
    'invitations',
    'invitationsCursor',
  );
  const canWrite = member.scopes.includes('team:write');
  const page = useLoad(
    () => api.get('/team/invitations', { status, cursor, limit: PAGE_SIZE }),
    [status, cursor],
  );
  const roleName = (id) => {
    const found = (roles || []).find((r) => r.id === id);
    return found ? found.name : id;
  };
  const revoke = (i) => async () => {
    await api.post(`/team/invitations/${encodeURIComponent(i.id)}/revoke`);
    page.reload();
  };
  const columns = [
    { title: 'Email', cell: (i) => i.email },
    { title: 'Role', cell: (i) => roleName(i.roleId) },
    {
      title: 'Status',
      cell: (i) => html`<${Status} status=${i.status} />
        ${i.emailStatus === 'FAILED' && html`<div class="muted small">Email not sent</div>`}`,
    },
    { title: 'Sent', cell: (i) => dateTime(i.createdAt) },
    { title: 'Expires', cell: (i) => dateTime(i.expiresAt) },
    canWrite && {
      title: 'Actions',
      hidden: true,
      cell: (i) =>
        i.status === 'PENDING' &&
        html`<${ActionButton}
          id=${`revoke-${i.id}`}
          inRow
          tone="danger"
          text="Revoke"
          question=${`Withdraw the invitation to ${i.email}?`}
          yes="Yes, revoke"
          act=${revoke(i)}
        />`,
    },
  ];
  return html`<${Card} title="Invitations" id="invitations">
    ${canWrite && roles && html`<${Invite} roles=${roles} done=${page.reload} />`}
    <${Filters} label="Invitation filters">
      <${FilterSelect}
        name="Status"
        value=${status}
        options=${INVITATION_STATUSES}
        param="invitations"
        cursorParam="invitationsCursor"
      />
    <//>
    <${PagedTable}
      page=${page}
      param="invitationsCursor"
      prefix="invitations-"
      what="Loading invitations"
      id="invitations-table"
      label="Invitations"
      columns=${columns}
      rowProps=${(i) => ({ 'data-id': i.id, 'data-email': i.email })}
      empty="No invitations match."
    />
  <//>`;
}

/** ["payouts:read", "payouts:write", "team:read"] -> "payouts (read, write) · team (read)". */
function scopeSummary(scopes) {
  const byResource = new Map();
  for (const scope of scopes) {
    const [resource, access] = scope.split(':');
    byResource.set(resource, [...(byResource.get(resource) || []), access]);
  }
  return [...byResource].map(([resource, access]) => `${resource} (${access.join(', ')})`).join(' · ');
}

/** The scope's id part for element ids: "payments:read" -> "payments-read". */
const scopeKey = (scope) => scope.replace(':', '-');

/**
 * The form that creates a custom role (`role` absent) or changes one: its name and its scopes,
 * one checkbox per scope grouped by resource. A scope the member's own role lacks is shown but
 * cannot be ticked: the server refuses a role wider than its maker's.
 */
function RoleForm({ role, scopes, member, saved, close }) {
  const key = role ? role.id : 'new';
  const [name, setName] = useState(role ? role.name : '');
  const [chosen, setChosen] = useState(new Set(role ? role.scopes : []));
  // A saved form closes: it stays busy till then.
  const { busy, error, submit } = useAction({ once: true });
  const byResource = new Map();
  for (const scope of scopes) {
    const [resource] = scope.split(':');
    byResource.set(resource, [...(byResource.get(resource) || []), scope]);
  }
  const toggle = (scope) => {
    const next = new Set(chosen);
    if (next.has(scope)) next.delete(scope);
    else next.add(scope);
    setChosen(next);
  };
  const save = submit(async () => {
    const body = { name: name.trim(), scopes: [...chosen].sort() };
    saved(
      role
        ? await api.patch(`/team/roles/${encodeURIComponent(role.id)}`, body)
        : await api.post('/team/roles', body),
    );
  });
  return html`<form
    class="role-form"
    id=${`role-form-${key}`}
    aria-label=${role ? `Edit the role ${role.name}` : 'New custom role'}
    onSubmit=${save}
  >
    <label>
      Name
      <input
        id=${`role-name-${key}`}
        required
        maxlength="100"
        value=${name}
        onInput=${typed(setName)}
      />
    </label>
    <fieldset class="role-scopes">
      <legend>Scopes</legend>
      ${[...byResource].map(
        ([resource, held]) => html`<div class="role-scope-group">
          <span class="role-resource">${resource}</span>
          ${held.map((scope) => {
            const allowed = member.scopes.includes(scope);
            return html`<label class=${allowed ? 'check' : 'check muted'}>
              <input
                type="checkbox"
                id=${`role-scope-${key}-${scopeKey(scope)}`}
                value=${scope}
                checked=${chosen.has(scope)}
                disabled=${!allowed && !chosen.has(scope)}
                title=${allowed ? '' : 'Your own role does not hold this scope'}
                onChange=${() => toggle(scope)}
              />
              ${scope.split(':')[1]}
            </label>`;
          })}
        </div>`,
      )}
    </fieldset>
    <div class="row">
      <button type="submit" id=${`role-save-${key}`} disabled=${busy}>
        ${role ? 'Save role' : 'Create role'}
      </button>
      <button type="button" class="secondary" id=${`role-cancel-${key}`} onClick=${close}>
        Cancel
      </button>
    </div>
    <${ErrorNote} error=${error} />
  </form>`;
}

/**
 * The roles with their scopes. Built-in roles are read-only; a member with team:write creates,
 * edits and deletes custom ones. The form open is kept in the URL (`role`: `new` or a role id),
 * so a reload shows it again.
 */
function Roles({ member, roles, error, changed }) {
  const { role: editing } = useQuery('role');
  const canWrite = member.scopes.includes('team:write');
  const scopes = useLoad(
    () =>
      canWrite
        ? api.get('/team/roles/scopes').then((p) => p.data.map((s) => s.scope))
        : Promise.resolve([]),
    [canWrite],
  );
  const [notice, setNotice] = useState(null);
  const close = () => setQuery({ role: '' });
  const saved = (verb) => (role) => {
    setNotice(`Role ${role.name} ${verb}.`);
    close();
    changed();
  };
  const form = (role) =>
    scopes.data &&
    html`<${RoleForm}
      role=${role}
      scopes=${scopes.data}
      member=${member}
      saved=${saved(role ? 'saved' : 'created')}
      close=${close}
    />`;
  return html`<${Card} title="Roles" id="roles">
    <${ErrorNote} error=${error || scopes.error} />
    ${notice && html`<p role="status" class="notice" id="role-notice">${notice}</p>`}
    ${!roles && !error && html`<${Loading} />`}
    ${canWrite &&
    editing !== 'new' &&
    html`<div class="actions">
      <button
        type="button"
        class="secondary"
        id="role-new"
        onClick=${() => {
          setNotice(null);
          setQuery({ role: 'new' });
        }}
      >
        New custom role
      </button>
    </div>`}
    ${canWrite && editing === 'new' && form(null)}
    ${roles &&
    html`<ul class="roles" id="roles-list">
      ${roles.map(
        (r) => html`<li data-id=${r.id} data-builtin=${r.builtin ? 'true' : 'false'}>
          <strong class="role-title">${r.name}</strong>
          <span class="muted small">
            ${` · ${r.builtin ? 'built-in' : 'custom'} · ${count(r.memberCount ?? 0, 'member')}`}
          </span>
          ${canWrite &&
          !r.builtin &&
          editing !== r.id &&
          html`<span class="role-actions">
            <button
              type="button"
              class="secondary"
              id=${`role-edit-${r.id}`}
              onClick=${() => {
                setNotice(null);
                setQuery({ role: r.id });
              }}
            >
              Edit
            </button>
            <${ActionButton}
              id=${`role-delete-${r.id}`}
              inRow
              tone="danger"
              text="Delete"
              question=${`Delete the role ${r.name}?`}
              yes="Yes, delete"
              act=${async () => {
                await api.delete(`/team/roles/${encodeURIComponent(r.id)}`);
                setNotice(`Role ${r.name} deleted.`);
                changed();
              }}
            />
          </span>`}
          <div class="small scopes">${scopeSummary(r.scopes) || 'No scopes'}</div>
          ${canWrite && !r.builtin && editing === r.id && form(r)}
        </li>`,
      )}
    </ul>`}
  <//>`;
}

export function Team({ member }) {
  const roles = useLoad(() => api.get('/team/roles').then((p) => p.data), []);
  return html`<h1>Team</h1>
    <div class="actions">
      <a class="button-link" href="/dashboard/approvals" id="to-approvals">Approvals</a>
      ${member.scopes.includes('audit:read') &&
      html`<a class="button-link" href="/dashboard/audit" id="to-audit">Audit trail</a>`}
    </div>
    <${Members} member=${member} roles=${roles.data} rolesChanged=${roles.reload} />
    <${Invitations} member=${member} roles=${roles.data} />
    <${Roles}
      member=${member}
      roles=${roles.data}
      error=${roles.error}
      changed=${roles.reload}
    />`;
}
