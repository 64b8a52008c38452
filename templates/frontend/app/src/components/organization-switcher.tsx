'use client';

import { useState } from 'react';
import { useOrganizations } from './organization-provider';

/** Chooses the organization the app works in, or creates a new one (you become its owner). */
export function OrganizationSwitcher() {
  const { organizations, active, choose, create } = useOrganizations();
  const [creating, setCreating] = useState(false);
  const [error, setError] = useState<string>();

  if (creating) {
    return (
      <form
        className="row"
        style={{ margin: 0 }}
        onSubmit={async (event) => {
          event.preventDefault();
          const name = String(new FormData(event.currentTarget).get('name'));
          try {
            await create(name);
            setCreating(false);
            setError(undefined);
          } catch (failure) {
            setError(failure instanceof Error ? failure.message : String(failure));
          }
        }}
      >
        <input name="name" aria-label="New organization name" placeholder="Organization name" minLength={2} required autoFocus />
        <button type="submit">Create</button>
        <button type="button" className="quiet" onClick={() => setCreating(false)}>
          Cancel
        </button>
        {error && <span className="error">{error}</span>}
      </form>
    );
  }
  return (
    // Shrinks at a phone's width: a long organization name is cut in the closed select, never wider than the screen.
    <label style={{ display: 'flex', alignItems: 'center', gap: '0.5rem', minWidth: 0, maxWidth: '100%' }}>
      Organization
      <select
        aria-label="Organization"
        style={{ minWidth: 0 }}
        value={active?.id ?? ''}
        onChange={(event) => (event.target.value === 'new' ? setCreating(true) : choose(event.target.value))}
      >
        {organizations.map((organization) => (
          <option key={organization.id} value={organization.id}>
            {organization.name} ({organization.role})
          </option>
        ))}
        <option value="new">+ New organization…</option>
      </select>
    </label>
  );
}
