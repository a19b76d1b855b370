import React from 'react';
import { render, screen } from '@testing-library/react';
import { setTemplateSrv } from '@grafana/runtime';

import { mockDataSource, viewerIdentity } from '../test/datasource';
import { fakeTemplateSrv } from '../test/templateSrv';
import { IdentityResponse } from '../types';
import { identityDetails, identityText, IdentityLine } from './IdentityLine';
import { QueryEditor } from './QueryEditor';

beforeEach(() => {
  setTemplateSrv(fakeTemplateSrv({}));
});

// What whoami.go answers a Viewer whose built-in account is not mapped.
const refusedViewer: IdentityResponse = {
  about: 'you',
  login: 'root',
  role: 'Viewer',
  identitySource: 'idToken',
  fullAccessRoles: ['Admin'],
  allowed: false,
  scope: 'none',
  refusal:
    'your Grafana account "root" (user:9) signed in with password, whose login and email its owner can change, so Jobsight does not map it by name: ask an admin to add it to userIdMap',
  summary: 'Refused: …',
};

describe('IdentityLine', () => {
  it('asks resources/identity once and says whom the viewer is seen as, and why', async () => {
    const { ds, getResource } = mockDataSource({}, { ...viewerIdentity, piAccounts: ['chem'] });
    render(<IdentityLine datasource={ds} />);
    const line = await screen.findByTestId('jobsight-identity');
    expect(line).toHaveTextContent('You are seen as Slurm user alice: your own jobs and every job of chem (PI)');
    expect(getResource).toHaveBeenCalledTimes(1);
    expect(getResource).toHaveBeenCalledWith('identity');
    expect(identityDetails(viewerIdentity)).toBe(
      'By userMapping login ("alice"), trusted because Grafana\'s ID token says the account signed in with ldap (trustedAuthMethods). ' +
        'Grafana user user:7 (uid fe1k2l), signed in with ldap.'
    );
  });

  it('shows a refused Viewer the refusal their queries get', async () => {
    const { ds } = mockDataSource({}, refusedViewer);
    render(<QueryEditor datasource={ds} query={{ refId: 'A', queryType: 'jobs' }} onChange={jest.fn()} onRunQuery={jest.fn()} />);
    const line = await screen.findByTestId('jobsight-identity');
    expect(line).toHaveTextContent(`You are refused: ${refusedViewer.refusal}`);
  });

  it('says when full access comes from the role', () => {
    expect(
      identityText({ about: 'you', role: 'Admin', fullAccessRoles: ['Admin'], allowed: true, source: 'role', scope: 'all', summary: '' })
    ).toBe('You see every job: org role Admin is in fullAccessRoles');
  });

  it('renders what the backend says as text, never as markup', async () => {
    const { ds } = mockDataSource({}, { ...refusedViewer, refusal: '<img src=x onerror="window.__pwned=1">' });
    const { container } = render(<IdentityLine datasource={ds} />);
    expect(await screen.findByTestId('jobsight-identity')).toHaveTextContent('<img src=x');
    expect(container.querySelector('img')).toBeNull();
  });

  it('says when the check itself failed', async () => {
    const { ds, getResource } = mockDataSource({}, viewerIdentity);
    getResource.mockRejectedValueOnce({ status: 500, data: { error: 'plugin unavailable' } });
    render(<IdentityLine datasource={ds} />);
    expect(await screen.findByTestId('jobsight-identity')).toHaveTextContent(
      'Could not check whom you are seen as: plugin unavailable'
    );
  });
});
