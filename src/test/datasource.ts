// A Jobsight DataSource for tests, its backend calls replaced by mocks.
import { DataSource } from '../datasource';
import { IdentityResponse, OptionKind } from '../types';
import { instanceSettings } from './instance';

export { instanceSettings };

/** What resources/identity answers a Viewer mapped by login (pkg/plugin/whoami.go). */
export const viewerIdentity: IdentityResponse = {
  about: 'you',
  login: 'alice',
  role: 'Viewer',
  identitySource: 'idToken',
  fullAccessRoles: ['Admin'],
  allowed: true,
  source: 'idToken',
  authenticatedBy: 'ldap',
  grafanaUserId: 'user:7',
  grafanaUid: 'fe1k2l',
  rule: 'userMapping login ("alice"), trusted because Grafana\'s ID token says the account signed in with ldap (trustedAuthMethods)',
  slurmUser: 'alice',
  scope: 'own',
  summary: 'You are seen as Slurm user alice: your own jobs only.',
};

/**
 * A DataSource whose resources/options route answers from options (per kind;
 * a kind not listed answers with no values) and whose resources/identity
 * route answers identity (without one, it never answers: the editor's
 * identity line stays empty). The returned mock records every getResource
 * call.
 */
export function mockDataSource(options: Partial<Record<OptionKind, string[]>> = {}, identity?: IdentityResponse) {
  const ds = new DataSource(instanceSettings);
  const getResource = jest
    .spyOn(ds, 'getResource')
    .mockImplementation(async (path: string, params?: Record<string, unknown>) => {
      if (path === 'identity') {
        return identity ?? new Promise<never>(() => {});
      }
      if (path !== 'options') {
        throw new Error(`unexpected resource ${path}`);
      }
      return { values: options[params?.kind as OptionKind] ?? [] };
    });
  return { ds, getResource };
}
