// FAKES. No Grafana server and no Jobsight backend run behind this page
// (DESIGN.md: "Grafana: no server here, by rule"). What Grafana and the
// plugin backend would provide is stood in for here, and every stand-in is
// named as such:
//   - the datasource is the plugin's real DataSource class (src/datasource.ts)
//     whose getResource, the one call that would reach the backend through
//     Grafana, is replaced by a FAKE answering fixed option lists;
//   - Grafana's BackendSrv is a FAKE that answers nothing and records any
//     call (no editor should make one);
//   - Grafana's TemplateSrv is the stand-in the jest tests use
//     (src/test/templateSrv.ts) with a few dashboard variables.
import { DataSourceInstanceSettings } from '@grafana/data';
import { BackendSrv } from '@grafana/runtime';

import { DataSource } from '../../../src/datasource';
import { instanceSettings as baseSettings } from '../../../src/test/instance';
import { IdentityResponse, JobsightOptions, OptionKind, OptionsResponse } from '../../../src/types';
import { OptionLists, ResourceCall } from './protocol';

/** The instance settings Grafana would give the datasource (a FAKE instance: nothing behind it). */
export const instanceSettings: DataSourceInstanceSettings<JobsightOptions> = {
  ...baseSettings,
  name: 'Jobsight (fake: no backend)',
};

/** How long the FAKE backend takes to answer, so the editors' loading states run as they would. */
const ANSWER_DELAY_MS = 40;

/**
 * A FAKE Jobsight datasource: the real DataSource (its getOptions narrowing
 * and all) with getResource answering from lists instead of the backend's
 * resources/options route. Every call is appended to calls.
 */
export function fakeDataSource(lists: OptionLists, calls: ResourceCall[]): DataSource {
  const ds = new DataSource(instanceSettings);
  const getResource = async (path: string, params?: Record<string, unknown>): Promise<OptionsResponse> => {
    calls.push({ path, params: { ...(params ?? {}) } });
    await new Promise((resolve) => setTimeout(resolve, ANSWER_DELAY_MS));
    if (path !== 'options') {
      throw new Error(`fake datasource: no resource ${path} (only options)`);
    }
    const kind = params?.kind as OptionKind;
    const cluster = typeof params?.cluster === 'string' ? params.cluster : undefined;
    // Narrowed to a cluster: that cluster's list where it has one, the
    // general list for kinds not per cluster (states, classes), nothing for
    // a cluster the backend does not know.
    const forCluster = cluster !== undefined ? lists.byCluster?.[cluster] : undefined;
    if (cluster !== undefined && lists.byCluster && !forCluster) {
      return { values: [] };
    }
    return { values: forCluster?.[kind] ?? lists.all[kind] ?? [] };
  };
  ds.getResource = getResource as DataSource['getResource'];
  // The identity line's question (resources/identity) is answered by a
  // FAKE of its own and not recorded with the option lists' calls.
  ds.getIdentity = async () => FAKE_IDENTITY;
  return ds;
}

/** A FAKE answer of resources/identity: a Viewer mapped by login (pkg/plugin/whoami.go). */
const FAKE_IDENTITY: IdentityResponse = {
  about: 'you',
  login: 'alice',
  role: 'Viewer',
  identitySource: 'idToken',
  fullAccessRoles: ['Admin'],
  allowed: true,
  source: 'idToken',
  authenticatedBy: 'ldap',
  rule: 'userMapping login ("alice") (fake: no backend)',
  slurmUser: 'alice',
  scope: 'own',
  summary: 'You are seen as Slurm user alice: your own jobs only.',
};

/**
 * A FAKE BackendSrv: no Grafana server answers here. Any method called is
 * recorded in unexpected and fails, so a spec notices an editor that talks
 * to Grafana behind the datasource's back.
 */
export function fakeBackendSrv(unexpected: string[]): BackendSrv {
  return new Proxy({} as BackendSrv, {
    get(_target, name) {
      if (typeof name !== 'string' || name === 'then') {
        return undefined;
      }
      return (...args: unknown[]) => {
        const what = `backendSrv.${name}(${JSON.stringify(args[0] ?? '')})`;
        unexpected.push(what);
        throw new Error(`fake backendSrv: no Grafana server in this page (${what})`);
      };
    },
  });
}
