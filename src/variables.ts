// Template variables: interpolating a query's fields before it goes to the
// backend, and turning the backend's variable frame into variable values.
import { DataFrame, MetricFindValue, ScopedVars } from '@grafana/data';
import { TemplateSrv } from '@grafana/runtime';

import { FilterKey, JobsightQuery } from './types';

/** The list fields of a query whose elements may hold multi-value variables. */
const LIST_KEYS: Array<FilterKey | 'resources' | 'node'> = [
  'cluster',
  'user',
  'account',
  'partition',
  'state',
  'class',
  'resources',
  'node',
];

/** The single-string fields of a query that are interpolated as plain text. */
const STRING_KEYS = ['name', 'jobId', 'sortBy', 'groupBy', 'variable', 'series'] as const;

// Marks where a variable's values were put into an element. Filter values
// cannot contain NUL (the backend rejects control characters), and
// JSON.stringify escapes it inside the values, so a marker in the output is
// always one of ours.
const MARK = '\u0000';

/**
 * Interpolates one list element. A variable's value (one, several, or all of
 * them) is put in by a format function as a JSON array between markers, so
 * that no value is ever parsed as text: `a"b|c` stays one element. An element
 * that is just "$user" becomes one element per value; text around a
 * multi-value variable is repeated for each value ("gpu-$site" with a, b →
 * gpu-a, gpu-b). Elements that become empty are dropped (an empty variable
 * filters nothing).
 */
export function expandElement(element: string, scopedVars: ScopedVars, templateSrv: TemplateSrv): string[] {
  if (element.includes(MARK)) {
    // Not ours to split; the backend rejects it with a message naming it.
    return [templateSrv.replace(element, scopedVars)];
  }
  const marked = templateSrv.replace(element, scopedVars, (value: unknown) => {
    const values = Array.isArray(value) ? value : [value];
    return MARK + JSON.stringify(values.map((v) => (v === null || v === undefined ? '' : String(v)))) + MARK;
  });
  if (!marked.includes(MARK)) {
    return marked === '' ? [] : [marked];
  }
  // Even parts are literal text, odd parts the JSON arrays of values.
  let results = [''];
  marked.split(MARK).forEach((part, i) => {
    if (i % 2 === 0) {
      results = results.map((r) => r + part);
    } else {
      const values: string[] = JSON.parse(part);
      results = results.flatMap((r) => values.map((v) => r + v));
    }
  });
  return results.filter((r) => r !== '');
}

/**
 * The custom "All" value of the shipped dashboards' multi-value variables
 * (".*": Prometheus queries on the same variables read it as "any"; no
 * Slurm name is ".*").
 * A list in which a variable stands at All filters nothing: the whole list
 * is dropped, instead of sending every value the variable lists (which
 * would leave out jobs whose value it does not list, e.g. an empty
 * account, and break past the backend's 100 values per filter).
 */
export const ALL_VALUE = '.*';

/** Interpolates a list: every element, multi-value variables expanded, duplicates dropped. */
export function expandList(list: string[], scopedVars: ScopedVars, templateSrv: TemplateSrv): string[] {
  const out: string[] = [];
  for (const element of list) {
    const values = expandElement(element, scopedVars, templateSrv);
    if (values.includes(ALL_VALUE)) {
      return [];
    }
    for (const value of values) {
      if (!out.includes(value)) {
        out.push(value);
      }
    }
  }
  return out;
}

/**
 * Returns the query with every string field interpolated: list fields element
 * by element with multi-value variables expanded into several elements, the
 * other strings as plain text (Grafana's default formatting).
 */
export function interpolateQuery(
  query: JobsightQuery,
  scopedVars: ScopedVars,
  templateSrv: TemplateSrv
): JobsightQuery {
  const out: Record<string, unknown> = { ...query };
  for (const key of LIST_KEYS) {
    const list = query[key];
    if (Array.isArray(list)) {
      out[key] = expandList(list, scopedVars, templateSrv);
    }
  }
  for (const key of STRING_KEYS) {
    const value = query[key];
    if (typeof value === 'string' && value !== '') {
      out[key] = templateSrv.replace(value, scopedVars);
    }
  }
  // The keys and their types are those of query; only the strings changed.
  return out as unknown as JobsightQuery;
}

/**
 * Maps the backend's variable frames (string fields "text" and "value") to
 * variable values. A frame without a "value" field uses the text as value;
 * one without "text" uses its first string field for both.
 */
export function framesToMetricFindValues(frames: DataFrame[]): MetricFindValue[] {
  const out: MetricFindValue[] = [];
  for (const frame of frames) {
    const byName = (name: string) => frame.fields.find((f) => f.name.toLowerCase() === name);
    const text = byName('text') ?? frame.fields.find((f) => f.type === 'string');
    if (!text) {
      continue;
    }
    const value = byName('value') ?? text;
    const texts = Array.from(text.values as ArrayLike<unknown>);
    const values = Array.from(value.values as ArrayLike<unknown>);
    texts.forEach((t, i) => {
      out.push({ text: String(t ?? ''), value: String(values[i] ?? t ?? '') });
    });
  }
  return out;
}
