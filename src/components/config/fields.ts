// Hooks that tie one setting of the Jobsight datasource to its field on the
// configuration page, as @grafana/create-plugin's datasource examples do with
// their onChange/onReset handlers: each returns the field's value and what
// the field calls, ready to spread into the input.
import { FormEvent, useCallback } from 'react';
import {
  DataSourceJsonData,
  DataSourcePluginOptionsEditorProps,
  onUpdateDatasourceSecureJsonDataOption,
  updateDatasourcePluginResetOption,
} from '@grafana/data';

import { JobsightOptions, JobsightSecureJsonData } from '../../types';

/** Props Grafana passes to a datasource configuration page. */
export type ConfigEditorProps = DataSourcePluginOptionsEditorProps<JobsightOptions, JobsightSecureJsonData>;

/** Sets one jsonData key; undefined, an empty string or an empty list removes it. */
export type JsonDataSetter = <K extends keyof JobsightOptions>(key: K, value: JobsightOptions[K] | undefined) => void;

/** The plugin's own jsonData keys whose value is free text. */
export type TextKey = {
  [K in Exclude<keyof JobsightOptions, keyof DataSourceJsonData>]-?: string extends NonNullable<JobsightOptions[K]>
    ? K
    : never;
}[Exclude<keyof JobsightOptions, keyof DataSourceJsonData>];

/** The plugin's own jsonData keys whose value is a number. */
export type NumberKey = {
  [K in Exclude<keyof JobsightOptions, keyof DataSourceJsonData>]-?: NonNullable<JobsightOptions[K]> extends number
    ? K
    : never;
}[Exclude<keyof JobsightOptions, keyof DataSourceJsonData>];

/**
 * The setter every field of the page goes through. An emptied field removes
 * its key, so that the backend's default applies rather than an empty value.
 */
export function useJsonDataSetter({ options, onOptionsChange }: ConfigEditorProps): JsonDataSetter {
  return useCallback(
    <K extends keyof JobsightOptions>(key: K, value: JobsightOptions[K] | undefined) => {
      const next = { ...options.jsonData };
      if (value === undefined || value === '' || (Array.isArray(value) && value.length === 0)) {
        delete next[key];
      } else {
        next[key] = value;
      }
      onOptionsChange({ ...options, jsonData: next });
    },
    [options, onOptionsChange]
  );
}

/** A text setting: the value to show ('' when unset) and the input's onChange. */
export function useJsonDataField(props: ConfigEditorProps, key: TextKey) {
  const setJson = useJsonDataSetter(props);
  const onChange = useCallback(
    (e: FormEvent<HTMLInputElement | HTMLTextAreaElement>) => setJson(key, e.currentTarget.value),
    [setJson, key]
  );
  return { value: props.options.jsonData[key] ?? '', onChange };
}

/** A number setting for NumberInput: the value (undefined when unset) and its onCommit. */
export function useJsonDataNumber(props: ConfigEditorProps, key: NumberKey) {
  const setJson = useJsonDataSetter(props);
  const onCommit = useCallback((v: number | undefined) => setJson(key, v), [setJson, key]);
  return { value: props.options.jsonData[key], onCommit };
}

/**
 * A secret for SecretInput: whether Grafana holds one (it never sends it
 * back), what is being typed, onChange into secureJsonData and onReset, which
 * clears the stored secret.
 */
export function useSecureField(props: ConfigEditorProps, key: keyof JobsightSecureJsonData) {
  const { options } = props;
  const onReset = useCallback(() => updateDatasourcePluginResetOption(props, key), [props, key]);
  return {
    isConfigured: Boolean(options.secureJsonFields?.[key]),
    value: options.secureJsonData?.[key] ?? '',
    onChange: onUpdateDatasourceSecureJsonDataOption(props, key),
    onReset,
  };
}
