import React, { useEffect, useState } from 'react';
import { Icon, InlineFieldRow, InlineLabel } from '@grafana/ui';

import { DataSource } from '../datasource';
import { IdentityResponse } from '../types';

/** The identity line in one sentence: whom the backend sees, or why it refuses. */
export function identityText(id: IdentityResponse): string {
  if (!id.allowed) {
    return `You are refused: ${id.refusal ?? id.summary ?? 'no reason given'}`;
  }
  if (id.scope === 'all') {
    return id.source === 'alertEngine'
      ? 'Seen as Grafana’s alert engine: every job'
      : `You see every job: org role ${id.role ?? ''} is in fullAccessRoles`;
  }
  const pi = id.piAccounts?.length ? ` and every job of ${id.piAccounts.join(', ')} (PI)` : '';
  return `You are seen as Slurm user ${id.slurmUser ?? ''}: your own jobs${pi}`;
}

/** Why, for the tooltip: the rule and the claims it used. */
export function identityDetails(id: IdentityResponse): string {
  const parts: string[] = [];
  if (id.rule) {
    parts.push(`By ${id.rule}.`);
  }
  if (id.source === 'idToken') {
    const how = id.authenticatedBy ? id.authenticatedBy : 'Grafana’s own login';
    parts.push(`Grafana user ${id.grafanaUserId ?? '?'}${id.grafanaUid ? ` (uid ${id.grafanaUid})` : ''}, signed in with ${how}.`);
  } else if (id.source === 'userHeaders') {
    parts.push('From the login and email Grafana passes (identitySource unverifiedLogin).');
  }
  return parts.join(' ');
}

/** A failed request's message (Grafana's FetchError carries the backend's JSON). */
function errorText(err: unknown): string {
  const e = err as { data?: { error?: unknown; message?: unknown }; message?: unknown } | undefined;
  const msg = e?.data?.error ?? e?.data?.message ?? e?.message;
  return typeof msg === 'string' && msg ? msg : 'no answer';
}

type State = { id: IdentityResponse } | { error: string } | undefined;

/**
 * "You are seen as …": whom the backend maps the signed-in user to
 * (resources/identity), shown in the query editor so that a viewer, or an
 * admin testing as one, sees at once whether their queries will be refused
 * and why. Text only: nothing the backend says is rendered as markup.
 */
export function IdentityLine({ datasource }: { datasource: DataSource }) {
  const [state, setState] = useState<State>(undefined);
  useEffect(() => {
    let live = true;
    datasource.getIdentity().then(
      (id) => live && setState(id && typeof id === 'object' ? { id } : { error: 'no answer' }),
      (err: unknown) => live && setState({ error: errorText(err) })
    );
    return () => {
      live = false;
    };
  }, [datasource]);
  if (!state) {
    return null;
  }
  const refused = 'error' in state || !state.id.allowed;
  const text = 'error' in state ? `Could not check whom you are seen as: ${state.error}` : identityText(state.id);
  const details = 'error' in state ? undefined : identityDetails(state.id);
  return (
    <InlineFieldRow>
      <InlineLabel width={14} tooltip={details || undefined}>
        Seen as
      </InlineLabel>
      <span
        className="gf-form-label"
        role="status"
        data-testid="jobsight-identity"
        style={{ flexGrow: 1, whiteSpace: 'normal', height: 'auto' }}
      >
        <Icon name={refused ? 'exclamation-triangle' : 'user'} style={{ marginRight: 8 }} />
        {text}
      </span>
    </InlineFieldRow>
  );
}
