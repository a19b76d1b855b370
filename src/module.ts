import { DataSourcePlugin } from '@grafana/data';

import { ConfigEditor } from './components/ConfigEditor';
import { QueryEditor } from './components/QueryEditor';
import { VariableQueryEditor } from './components/VariableQueryEditor';
import { DataSource } from './datasource';
import { JobsightOptions, JobsightQuery } from './types';

export const plugin = new DataSourcePlugin<DataSource, JobsightQuery, JobsightOptions>(DataSource)
  .setConfigEditor(ConfigEditor)
  .setQueryEditor(QueryEditor)
  // Deprecated for CustomVariableSupport, which Grafana 11 to 13 still
  // honour the same way; moving means a new variable editor contract.
  // eslint-disable-next-line @typescript-eslint/no-deprecated
  .setVariableQueryEditor(VariableQueryEditor);
