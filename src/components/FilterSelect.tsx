import React, { useState } from 'react';
import { SelectableValue } from '@grafana/data';
import { getTemplateSrv } from '@grafana/runtime';
import { MultiSelect } from '@grafana/ui';

import { DataSource } from '../datasource';
import { OptionKind } from '../types';

/** Props of a filter list select. */
export interface FilterSelectProps {
  datasource: DataSource;
  /** What the backend lists as options. */
  kind: OptionKind;
  /** The id of the input, for the field's label. */
  inputId: string;
  values?: string[];
  /** Narrows the options to this cluster (when it is one cluster). */
  cluster?: string;
  width?: number;
  onChange: (values: string[]) => void;
}

const toOption = (value: string): SelectableValue<string> => ({ label: value, value });

/**
 * A multi-value filter. Its options come from the backend (resources/options)
 * when the menu first opens, with the dashboard's template variables first;
 * any value can be typed, so "$user" or a name the backend does not list yet
 * are kept as written.
 */
export function FilterSelect({ datasource, kind, inputId, values, cluster, width, onChange }: FilterSelectProps) {
  const [options, setOptions] = useState<Array<SelectableValue<string>>>([]);
  const [loadedFor, setLoadedFor] = useState<string | undefined>();
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | undefined>();

  const loadOptions = async () => {
    const key = `${kind}\u0000${cluster ?? ''}`;
    if (loadedFor === key || loading) {
      return;
    }
    setLoading(true);
    const variables = getTemplateSrv()
      .getVariables()
      .map((v) => ({ label: `$${v.name}`, value: `$${v.name}`, description: 'Template variable' }));
    try {
      const listed = await datasource.getOptions(kind, cluster);
      setOptions([...variables, ...listed.map(toOption)]);
      setError(undefined);
    } catch (e) {
      setOptions(variables);
      setError(e instanceof Error ? e.message : 'could not load the values');
    } finally {
      setLoadedFor(key);
      setLoading(false);
    }
  };

  return (
    <MultiSelect<string>
      inputId={inputId}
      width={width}
      allowCustomValue
      isClearable
      isLoading={loading}
      options={options}
      value={(values ?? []).map(toOption)}
      placeholder="All"
      noOptionsMessage={error ? `No values: ${error}` : 'No values; type one'}
      onOpenMenu={loadOptions}
      onChange={(items: Array<SelectableValue<string>>) =>
        onChange(items.map((i) => i.value).filter((v): v is string => typeof v === 'string' && v !== ''))
      }
    />
  );
}
