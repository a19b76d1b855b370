// The template variable's query editor, used as a person would: choosing
// what the variable lists, and optionally the clusters (from the list, a
// dashboard variable, or typed). Each test checks the query and the
// one-line definition the editor handed to Grafana (onChange).
import { EditorsPage, expect, test } from './fixtures';
import type { JobsightVariableQuery } from '../../src/components/VariableQueryEditor';

const KINDS = [
  ['Clusters', 'clusters'],
  ['Users', 'users'],
  ['Accounts', 'accounts'],
  ['Partitions', 'partitions'],
  ['Jobs', 'jobs'],
] as const;

const definition = (editors: EditorsPage) => editors.page.getByTestId('variable-definition');

test.describe('VariableQueryEditor', () => {
  test('each kind of values, then for some clusters', async ({ editors }) => {
    const v = editors.section('variable');
    // Grafana stores an empty string before a variable's query is chosen.
    expect(await editors.json('variable')).toBe('');
    for (const [label, kind] of KINDS) {
      await editors.choose(editors.field(v, 'Values'), label);
      expect(await editors.json<JobsightVariableQuery>('variable')).toEqual({ queryType: 'variable', variable: kind });
      await expect(definition(editors)).toHaveText(label);
      await editors.checkpoint('variable', `${kind} of all clusters`);
    }

    await editors.choose(editors.field(v, 'Cluster'), 'alpha', '$cluster');
    expect(await editors.json('variable')).toEqual({ queryType: 'variable', variable: 'jobs', cluster: ['alpha', '$cluster'] });
    await expect(definition(editors)).toHaveText('Jobs of alpha, $cluster');
    await editors.checkpoint('variable', 'jobs of alpha and $cluster');
    // The cluster list itself is never narrowed.
    expect(await editors.resourceCalls()).toEqual([{ path: 'options', params: { kind: 'clusters' } }]);

    await editors.removeValue(v, 'alpha');
    await editors.removeValue(v, '$cluster');
    expect(await editors.json('variable')).toEqual({ queryType: 'variable', variable: 'jobs' });
    await expect(definition(editors)).toHaveText('Jobs');
    await editors.checkpoint('variable', 'clusters removed again');
  });

  test('a cluster chosen before the kind; a typed cluster', async ({ editors }) => {
    const v = editors.section('variable');
    await editors.choose(editors.field(v, 'Cluster'), 'beta');
    expect(await editors.json('variable')).toEqual({ queryType: 'variable', cluster: ['beta'] });
    await expect(definition(editors)).toHaveText('Jobsight of beta');
    await editors.checkpoint('variable', 'no kind yet', 'variable is required');

    await editors.choose(editors.field(v, 'Values'), 'Users');
    await editors.typeValue(editors.field(v, 'Cluster'), 'gamma"<b>');
    expect(await editors.json('variable')).toEqual({ queryType: 'variable', variable: 'users', cluster: ['beta', 'gamma"<b>'] });
    await expect(definition(editors)).toHaveText('Users of beta, gamma"<b>');
    await editors.checkpoint('variable', 'users of beta and a typed cluster');
  });

  test.describe('editing a stored variable', () => {
    test.use({ init: { variableQuery: { queryType: 'variable', variable: 'partitions', cluster: ['beta'] } } });

    test('shows the stored choice and keeps the clusters when the kind changes', async ({ editors }) => {
      const v = editors.section('variable');
      await expect(v.getByText('Partitions', { exact: true })).toBeVisible();
      await expect(editors.chip(v, 'beta')).toBeVisible();
      await editors.choose(editors.field(v, 'Values'), 'Accounts');
      expect(await editors.json('variable')).toEqual({ queryType: 'variable', variable: 'accounts', cluster: ['beta'] });
      await expect(definition(editors)).toHaveText('Accounts of beta');
      await editors.checkpoint('variable', 'accounts of beta');
    });
  });
});
