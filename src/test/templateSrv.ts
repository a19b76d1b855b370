// A stand-in for Grafana's TemplateSrv with the same interpolation rules
// for what the tests use: $name, ${name}, ${name:format} and [[name]];
// a format in the template wins over the one passed; scoped variables win
// over dashboard ones; an unknown variable stays as written; a multi-value
// variable without a format is written as {a,b} (Grafana's glob default).
import { ScopedVars } from '@grafana/data';
import { TemplateSrv } from '@grafana/runtime';

// Grafana's variable pattern (public/app/features/variables/utils.ts).
const VARIABLE = /\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\${(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?}/g;

/** Dashboard variables by name: one value, or several (a multi-value or "All" selection). */
export type Variables = Record<string, string | string[]>;

export function fakeTemplateSrv(variables: Variables): TemplateSrv {
  return {
    getVariables: () =>
      Object.keys(variables).map(
        (name) => ({ name, type: 'custom' } as ReturnType<TemplateSrv['getVariables']>[number])
      ),
    containsTemplate: (target?: string) => Boolean(target && new RegExp(VARIABLE.source).test(target)),
    updateTimeRange: () => {},
    replace(target?: string, scopedVars?: ScopedVars, format?: string | Function): string {
      if (!target) {
        return target ?? '';
      }
      return target.replace(VARIABLE, (match, v1, v2, fmt2, v3, _path, fmt3) => {
        const name: string = v1 || v2 || v3;
        const scoped = scopedVars?.[name];
        const value = scoped ? scoped.value : variables[name];
        if (value === undefined) {
          return match;
        }
        const fmt = fmt2 || fmt3 || format;
        if (typeof fmt === 'function') {
          return fmt(value);
        }
        if (fmt === 'csv') {
          return Array.isArray(value) ? value.join(',') : String(value);
        }
        if (Array.isArray(value)) {
          return value.length === 1 ? String(value[0]) : `{${value.join(',')}}`;
        }
        return String(value);
      });
    },
  };
}
