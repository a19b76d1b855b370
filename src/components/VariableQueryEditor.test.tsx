import React, { useState } from 'react';
import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { setTemplateSrv } from '@grafana/runtime';

import { mockDataSource } from '../test/datasource';
import { fakeTemplateSrv } from '../test/templateSrv';
import { describeVariableQuery, JobsightVariableQuery, VariableQueryEditor } from './VariableQueryEditor';

let user: ReturnType<typeof userEvent.setup>;

beforeEach(() => {
  setTemplateSrv(fakeTemplateSrv({ cluster: 'alpha' }));
  user = userEvent.setup({ delay: null });
});

/** Renders the editor with a stored query (a string for a variable made before one was chosen). */
function setup(initial: JobsightVariableQuery | string) {
  const { ds, getResource } = mockDataSource({ clusters: ['alpha', 'beta'] });
  const onChange = jest.fn();
  function Harness() {
    const [query, setQuery] = useState(initial);
    return (
      <VariableQueryEditor
        datasource={ds}
        query={query}
        onChange={(q, definition) => {
          onChange(q, definition);
          setQuery(q);
        }}
      />
    );
  }
  render(<Harness />);
  return { onChange, getResource };
}

describe('VariableQueryEditor', () => {
  it('starts from an empty stored query and chooses what to list', async () => {
    const { onChange } = setup('');
    await user.click(screen.getByLabelText('Values'));
    await user.click(await screen.findByText('Partitions'));
    expect(onChange).toHaveBeenLastCalledWith({ queryType: 'variable', variable: 'partitions' }, 'Partitions');
  });

  it('narrows to clusters from the backend or a variable', async () => {
    const { onChange, getResource } = setup({ queryType: 'variable', variable: 'users' });
    await user.click(screen.getByLabelText('Cluster'));
    await user.click(await screen.findByText('beta'));
    expect(getResource).toHaveBeenCalledWith('options', { kind: 'clusters' });
    expect(onChange).toHaveBeenLastCalledWith(
      { queryType: 'variable', variable: 'users', cluster: ['beta'] },
      'Users of beta'
    );
    await user.click(screen.getByLabelText('Cluster'));
    await user.click(await screen.findByText('$cluster'));
    expect(onChange).toHaveBeenLastCalledWith(
      { queryType: 'variable', variable: 'users', cluster: ['beta', '$cluster'] },
      'Users of beta, $cluster'
    );
  });

  it('shows the stored query', () => {
    setup({ queryType: 'variable', variable: 'jobs', cluster: ['alpha'] });
    expect(screen.getByText('Jobs')).toBeInTheDocument();
    expect(screen.getByText('alpha')).toBeInTheDocument();
  });
});

describe('describeVariableQuery', () => {
  it('names the kind and the clusters', () => {
    expect(describeVariableQuery({ variable: 'accounts' })).toBe('Accounts');
    expect(describeVariableQuery({ variable: 'jobs', cluster: ['a', 'b'] })).toBe('Jobs of a, b');
    expect(describeVariableQuery({})).toBe('Jobsight');
  });
});
