// A Jobsight DataSource for tests, its backend calls replaced by mocks.
import { DataSource } from '../datasource';
import { OptionKind } from '../types';
import { instanceSettings } from './instance';

export { instanceSettings };

/**
 * A DataSource whose resources/options route answers from options (per kind;
 * a kind not listed answers with no values). The returned mock records every
 * getResource call.
 */
export function mockDataSource(options: Partial<Record<OptionKind, string[]>> = {}) {
  const ds = new DataSource(instanceSettings);
  const getResource = jest
    .spyOn(ds, 'getResource')
    .mockImplementation(async (path: string, params?: Record<string, unknown>) => {
      if (path !== 'options') {
        throw new Error(`unexpected resource ${path}`);
      }
      return { values: options[params?.kind as OptionKind] ?? [] };
    });
  return { ds, getResource };
}
